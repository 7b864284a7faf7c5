// The command power driver: a program named in provisiond's config, run as
// PROGRAM ACTION HOSTNAME MAC (ACTION: on, off or cycle), for whatever a site
// switches machines with (the lab's virtual machines, a PDU's script). It is
// not asked for status: the programs written for it know only those three.
#include "power/driver.h"

namespace prov {
namespace {

constexpr const char* kProgramKey = "power.command";  // provisiond's config

class Command final : public PowerDriver {
 public:
  std::string_view name() const override { return "command"; }
  std::string_view title() const override { return "the command power driver"; }
  PowerCapabilities capabilities() const override {
    return {.on = true, .off = true, .cycle = true, .status = false};
  }
  std::vector<std::string_view> settings() const override { return {}; }
  Status Validate(const nlohmann::json&) const override { return Status::Ok(); }

  Result<std::string> Run(PowerOp op, const PowerSettings& s,
                          const PowerTarget& target) const override {
    const std::string program = s.Site(kProgramKey);
    if (program.empty())
      return Status::Invalid("the command power driver needs power.command in the config");
    const std::string action = ToString(op);
    ProcessSpec spec;
    spec.argv = {program, action, target.hostname, target.mac};
    auto out = RunPowerProgram(spec, s.timeout_ms);
    if (!out.ok()) return out.status();
    return "command: " + (out->empty() ? "power " + action : *out);
  }
};

}  // namespace

const PowerDriver& CommandDriver() {
  static const Command driver;
  return driver;
}

}  // namespace prov
