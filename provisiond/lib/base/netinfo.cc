#include "base/netinfo.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <unistd.h>

#include <memory>

namespace prov {

Result<uint32_t> ParseIpv4(const std::string& text) {
  in_addr a{};
  if (inet_pton(AF_INET, text.c_str(), &a) != 1)
    return Status::Invalid("'" + text + "' is not an IPv4 address");
  return ntohl(a.s_addr);
}

std::string FormatIpv4(uint32_t host_order) {
  in_addr a{};
  a.s_addr = htonl(host_order);
  char buf[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &a, buf, sizeof buf);
  return buf;
}

std::string InterfaceAddress::network() const {
  return FormatIpv4(address_host & netmask_host);
}
std::string InterfaceAddress::netmask() const {
  return FormatIpv4(netmask_host);
}
bool InterfaceAddress::Contains(uint32_t a) const {
  return (a & netmask_host) == (address_host & netmask_host);
}

bool HasRoutableIpv6(const std::string& name) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return false;
  std::unique_ptr<ifaddrs, decltype(&freeifaddrs)> owner(list, &freeifaddrs);
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET6 || name != i->ifa_name) continue;
    const auto* a = &reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr;
    if (!IN6_IS_ADDR_LINKLOCAL(a)) return true;
  }
  return false;
}

Result<InterfaceAddress> LookupInterface(const std::string& name) {
  if (if_nametoindex(name.c_str()) == 0)
    return Status::NotFound("interface '" + name + "' does not exist on this machine");
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return Status::Internal("getifaddrs failed");
  std::unique_ptr<ifaddrs, decltype(&freeifaddrs)> owner(list, &freeifaddrs);
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || name != i->ifa_name) continue;
    InterfaceAddress out;
    out.name = name;
    out.address_host = ntohl(reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr);
    out.netmask_host =
        i->ifa_netmask ? ntohl(reinterpret_cast<sockaddr_in*>(i->ifa_netmask)->sin_addr.s_addr) : 0;
    out.address = FormatIpv4(out.address_host);
    out.prefix = __builtin_popcount(out.netmask_host);
    return out;
  }
  return Status::NotFound("interface '" + name + "' has no IPv4 address");
}

std::string HostName() {
  char host[256] = "";
  if (::gethostname(host, sizeof host - 1) != 0) return "";
  return host;
}

}  // namespace prov
