#include "base/netinfo.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
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

Result<InterfaceAddress> LookupInterface(const std::string& name, const std::string& address) {
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
    if (!address.empty() && FormatIpv4(out.address_host) != address) continue;
    out.netmask_host =
        i->ifa_netmask ? ntohl(reinterpret_cast<sockaddr_in*>(i->ifa_netmask)->sin_addr.s_addr) : 0;
    out.address = FormatIpv4(out.address_host);
    out.prefix = __builtin_popcount(out.netmask_host);
    return out;
  }
  return Status::NotFound("interface '" + name + "' has no IPv4 address" +
                          (address.empty() ? "" : " " + address));
}

Status SendGratuitousArp(const std::string& name, const std::string& ipv4) {
  auto ip = ParseIpv4(ipv4);
  if (!ip.ok()) return ip.status();
  const unsigned index = if_nametoindex(name.c_str());
  if (index == 0) return Status::NotFound("interface '" + name + "' does not exist");
  const int fd = socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC, htons(ETH_P_ARP));
  if (fd < 0) return Status::Internal("gratuitous ARP on " + name + ": " + strerror(errno));
  std::unique_ptr<int, void (*)(int*)> closer(new int(fd), [](int* f) {
    close(*f);
    delete f;
  });
  ifreq req{};
  snprintf(req.ifr_name, sizeof req.ifr_name, "%s", name.c_str());
  if (ioctl(fd, SIOCGIFHWADDR, &req) != 0)
    return Status::Internal("gratuitous ARP on " + name + ": no hardware address");
  // RFC 5227's announcement: an ARP request for our own address.
  struct {
    uint16_t htype, ptype;
    uint8_t hlen, plen;
    uint16_t oper;
    uint8_t sha[6], spa[4], tha[6], tpa[4];
  } __attribute__((packed)) arp{};
  arp.htype = htons(ARPHRD_ETHER);
  arp.ptype = htons(ETH_P_IP);
  arp.hlen = 6;
  arp.plen = 4;
  arp.oper = htons(ARPOP_REQUEST);
  memcpy(arp.sha, req.ifr_hwaddr.sa_data, 6);
  const uint32_t net = htonl(*ip);
  memcpy(arp.spa, &net, 4);
  memcpy(arp.tpa, &net, 4);
  sockaddr_ll to{};
  to.sll_family = AF_PACKET;
  to.sll_protocol = htons(ETH_P_ARP);
  to.sll_ifindex = static_cast<int>(index);
  to.sll_halen = 6;
  memset(to.sll_addr, 0xff, 6);
  if (sendto(fd, &arp, sizeof arp, 0, reinterpret_cast<sockaddr*>(&to), sizeof to) < 0)
    return Status::Internal("gratuitous ARP on " + name + ": " + strerror(errno));
  return Status::Ok();
}

std::string HostName() {
  char host[256] = "";
  if (::gethostname(host, sizeof host - 1) != 0) return "";
  return host;
}

}  // namespace prov
