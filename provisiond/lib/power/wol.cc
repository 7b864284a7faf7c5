// The wol power driver: a Wake-on-LAN magic packet broadcast on the cluster
// interface. Consumer boards have no BMC, and this is what they have; it can
// only power a node on (a packet cannot switch a machine off or tell whether
// it is on).
#include <arpa/inet.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "base/unique_fd.h"
#include "power/power.h"
#include "store/node_state.h"

namespace prov {

Result<std::string> MagicPacket(const std::string& mac) {
  auto norm = NormalizeMac(mac);
  if (!norm.ok()) return norm.status();
  std::string bytes;
  for (size_t i = 0; i < 17; i += 3)
    bytes += static_cast<char>(std::stoi(norm->substr(i, 2), nullptr, 16));
  std::string packet(6, '\xff');
  for (int i = 0; i < 16; ++i) packet += bytes;
  return packet;
}

namespace {

class WakeOnLan final : public PowerDriver {
 public:
  std::string_view name() const override { return "wol"; }
  std::string_view title() const override { return "Wake-on-LAN"; }
  PowerCapabilities capabilities() const override {
    return {.on = true, .off = false, .cycle = false, .status = false};
  }
  std::vector<std::string_view> settings() const override { return {}; }
  Status Validate(const nlohmann::json&) const override { return Status::Ok(); }

  Result<std::string> Run(PowerOp op, const PowerSettings& s,
                          const PowerTarget& target) const override {
    if (op != PowerOp::kOn)  // callers check capabilities(); a packet must never mean "off"
      return Status::Invalid("Wake-on-LAN can only power " + target.hostname + " on");
    auto packet = MagicPacket(target.mac);
    if (!packet.ok()) return packet.status();
    UniqueFd sock(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (!sock.valid()) return Status::Internal("socket: " + std::string(strerror(errno)));
    const int fd = sock.get();
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_BROADCAST, &one, sizeof one);
    if (!s.interface.empty() && setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, s.interface.c_str(),
                                           static_cast<socklen_t>(s.interface.size())) != 0) {
      return Status::Internal("cannot send on " + s.interface + ": " + strerror(errno));
    }
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(9);
    to.sin_addr.s_addr = htonl(INADDR_BROADCAST);
    ssize_t n =
        sendto(fd, packet->data(), packet->size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to);
    int err = errno;
    if (n != static_cast<ssize_t>(packet->size()))
      return Status::Error(Code::kUnavailable,
                           "Wake-on-LAN packet not sent: " + std::string(strerror(err)));
    return "sent a Wake-on-LAN packet on " +
           (s.interface.empty() ? std::string("the default route") : s.interface);
  }
};

}  // namespace

const PowerDriver& WolDriver() {
  static const WakeOnLan driver;
  return driver;
}

}  // namespace prov
