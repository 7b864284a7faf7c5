#include "ha/nfs_clients.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/netinfo.h"
#include "base/unique_fd.h"

namespace prov {
namespace {

// One line of /proc/net/tcp: "sl local rem st ...", addresses as
// "0100007F:0801" (the address's 32 bits as the kernel stores them, printed as
// a host-order integer; the port in host order).
struct ProcLine {
  uint32_t local = 0, remote = 0;  // network byte order
  uint16_t local_port = 0, remote_port = 0;
  int state = -1;
};

// An IPv4 endpoint: "0100630A:0801" from /proc/net/tcp, or an IPv4-mapped
// IPv6 one from /proc/net/tcp6 (a server listening on :: serves IPv4 clients
// so): "0000000000000000FFFF00000100630A:0801", the four 32-bit words of
// ::ffff:10.99.0.1 printed as the first form is.
bool ParseEndpoint(const std::string& text, uint32_t* address, uint16_t* port) {
  std::string hex = text;
  if (text.size() == 37 && text[32] == ':') {
    if (text.compare(0, 24, "0000000000000000FFFF0000") != 0) return false;
    hex = text.substr(24);
  }
  if (hex.size() != 13 || hex[8] != ':') return false;
  try {
    *address = static_cast<uint32_t>(std::stoul(hex.substr(0, 8), nullptr, 16));
    *port = static_cast<uint16_t>(std::stoul(hex.substr(9), nullptr, 16));
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

std::vector<ProcLine> ReadProcNetTcp(const std::string& path) {
  std::vector<ProcLine> out;
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string sl, local, remote, state;
    if (!(fields >> sl >> local >> remote >> state)) continue;
    ProcLine p;
    if (!ParseEndpoint(local, &p.local, &p.local_port) ||
        !ParseEndpoint(remote, &p.remote, &p.remote_port))
      continue;
    try {
      p.state = std::stoi(state, nullptr, 16);
    } catch (const std::exception&) {
      continue;
    }
    out.push_back(p);
  }
  return out;
}

// A listening socket in /proc/net/tcp6: "sl local(32 hex):port rem st".
bool Tcp6ListensOn(const std::string& path, uint16_t port) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string sl, local, remote, state;
    if (!(fields >> sl >> local >> remote >> state)) continue;
    const size_t colon = local.find(':');
    if (colon == std::string::npos || state != "0A") continue;
    try {
      if (std::stoul(local.substr(colon + 1), nullptr, 16) == port) return true;
    } catch (const std::exception&) {
    }
  }
  return false;
}

constexpr int kEstablished = 0x01;
constexpr int kListen = 0x0A;

bool ParsePort(const std::string& text, uint16_t* port) {
  if (text.empty() || text.size() > 5 || text.find_first_not_of("0123456789") != std::string::npos)
    return false;
  const unsigned long v = std::stoul(text);
  if (v == 0 || v > 65535) return false;
  *port = static_cast<uint16_t>(v);
  return true;
}

// "a.b.c.d:port" into its parts.
bool ParseAddressPort(const std::string& text, std::string* address, uint16_t* port) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos) return false;
  *address = text.substr(0, colon);
  return ParseIpv4(*address).ok() && ParsePort(text.substr(colon + 1), port);
}

void Put16(std::string& s, size_t at, uint16_t v) {
  s[at] = static_cast<char>(v >> 8);
  s[at + 1] = static_cast<char>(v & 0xff);
}

// The Internet checksum (RFC 1071) of `bytes`, starting from `sum`.
uint16_t Checksum(const std::string& bytes, uint32_t sum) {
  for (size_t i = 0; i + 1 < bytes.size(); i += 2)
    sum += (static_cast<uint8_t>(bytes[i]) << 8) | static_cast<uint8_t>(bytes[i + 1]);
  if (bytes.size() % 2) sum += static_cast<uint8_t>(bytes.back()) << 8;
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum & 0xffff);
}

}  // namespace

std::string TcpConnection::ToString() const {
  return local + ":" + std::to_string(local_port) + ">" + remote + ":" +
         std::to_string(remote_port);
}

Result<TcpConnection> TcpConnection::Parse(const std::string& text) {
  const size_t gt = text.find('>');
  TcpConnection c;
  if (gt == std::string::npos || !ParseAddressPort(text.substr(0, gt), &c.local, &c.local_port) ||
      !ParseAddressPort(text.substr(gt + 1), &c.remote, &c.remote_port))
    return Status::Invalid("'" + text.substr(0, 100) +
                           "' is not a TCP connection (10.99.0.1:2049>10.99.0.101:872)");
  return c;
}

