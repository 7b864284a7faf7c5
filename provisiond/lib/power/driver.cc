// What every power driver shares: the names of operations, the check of a
// config's settings, and running a program as a driver.
#include "power/driver.h"

namespace prov {

const char* ToString(PowerOp op) {
  switch (op) {
    case PowerOp::kOn:
      return "on";
    case PowerOp::kOff:
      return "off";
    case PowerOp::kCycle:
      return "cycle";
    case PowerOp::kStatus:
      return "status";
  }
  return "?";
}

bool PowerCapabilities::can(PowerOp op) const {
  switch (op) {
    case PowerOp::kOn:
      return on;
    case PowerOp::kOff:
      return off;
    case PowerOp::kCycle:
      return cycle;
    case PowerOp::kStatus:
      return status;
  }
  return false;
}

Status CheckPowerSettings(const nlohmann::json& config, std::string_view driver,
                          std::initializer_list<std::string_view> known) {
  for (const auto& [key, value] : config.items()) {
    bool found = key == "driver";
    for (std::string_view k : known) found |= key == k;
    if (!found)
      return Status::Invalid("power driver '" + std::string(driver) + "' has no setting '" + key +
                             "'");
    if (!value.is_string()) return Status::Invalid("power setting '" + key + "' must be a string");
  }
  return Status::Ok();
}

Result<std::string> RunPowerProgram(const ProcessSpec& spec, int timeout_ms) {
  auto r = RunProcess(spec, timeout_ms);
  if (!r.ok()) return r.status();
  std::string out = r->output;
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  if (r->timed_out) return Status::Error(Code::kUnavailable, DescribeCommand(spec) + " timed out");
  if (r->exit_code != 0)
    return Status::Error(Code::kUnavailable, DescribeCommand(spec) + " failed (exit " +
                                                 std::to_string(r->exit_code) + "): " + out);
  return out;
}

}  // namespace prov
