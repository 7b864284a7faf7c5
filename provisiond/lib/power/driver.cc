// What every power driver shares: the names of operations, the check of a
// config's settings, and running a program as a driver.
#include "power/driver.h"

#include <charconv>

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

Result<PowerOp> ParsePowerOp(std::string_view word) {
  for (PowerOp op : {PowerOp::kOn, PowerOp::kOff, PowerOp::kCycle, PowerOp::kStatus})
    if (word == ToString(op)) return op;
  return Status::Invalid("power action must be on, off, cycle or status, found '" +
                         std::string(word) + "'");
}

std::string PowerSettings::Site(const std::string& key) const {
  auto it = site.find(key);
  return it == site.end() ? std::string() : it->second;
}

std::string PowerSetting(const nlohmann::json& config, std::string_view key) {
  auto it = config.find(key);
  return it != config.end() && it->is_string() ? it->get<std::string>() : std::string();
}

Status CheckNumberSetting(const nlohmann::json& config, std::string_view driver,
                          std::string_view key, long min, long max, std::string_view what) {
  const std::string v = PowerSetting(config, key);
  if (v.empty()) return Status::Ok();
  long n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size() || n < min || n > max)
    return Status::Invalid(std::string(driver) + " '" + std::string(key) + "' must be " +
                           std::string(what) + " (" + std::to_string(min) + "-" +
                           std::to_string(max) + "), found '" + v + "'");
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