std::vector<TcpConnection> EstablishedTo(uint16_t port, const std::string& proc_net_tcp,
                                         const std::string& proc_net_tcp6) {
  std::vector<TcpConnection> out;
  for (const std::string& file : {proc_net_tcp, proc_net_tcp6}) {
    for (const ProcLine& p : ReadProcNetTcp(file)) {
      if (p.state != kEstablished || p.local_port != port) continue;
      out.push_back(TcpConnection{.local = FormatIpv4(ntohl(p.local)),
                                  .local_port = p.local_port,
                                  .remote = FormatIpv4(ntohl(p.remote)),
                                  .remote_port = p.remote_port});
    }
  }
  return out;
}

bool ListensOn(uint16_t port, const std::string& proc_net_tcp, const std::string& proc_net_tcp6) {
  for (const ProcLine& p : ReadProcNetTcp(proc_net_tcp))
    if (p.state == kListen && p.local_port == port) return true;
  return Tcp6ListensOn(proc_net_tcp6, port);
}

std::vector<TcpConnection> ConnectionsToTell(const std::vector<ControlNodeReport>& nodes,
                                             const std::string& me, const std::string& address,
                                             std::vector<std::string>* refused) {
  std::vector<TcpConnection> out;
  for (const ControlNodeReport& n : nodes) {
    if (n.name == me) continue;
    for (const std::string& text : n.nfs_clients) {
      auto c = TcpConnection::Parse(text);
      if (!c.ok()) {
        if (refused) refused->push_back("control node " + n.name + ": " + c.status().message());
      } else if (c->local == address && c->local_port == kNfsPort && out.size() < kMaxTickles) {
        out.push_back(*c);
      }
    }
  }
  return out;
}

std::string TickleSegment(const TcpConnection& c) {
  std::string tcp(20, '\0');
  Put16(tcp, 0, c.local_port);
  Put16(tcp, 2, c.remote_port);
  // Sequence and acknowledgment numbers 0 (bytes 4-11).
  tcp[12] = 5 << 4;  // 20-byte header, no options
  tcp[13] = 0x10;    // ACK
  Put16(tcp, 14, 1024);
  // The pseudo-header: source, destination, zero, protocol 6, TCP length.
  auto src = ParseIpv4(c.local), dst = ParseIpv4(c.remote);
  uint32_t sum = 0;
  for (uint32_t a : {src.ok() ? *src : 0u, dst.ok() ? *dst : 0u}) sum += (a >> 16) + (a & 0xffff);
  sum += IPPROTO_TCP + static_cast<uint32_t>(tcp.size());
  Put16(tcp, 16, Checksum(tcp, sum));
  return tcp;
}

Result<int> SendTickles(const std::vector<TcpConnection>& connections,
                        std::vector<std::string>* failures) {
  int sent = 0;
  for (const TcpConnection& c : connections) {
    auto fail = [&](const std::string& why) {
      if (failures) failures->push_back(c.ToString() + ": " + why);
    };
    auto src = ParseIpv4(c.local), dst = ParseIpv4(c.remote);
    if (!src.ok() || !dst.ok()) {
      fail("not IPv4 addresses");
      continue;
    }
    // A raw TCP socket: the kernel writes the IPv4 header, from the address
    // the socket is bound to; the TCP header is ours, checksum included.
    UniqueFd fd(::socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_TCP));
    if (!fd.valid())
      return Status::Internal(std::string("raw TCP socket: ") + std::strerror(errno));
    sockaddr_in from{}, to{};
    from.sin_family = to.sin_family = AF_INET;
    from.sin_addr.s_addr = htonl(*src);
    to.sin_addr.s_addr = htonl(*dst);
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0) {
      fail(std::string("cannot send from ") + c.local + ": " + std::strerror(errno));
      continue;
    }
    const std::string segment = TickleSegment(c);
    if (::sendto(fd.get(), segment.data(), segment.size(), 0, reinterpret_cast<sockaddr*>(&to),
                 sizeof(to)) != static_cast<ssize_t>(segment.size())) {
      fail(std::strerror(errno));
      continue;
    }
    ++sent;
  }
  return sent;
}

}  // namespace prov
