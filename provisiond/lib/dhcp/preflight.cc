#include "dhcp/preflight.h"

#include <ifaddrs.h>

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "base/file_util.h"
#include "base/unique_fd.h"
#include "store/boot_stage.h"

namespace prov {

Status EffectiveRange(const Config& config, const InterfaceAddress& iface, std::string& first,
                      std::string& last) {
  if (!config.dhcp_range_first.empty()) {
    first = config.dhcp_range_first;
    last = config.dhcp_range_last;
    return Status::Ok();
  }
  uint32_t net = iface.address_host & iface.netmask_host;
  uint32_t size = ~iface.netmask_host + 1;
  if (size < 8) return Status::Invalid("the subnet of " + iface.name + " is too small for DHCP");
  uint32_t lo = net + size / 2, hi = net + size - 2;
  if (iface.address_host >= lo && iface.address_host <= hi) {
    // Keep our own address out: take the lower half instead.
    lo = net + 1;
    hi = net + size / 2 - 1;
  }
  first = FormatIpv4(lo);
  last = FormatIpv4(hi);
  return Status::Ok();
}

Result<std::vector<DhcpServerSeen>> ProbeDhcpServers(const std::string& interface, int wait_ms,
                                                     const std::string& ignore) {
  std::set<std::string> own;
  if (ifaddrs* list = nullptr; getifaddrs(&list) == 0) {
    for (ifaddrs* a = list; a; a = a->ifa_next)
      if (a->ifa_addr && a->ifa_addr->sa_family == AF_INET && a->ifa_name == interface)
        own.insert(
            FormatIpv4(ntohl(reinterpret_cast<const sockaddr_in*>(a->ifa_addr)->sin_addr.s_addr)));
    freeifaddrs(list);
  }
  UniqueFd sock(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!sock.valid()) return Status::Internal("socket: " + std::string(strerror(errno)));
  const int fd = sock.get();
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  setsockopt(fd, SOL_SOCKET, SO_BROADCAST, &one, sizeof one);
  if (setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, interface.c_str(),
                 static_cast<socklen_t>(interface.size())) != 0)
    return Status::Internal("cannot bind to " + interface + ": " + strerror(errno));
  sockaddr_in me{};
  me.sin_family = AF_INET;
  me.sin_port = htons(68);
  if (bind(fd, reinterpret_cast<sockaddr*>(&me), sizeof me) != 0)
    return Status::Error(Code::kUnavailable,
                         "cannot listen on UDP port 68 of " + interface + ": " + strerror(errno));
  // A minimal DHCPDISCOVER from a made-up, locally administered MAC.
  unsigned char p[300] = {0};
  p[0] = 1;  // BOOTREQUEST
  p[1] = 1;  // Ethernet
  p[2] = 6;
  uint32_t xid = 0x70726f76;  // "prov"
  memcpy(p + 4, &xid, 4);
  p[10] = 0x80;  // broadcast flag
  const unsigned char mac[6] = {0x02, 0x70, 0x72, 0x6f, 0x76, 0x01};
  memcpy(p + 28, mac, 6);
  const unsigned char cookie[4] = {99, 130, 83, 99};
  memcpy(p + 236, cookie, 4);
  size_t o = 240;
  p[o++] = 53, p[o++] = 1, p[o++] = 1;  // DHCPDISCOVER
  p[o++] = 255;
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(67);
  to.sin_addr.s_addr = htonl(INADDR_BROADCAST);
  if (sendto(fd, p, sizeof p, 0, reinterpret_cast<sockaddr*>(&to), sizeof to) < 0)
    return Status::Error(Code::kUnavailable,
                         "cannot send a DHCP probe: " + std::string(strerror(errno)));
  std::map<std::string, DhcpServerSeen> servers;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) break;
    pollfd pfd{fd, POLLIN, 0};
    if (poll(&pfd, 1, static_cast<int>(left)) <= 0) continue;
    unsigned char r[1500];
    sockaddr_in from{};
    socklen_t len = sizeof from;
    ssize_t n = recvfrom(fd, r, sizeof r, 0, reinterpret_cast<sockaddr*>(&from), &len);
    if (n < 244 || r[0] != 2 || memcmp(r + 4, &xid, 4) != 0) continue;
    std::string server = FormatIpv4(ntohl(from.sin_addr.s_addr));
    uint32_t yiaddr = 0;
    memcpy(&yiaddr, r + 16, 4);
    // Option 54 names the server more reliably than the source address.
    for (size_t i = 240; i + 1 < static_cast<size_t>(n) && r[i] != 255;) {
      if (r[i] == 0) {
        ++i;
        continue;
      }
      size_t l = r[i + 1];
      if (r[i] == 54 && l == 4 && i + 6 <= static_cast<size_t>(n)) {
        uint32_t a;
        memcpy(&a, r + i + 2, 4);
        server = FormatIpv4(ntohl(a));
      }
      i += 2 + l;
    }
    // Ours: `ignore`, or any address of this interface (a control node's
    // dnsmasq answers from its own address, not the cluster address beside it).
    if (server == ignore || own.count(server)) continue;
    DhcpServerSeen& seen = servers[server];
    seen.address = server;
    seen.proxy = yiaddr == 0;
    if (yiaddr != 0) seen.offered = FormatIpv4(ntohl(yiaddr));
  }
  std::vector<DhcpServerSeen> out;
  for (auto& [address, seen] : servers) out.push_back(std::move(seen));
  return out;
}

