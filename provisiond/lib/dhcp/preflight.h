// `provisionctl preflight` (also run when provisiond starts with an
// interface): is this machine ready to serve a boot network?
#pragma once

#include <string>
#include <vector>

#include "base/netinfo.h"
#include "config.h"

namespace prov {

struct PreflightCheck {
  std::string name;
  bool ok = true;
  bool fatal = false;  // provisiond does not start when a fatal check fails
  std::string detail;
};

struct PreflightOptions {
  int enrolled_nodes = 0;
  // Probe for other DHCP servers (sends one DHCPDISCOVER on the interface).
  bool probe_dhcp = true;
  // dnsmasq (in many home routers) pings an address for up to 3 s before it
  // offers it: wait longer than that.
  int probe_ms = 4000;
  // Our own dnsmasq's address: its answers are not "another server".
  std::string own_address;
  // Check that the DHCP and TFTP ports are free (before our dnsmasq runs).
  bool check_ports = true;
};

std::vector<PreflightCheck> RunPreflight(const Config& config, const PreflightOptions& options);

// The range to lease in full mode: dhcp.range, or the upper half of the
// interface's subnet without the interface's own address.
Status EffectiveRange(const Config& config, const InterfaceAddress& iface, std::string& first,
                      std::string& last);

// A DHCP server that answered a probe.
struct DhcpServerSeen {
  std::string address;
  // It offered no address (yiaddr 0.0.0.0), only boot information: a proxy
  // DHCP server (another PXE service), not one that leases.
  bool proxy = false;
  std::string offered;  // the address it offered, when not a proxy
};

// Sends a DHCPDISCOVER on `interface` and returns the servers that offered
// within `wait_ms` (other than `ignore` and the interface's own addresses),
// by address.
Result<std::vector<DhcpServerSeen>> ProbeDhcpServers(const std::string& interface, int wait_ms,
                                                     const std::string& ignore);

}  // namespace prov
