// A node's power config, as stored and as the CLI writes it, checked and
// acted on through the drivers it names (power/registry.h), one action's
// chain at a time.
#include "power/power.h"

#include <set>

#include "base/json_fields.h"
#include "base/strings.h"

namespace prov {

namespace {

constexpr PowerOp kOps[] = {PowerOp::kOn, PowerOp::kOff, PowerOp::kCycle, PowerOp::kStatus};

bool HasDriver(const nlohmann::json& power) {
  if (!power.is_object()) return false;
  if (power.contains("driver")) return true;
  for (PowerOp op : kOps)
    if (power.contains(ToString(op))) return true;
  return false;
}

// The names of the chain for `op`: its own key ("ssh+webhook"), else driver.
std::vector<std::string> ChainNames(const nlohmann::json& power, PowerOp op) {
  std::string chain = PowerSetting(power, ToString(op));
  if (chain.empty()) chain = PowerSetting(power, "driver");
  std::vector<std::string> names;
  size_t at = 0;
  while (!chain.empty()) {
    size_t plus = chain.find('+', at);
    names.push_back(Trim(chain.substr(at, plus == std::string::npos ? plus : plus - at)));
    if (plus == std::string::npos) break;
    at = plus + 1;
  }
  return names;
}

}  // namespace

Status ValidatePowerConfig(const nlohmann::json& power) {
  if (power.is_null()) return Status::Ok();
  if (!power.is_object()) return Status::Invalid("power must be an object with a 'driver'");
  if (power.empty()) return Status::Ok();
  for (const auto& [key, value] : power.items())
    if (!value.is_string()) return Status::Invalid("power setting '" + key + "' must be a string");
  if (!HasDriver(power))
    return Status::Invalid("power needs a 'driver' (" + PowerDriverList() +
                           ") or a chain per action (on=wol,off=ssh+webhook,...)");
  // The drivers it uses, each able to do what its chain asks of it.
  std::vector<const PowerDriver*> used;
  auto use = [&](const std::string& name) -> Result<const PowerDriver*> {
    auto d = LookupPowerDriver(name);
    if (d.ok() && std::find(used.begin(), used.end(), *d) == used.end()) used.push_back(*d);
    return d;
  };
  std::string driver = PowerSetting(power, "driver");
  if (!driver.empty()) {
    // An unknown driver has no settings: a misspelt setting is named before
    // the driver, as it always was.
    if (!FindPowerDriver(driver))
      for (const auto& [key, value] : power.items())
        if (key != "driver")
          return Status::Invalid("power driver '" + driver + "' has no setting '" + key + "'");
    auto d = use(driver);
    if (!d.ok()) return d.status();
  }
  for (PowerOp op : kOps) {
    if (!power.contains(ToString(op))) continue;
    for (const std::string& name : ChainNames(power, op)) {
      auto d = use(name);
      if (!d.ok())
        return Status::Invalid("power '" + std::string(ToString(op)) +
                               "': " + d.status().message());
      if (!(*d)->capabilities().can(op))
        return Status::Invalid("power '" + std::string(ToString(op)) +
                               "': " + std::string((*d)->title()) + " cannot " +
                               (op == PowerOp::kStatus
                                    ? "tell whether a node is on"
                                    : "power a node " + std::string(ToString(op))));
    }
  }
  // Every setting is some used driver's.
  for (const auto& [key, value] : power.items()) {
    bool known = key == "driver";
    for (PowerOp op : kOps) known |= key == ToString(op);
    for (const PowerDriver* d : used)
      for (std::string_view k : d->settings()) known |= key == k;
    if (known) continue;
    std::vector<std::string> names;
    for (const PowerDriver* d : used) names.emplace_back(d->name());
    return Status::Invalid(
        (names.size() == 1 ? "power driver '" + names[0] + "' has"
                           : "none of the power drivers " + JoinWords(names, " and ") + " has") +
        " no setting '" + key + "'");
  }
  for (const PowerDriver* d : used) {
    Status s = d->Validate(power);
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

Result<nlohmann::json> ParsePowerSpec(const std::string& spec) {
  auto parsed = ParseSettingsList(spec, "driver", "power setting");
  if (!parsed.ok() || parsed->empty()) return parsed;  // "none": no power driver
  nlohmann::json out = std::move(*parsed);
  Status s = ValidatePowerConfig(out);
  if (!s.ok()) return s;
  return out;
}

std::string DescribePowerPlan(const nlohmann::json& power) {
  if (!HasDriver(power)) return "";
  std::string out;
  for (PowerOp op : kOps) {
    std::vector<std::string> names;
    for (const std::string& name : ChainNames(power, op))
      if (const PowerDriver* d = FindPowerDriver(name); d && d->capabilities().can(op))
        names.push_back(name);
    if (names.empty()) continue;
    std::string words = names[0];
    for (size_t i = 1; i < names.size(); ++i)
      words += ", then " + names[i] + " if " + names[i - 1] + " fails";
    out += (out.empty() ? "" : "; ") + std::string(ToString(op)) + ": " + words;
  }
  return out;
}

Result<std::string> RunPowerOp(const PowerDriver& driver, PowerOp op, const PowerSettings& settings,
                               const PowerTarget& target) {
  const PowerCapabilities can = driver.capabilities();
  if (!can.can(op)) {
    if (op == PowerOp::kStatus)
      return Status::Invalid(std::string(driver.title()) + " cannot tell whether " +
                             target.hostname + " is on");
    std::vector<std::string> able;
    for (PowerOp o : {PowerOp::kOn, PowerOp::kOff, PowerOp::kCycle})
      if (can.can(o)) able.push_back(ToString(o));
    return Status::Invalid(std::string(driver.title()) + " can only power " + target.hostname +
                           " " + JoinWords(able, " or ") + ", not " + ToString(op));
  }
  return driver.Run(op, settings, target);
}

Result<std::string> PowerAction(const PowerSettings& s, const nlohmann::json& power, PowerOp op,
                                const PowerTarget& target) {
  Status valid = ValidatePowerConfig(power);
  if (!valid.ok()) return valid;
  if (!HasDriver(power))
    return Status::Invalid(target.hostname +
                           " has no power driver; set one with: provisionctl "
                           "node set " +
                           target.hostname +
                           " --power wol (or driver=webhook,preset=tasmota,host=PLUG, "
                           "driver=redfish,address=BMC,..., driver=ipmi,address=BMC)");
  auto names = ChainNames(power, op);
  if (names.empty())
    return Status::Invalid(target.hostname + "'s power config has no driver for " + ToString(op) +
                           " (set '" + ToString(op) + "' or 'driver')");
  const PowerTarget t{power, target.hostname, target.mac, target.netboot};
  std::string failed;
  Status last;
  for (const std::string& name : names) {
    auto driver = LookupPowerDriver(name);
    if (!driver.ok()) return driver.status();
    auto r = RunPowerOp(**driver, op, s, t);
    if (r.ok()) return failed + *r;
    last = r.status();
    failed += name + " failed (" + r.status().message() + "), then ";
  }
  if (names.size() == 1) return last;
  failed.resize(failed.size() - std::string(", then ").size());
  return Status::Error(last.code(), failed);
}

Result<std::string> NodePower(Store& store, const PowerSettings& s, const NodeRecord& node,
                              PowerOp op, const std::string& who, const std::string& why) {
  auto power = nlohmann::json::parse(node.power, nullptr, false);
  auto result = PowerAction(s, power, op, {power, node.name(), node.mac, !node.installed});
  if (op != PowerOp::kStatus) {
    EventRecord e{.node_id = node.id,
                  .node = node.name(),
                  .kind = "power",
                  .detail = std::string(ToString(op)) + (why.empty() ? "" : " (" + why + ")") +
                            ": " + (result.ok() ? *result : "failed: " + result.status().message()),
                  .who = who};
    store.RecordEvent(e);
  }
  return result;
}

}  // namespace prov