namespace {
// Whether UDP `port` can be bound on `interface` (what dnsmasq will do).
std::string UdpPortBusy(const std::string& interface, int port) {
  UniqueFd sock(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!sock.valid()) return std::string("socket: ") + strerror(errno);
  const int fd = sock.get();
  setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, interface.c_str(),
             static_cast<socklen_t>(interface.size()));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  std::string busy;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) busy = strerror(errno);
  return busy;
}
}  // namespace

std::vector<PreflightCheck> RunPreflight(const Config& config, const PreflightOptions& options) {
  std::vector<PreflightCheck> checks;
  auto add = [&](std::string name, bool ok, bool fatal, std::string detail) {
    checks.push_back({std::move(name), ok, fatal && !ok, std::move(detail)});
  };
  auto iface = LookupInterface(config.interface, config.boot_address());
  add("interface", iface.ok(), true,
      iface.ok() ? config.interface + " has " + iface->address + "/" + std::to_string(iface->prefix)
                 : iface.status().message());
  if (iface.ok() && config.dhcp_mode == DhcpMode::kFull) {
    std::string first, last;
    Status s = EffectiveRange(config, *iface, first, last);
    auto a = ParseIpv4(first), b = ParseIpv4(last);
    if (!s.ok()) {
      add("dhcp range", false, true, s.message());
    } else if (!a.ok() || !b.ok() || !iface->Contains(*a) || !iface->Contains(*b)) {
      add("dhcp range", false, true,
          "range " + first + "-" + last + " is not inside " + iface->network() + "/" +
              std::to_string(iface->prefix) + " of " + config.interface);
    } else if (iface->address_host >= *a && iface->address_host <= *b) {
      add("dhcp range", false, true,
          "range " + first + "-" + last + " contains this machine's own address " + iface->address);
    } else {
      uint64_t size = *b - *a + 1;
      bool fits = size >= static_cast<uint64_t>(options.enrolled_nodes);
      add("dhcp range", fits, false,
          first + "-" + last + ": " + std::to_string(size) + " addresses for " +
              std::to_string(options.enrolled_nodes) + " enrolled node(s)" +
              (fits ? "" : ": too small, widen dhcp.range"));
    }
  }
  if (iface.ok()) {
    bool reachable = config.listen_host == "0.0.0.0" || config.listen_host == "::" ||
                     config.listen_host == iface->address;
    add("listen address", reachable, true,
        reachable ? "nodes reach provisiond at " + config.listen_host + ":" +
                        std::to_string(config.listen_port)
                  : "listen is " + config.listen_host + ", which nodes on " + config.interface +
                        " cannot reach; use listen: " + iface->address + ":" +
                        std::to_string(config.listen_port == 0 ? 8080 : config.listen_port) +
                        " or 0.0.0.0");
  }
  std::string missing;
  for (const char* f : {"undionly.kpxe", "ipxe.efi", "snponly.efi"})
    if (!std::filesystem::exists(config.ipxe_dir + "/" + f))
      missing += std::string(missing.empty() ? "" : ", ") + f;
  add("ipxe binaries", missing.empty(), true,
      missing.empty()
          ? "undionly.kpxe, ipxe.efi, snponly.efi in " + config.ipxe_dir
          : "missing in " + config.ipxe_dir + ": " + missing + " (install Debian's ipxe)");
  // The signed chain UEFI machines get by default (dhcp.uefi_loader).
  if (ParseLoaderName(config.uefi_loader) == BootChain::kSigned) {
    std::string absent;
    for (const char* f :
         {"shim/shimx64.efi.signed", "grub/x86_64-efi-signed/grubnetx64.efi.signed"})
      if (!std::filesystem::exists(config.signed_loader_dir + "/" + f))
        absent += std::string(absent.empty() ? "" : ", ") + config.signed_loader_dir + "/" + f;
    add("signed loaders (shim, grub)", absent.empty(), true,
        absent.empty() ? "shim (signed by Microsoft's UEFI CA) and grub (signed by Debian) in " +
                             config.signed_loader_dir +
                             ": UEFI machines boot with Secure Boot "
                             "on or off"
                       : "missing: " + absent +
                             " (install Debian's shim-signed and grub-efi-amd64-signed, or set "
                             "dhcp.uefi_loader: " +
                             LoaderName(BootChain::kIpxe) + " for machines with Secure Boot off)");
  }
  add("dnsmasq", access(config.dnsmasq_path.c_str(), X_OK) == 0, true,
      config.dnsmasq_path + (access(config.dnsmasq_path.c_str(), X_OK) == 0
                                 ? " is there"
                                 : " is missing (install Debian's dnsmasq-base)"));
  // dnsmasq drops to `nobody`: every directory above its files must let it in.
  std::string blocked;
  for (auto p = std::filesystem::path(config.data_dir); !p.empty() && p != p.root_path();
       p = p.parent_path()) {
    struct stat st {};
    if (stat(p.c_str(), &st) == 0 && !(st.st_mode & S_IXOTH)) blocked = p.string();
  }
  add("data_dir access", blocked.empty(), true,
      blocked.empty()
          ? "dnsmasq (as nobody) can reach " + config.data_dir
          : blocked + " is not searchable by others; dnsmasq runs as nobody (chmod o+x " + blocked +
                ")");
  if (iface.ok() && options.check_ports) {
    std::string busy;
    for (int port : {67, 69}) {
      std::string why = UdpPortBusy(config.interface, port);
      if (!why.empty())
        busy += (busy.empty() ? "" : ", ") + std::string("UDP ") + std::to_string(port) + " (" +
                why + ")";
    }
    add("dhcp and tftp ports", busy.empty(), true,
        busy.empty() ? "UDP 67 and 69 are free on " + config.interface
                     : "in use on " + config.interface + ": " + busy +
                           "; another DHCP/TFTP server (a system dnsmasq?) runs on this machine");
  }
  if (iface.ok() && options.probe_dhcp) {
    auto servers = ProbeDhcpServers(config.interface, options.probe_ms, options.own_address);
    if (!servers.ok()) {
      add("other dhcp servers", true, false, "not probed: " + servers.status().message());
    } else if (servers->empty()) {
      add("other dhcp servers", true, false,
          config.dhcp_mode == DhcpMode::kProxy
              ? "no DHCP server answered on " + config.interface +
                    ": proxy mode needs one (or use dhcp.mode: full)"
              : "none answered on " + config.interface);
      if (config.dhcp_mode == DhcpMode::kProxy) checks.back().ok = false;
    } else {
      std::string list;
      for (const auto& s : *servers)
        list += (list.empty() ? "" : ", ") + s.address + (s.proxy ? " (proxy DHCP)" : "");
      bool ok = config.dhcp_mode == DhcpMode::kProxy;
      add("other dhcp servers", ok, !ok,
          ok ? "DHCP server(s) " + list +
                   " give addresses; provisiond adds boot information (proxy mode)"
             : "another DHCP server answers on " + config.interface + " (" + list +
                   "): two servers would fight over the nodes; set dhcp.mode: proxy");
    }
  }
  return checks;
}

}  // namespace prov
