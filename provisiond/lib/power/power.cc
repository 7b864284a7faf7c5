// A node's power config, as stored and as the CLI writes it, checked and
// acted on through the driver it names (power/registry.h).
#include "power/power.h"

#include "base/json_fields.h"

#include <sstream>

namespace prov {

Status ValidatePowerConfig(const nlohmann::json& power) {
  if (power.is_null()) return Status::Ok();
  if (!power.is_object()) return Status::Invalid("power must be an object with a 'driver'");
  if (power.empty()) return Status::Ok();
  if (!power.contains("driver") || !power["driver"].is_string())
    return Status::Invalid("power needs a 'driver': " + PowerDriverList());
  const std::string name = power["driver"];
  const PowerDriver* driver = FindPowerDriver(name);
  if (driver) return driver->Validate(power);
  // An unknown driver has no settings: a misspelt setting is named before
  // the driver, as it always was.
  Status s = CheckPowerSettings(power, name, {});
  if (!s.ok()) return s;
  return LookupPowerDriver(name).status();
}

Result<nlohmann::json> ParsePowerSpec(const std::string& spec) {
  auto parsed = ParseSettingsList(spec, "driver", "power setting");
  if (!parsed.ok() || parsed->empty()) return parsed;  // "none": no power driver
  nlohmann::json out = std::move(*parsed);
  Status s = ValidatePowerConfig(out);
  if (!s.ok()) return s;
  return out;
}

Result<std::string> RunPowerOp(const PowerDriver& driver, PowerOp op, const PowerSettings& settings,
                               const PowerTarget& target) {
  const PowerCapabilities can = driver.capabilities();
  if (!can.can(op)) {
    if (op == PowerOp::kStatus)
      return Status::Invalid(std::string(driver.title()) + " cannot tell whether " +
                             target.hostname + " is on");
    std::string ops;
    std::vector<std::string> able;
    for (PowerOp o : {PowerOp::kOn, PowerOp::kOff, PowerOp::kCycle})
      if (can.can(o)) able.push_back(ToString(o));
    for (size_t i = 0; i < able.size(); ++i)
      ops += (i == 0 ? "" : i + 1 == able.size() ? " or " : ", ") + able[i];
    return Status::Invalid(std::string(driver.title()) + " can only power " + target.hostname +
                           " " + ops + ", not " + ToString(op));
  }
  return driver.Run(op, settings, target);
}

namespace {

// The node's driver, or why there is none.
Result<const PowerDriver*> NodeDriver(const nlohmann::json& power, const std::string& hostname) {
  Status valid = ValidatePowerConfig(power);
  if (!valid.ok()) return valid;
  if (power.is_null() || power.empty() || !power.contains("driver"))
    return Status::Invalid(hostname + " has no power driver; set one with: provisionctl node set " +
                           hostname + " --power wol (or driver=ipmi,address=BMC, or command)");
  return LookupPowerDriver(power["driver"].get<std::string>());
}

}  // namespace

Result<std::string> PowerAction(const PowerSettings& s, const nlohmann::json& power,
                                const std::string& action, const std::string& hostname,
                                const std::string& mac) {
  PowerOp op;
  if (action == "on")
    op = PowerOp::kOn;
  else if (action == "off")
    op = PowerOp::kOff;
  else if (action == "cycle")
    op = PowerOp::kCycle;
  else
    return Status::Invalid("power action must be on, off or cycle, found '" + action + "'");
  auto driver = NodeDriver(power, hostname);
  if (!driver.ok()) return driver.status();
  return RunPowerOp(**driver, op, s, {power, hostname, mac});
}

Result<std::string> PowerStatus(const PowerSettings& s, const nlohmann::json& power,
                                const std::string& hostname, const std::string& mac) {
  auto driver = NodeDriver(power, hostname);
  if (!driver.ok()) return driver.status();
  return RunPowerOp(**driver, PowerOp::kStatus, s, {power, hostname, mac});
}

}  // namespace prov
