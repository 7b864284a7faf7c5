// Facts about this machine's network: an interface's IPv4 address and
// subnet, address arithmetic, and whether a port is free.
#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"

namespace prov {

struct InterfaceAddress {
  std::string name;
  std::string address;        // 10.99.0.1
  int prefix = 0;             // 24
  uint32_t address_host = 0;  // host byte order
  uint32_t netmask_host = 0;

  std::string network() const;  // 10.99.0.0
  std::string netmask() const;  // 255.255.255.0
  bool Contains(uint32_t host_order_address) const;
};

// The first IPv4 address of `name`, or `address` when given (the cluster
// address of several control nodes, ha/cluster_address.h); NotFound when the
// interface does not exist or has no such address (the message says which).
Result<InterfaceAddress> LookupInterface(const std::string& name, const std::string& address = "");

// Announces that `ipv4` is at `name`'s hardware address: one gratuitous ARP
// request (sender and target both `ipv4`) broadcast on `name`, so the
// neighbours' ARP caches follow an address that moved. Needs CAP_NET_RAW.
Status SendGratuitousArp(const std::string& name, const std::string& ipv4);

// True when `name` has an IPv6 address other than link-local (needed for
// dnsmasq's router advertisements).
bool HasRoutableIpv6(const std::string& name);

Result<uint32_t> ParseIpv4(const std::string& text);  // host byte order
std::string FormatIpv4(uint32_t host_order);

// This machine's host name; "" when it has none.
std::string HostName();

}  // namespace prov
