// The ssh power driver: off and cycle through the node's own OS, over the
// node's pinned SSH session with provisiond's control key (`systemctl
// poweroff` and `reboot`, not waited for). It reaches only a node that is up
// and answering, so it is the first of a chain ("off=ssh+webhook": a clean
// shutdown, and the plug when the node does not answer); it cannot power a
// node on, nor tell whether it is off.
#include "power/driver.h"

namespace prov {
namespace {

class Ssh final : public PowerDriver {
 public:
  std::string_view name() const override { return "ssh"; }
  std::string_view title() const override { return "the ssh power driver"; }
  PowerCapabilities capabilities() const override {
    return {.on = false, .off = true, .cycle = true, .status = false};
  }
  std::vector<std::string_view> settings() const override { return {}; }
  Status Validate(const nlohmann::json&) const override { return Status::Ok(); }

  Result<std::string> Run(PowerOp op, const PowerSettings& s,
                          const PowerTarget& target) const override {
    if (!s.node_command) return Status::Internal("the ssh power driver has no SSH sessions here");
    // --no-block: systemd starts the shutdown and the command returns while
    // the session still stands.
    const char* command =
        op == PowerOp::kOff ? "systemctl --no-block poweroff" : "systemctl --no-block reboot";
    auto out = s.node_command(target.hostname, command);
    if (!out.ok()) return out.status();
    return std::string("ssh: ") + command;
  }
};

}  // namespace

const PowerDriver& SshDriver() {
  static const Ssh driver;
  return driver;
}

}  // namespace prov
