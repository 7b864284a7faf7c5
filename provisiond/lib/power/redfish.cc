// The redfish power driver: on, off, cycle and status through a BMC's DMTF
// Redfish service. The system is found from the service root (or named by
// `system`); the Reset request is one the system says it allows; before a
// node that netboots is powered on or cycled, its boot source is overridden
// to Pxe once, so a server whose first boot device is its disk still comes
// to provisiond. The BMC's TLS certificate is checked by a CA file (`ca`) or
// its public key is pinned on first use: learnt from a request that sends no
// credentials (the service root needs none), kept under the state dir, and
// required from then on.
#include "power/redfish.h"

#include <algorithm>

#include "base/file_util.h"
#include "base/strings.h"
#include "power/http_call.h"

namespace prov {

using json = nlohmann::json;

namespace {

std::string OdataId(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_object()) return "";
  auto id = it->find("@odata.id");
  return id != it->end() && id->is_string() ? id->get<std::string>() : "";
}

bool Allowed(const RedfishSystem& s, const std::string& type) {
  return s.reset_types.empty() ||
         std::find(s.reset_types.begin(), s.reset_types.end(), type) != s.reset_types.end();
}

}  // namespace

Result<std::string> RedfishSystemsPath(const json& root) {
  std::string path = OdataId(root, "Systems");
  if (path.empty()) return Status::Invalid("the Redfish service root has no Systems");
  return path;
}

Result<std::vector<std::string>> RedfishMembers(const json& collection) {
  auto members = collection.find("Members");
  if (members == collection.end() || !members->is_array())
    return Status::Invalid("the Redfish collection has no Members");
  std::vector<std::string> out;
  for (const json& m : *members)
    if (m.is_object() && m.contains("@odata.id") && m["@odata.id"].is_string())
      out.push_back(m["@odata.id"]);
  return out;
}

Result<RedfishSystem> ParseRedfishSystem(const json& system, const std::string& path) {
  if (!system.is_object()) return Status::Invalid(path + " is not a Redfish resource");
  RedfishSystem s;
  s.path = path;
  s.power_state = system.value("PowerState", "");
  auto actions = system.find("Actions");
  if (actions == system.end() || !actions->is_object() ||
      !actions->contains("#ComputerSystem.Reset"))
    return Status::Invalid(path + " offers no #ComputerSystem.Reset action");
  const json& reset = (*actions)["#ComputerSystem.Reset"];
  s.reset_target = reset.value("target", "");
  if (s.reset_target.empty()) return Status::Invalid(path + ": its Reset action has no target");
  if (auto types = reset.find("ResetType@Redfish.AllowableValues");
      types != reset.end() && types->is_array())
    for (const json& t : *types)
      if (t.is_string()) s.reset_types.push_back(t);
  s.action_info = reset.value("@Redfish.ActionInfo", "");
  if (auto boot = system.find("Boot"); boot != system.end() && boot->is_object())
    if (auto targets = boot->find("BootSourceOverrideTarget@Redfish.AllowableValues");
        targets != boot->end() && targets->is_array())
      s.pxe_allowed = std::find(targets->begin(), targets->end(), "Pxe") != targets->end();
  return s;
}

std::vector<std::string> RedfishActionInfoResetTypes(const json& info) {
  std::vector<std::string> out;
  auto params = info.find("Parameters");
  if (params == info.end() || !params->is_array()) return out;
  for (const json& p : *params)
    if (p.is_object() && p.value("Name", "") == "ResetType")
      if (auto v = p.find("AllowableValues"); v != p.end() && v->is_array())
        for (const json& t : *v)
          if (t.is_string()) out.push_back(t);
  return out;
}

Result<std::vector<std::string>> RedfishResets(PowerOp op, const RedfishSystem& s) {
  auto first = [&](std::initializer_list<const char*> types) -> std::string {
    for (const char* t : types)
      if (Allowed(s, t)) return t;
    return "";
  };
  auto offers = [&] {
    std::string out;
    for (const std::string& t : s.reset_types) out += (out.empty() ? "" : ", ") + t;
    return s.path + " offers " + (out.empty() ? "no reset" : out);
  };
  const bool off = s.power_state == "Off" || s.power_state == "PoweringOff";
  std::string on_type = first({"On", "ForceOn"});
  switch (op) {
    case PowerOp::kOn:
      if (on_type.empty()) return Status::Invalid("cannot power on: " + offers());
      return std::vector<std::string>{on_type};
    case PowerOp::kOff:
      if (std::string t = first({"ForceOff", "GracefulShutdown"}); !t.empty())
        return std::vector<std::string>{t};
      return Status::Invalid("cannot power off: " + offers());
    case PowerOp::kCycle: {
      if (off && !on_type.empty()) return std::vector<std::string>{on_type};  // was off: on
      if (std::string t = first({"PowerCycle", "ForceRestart"}); !t.empty())
        return std::vector<std::string>{t};
      std::string force_off = first({"ForceOff"});
      if (!force_off.empty() && !on_type.empty())
        return std::vector<std::string>{force_off, on_type};
      return Status::Invalid("cannot power-cycle: " + offers());
    }
    case PowerOp::kStatus:
      break;
  }
  return Status::Invalid("status is read, not reset");
}

json RedfishPxeOnce() {
  return {{"Boot", {{"BootSourceOverrideEnabled", "Once"}, {"BootSourceOverrideTarget", "Pxe"}}}};
}

Result<std::string> RedfishPowerWord(const std::string& state) {
  if (state == "On" || state == "PoweringOn") return std::string("on");
  if (state == "Off" || state == "PoweringOff") return std::string("off");
  return Status::Error(Code::kUnavailable, "the BMC says its PowerState is '" + state + "'");
}

namespace {

// One BMC, as a driver run talks to it.
class RedfishClient {
 public:
  RedfishClient(const PowerSettings& s, const json& config) : settings_(s) {
    base_ = PowerSetting(config, "address");
    if (base_.find("://") == std::string::npos) base_ = "https://" + base_;
    while (!base_.empty() && base_.back() == '/') base_.pop_back();
    user_ = PowerSetting(config, "user");
    ca_ = PowerSetting(config, "ca");
    secret_name_ = PowerSetting(config, "secret");
  }

  // The pinned key (learning it on first use) or the CA, and the password.
  Status Prepare(std::string& pinned_note) {
    if (!secret_name_.empty()) {
      if (!settings_.secret) return Status::Internal("no secrets store for the redfish driver");
      auto value = settings_.secret(secret_name_);
      if (!value.ok()) return value.status();
      password_ = *value;
    }
    if (!ca_.empty()) return Status::Ok();
    if (settings_.state_dir.empty())
      return Status::Invalid("redfish: no state dir to pin " + base_ + "'s key in; give 'ca'");
    std::string host = base_.substr(base_.find("://") + 3);
    for (char& c : host)
      if (!isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-') c = '_';
    const std::string file = settings_.state_dir + "/redfish-" + host + ".pin";
    Status dir = MakeDirs(settings_.state_dir, 0700);
    if (!dir.ok()) return dir;
    if (auto known = ReadFile(file); known.ok()) {
      pin_ = Trim(*known);
      return Status::Ok();
    }
    PowerHttpRequest learn{.url = base_ + "/redfish/v1/",
                           .insecure = true,
                           .learn_key = true,
                           .timeout_ms = settings_.timeout_ms};
    auto answer = PowerHttp(learn);
    if (!answer.ok()) return answer.status();
    Status saved = WriteFileAtomic(file, answer->key + "\n", 0600);
    if (!saved.ok()) return saved;
    pin_ = answer->key;
    pinned_note = "pinned " + base_ + "'s key " + pin_ + " on first use; ";
    return Status::Ok();
  }

  Result<json> Call(const std::string& method, const std::string& path, const json& body = {}) {
    PowerHttpRequest r{.method = method,
                       .url = path.find("://") == std::string::npos ? base_ + path : path,
                       .user = user_,
                       .password = password_,
                       .pinned_key = pin_,
                       .ca_file = ca_,
                       .timeout_ms = settings_.timeout_ms};
    r.headers = {"Accept: application/json", "OData-Version: 4.0"};
    if (!body.is_null()) {
      r.body = body.dump();
      r.headers.push_back("Content-Type: application/json");
    }
    auto answer = PowerHttp(r);
    if (!answer.ok())
      return Status::Error(answer.status().code(),
                           RedactSecrets(answer.status().message(), {password_}));
    if (answer->status < 200 || answer->status > 299) {
      // A Redfish error says why in error.message (and its extended info).
      auto e = json::parse(answer->body, nullptr, false);
      std::string why = Trim(answer->body.substr(0, 200));
      if (e.is_object() && e.contains("error") && e["error"].is_object())
        why = e["error"].value("message", why);
      return Status::Error(Code::kUnavailable, method + " " + r.url + " answered HTTP " +
                                                   std::to_string(answer->status) + ": " +
                                                   RedactSecrets(why, {password_}));
    }
    if (answer->body.empty()) return json::object();
    auto j = json::parse(answer->body, nullptr, false);
    if (j.is_discarded())
      return Status::Error(Code::kUnavailable, method + " " + r.url + " answered no JSON");
    return j;
  }

  Result<RedfishSystem> System(const std::string& named) {
    std::string path = named;
    if (path.empty() || path[0] != '/') {
      auto root = Call("GET", "/redfish/v1/");
      if (!root.ok()) return root.status();
      auto systems = RedfishSystemsPath(*root);
      if (!systems.ok()) return systems.status();
      auto collection = Call("GET", *systems);
      if (!collection.ok()) return collection.status();
      auto members = RedfishMembers(*collection);
      if (!members.ok()) return members.status();
      if (named.empty() && members->size() != 1)
        return Status::Invalid(base_ + " has " + std::to_string(members->size()) +
                               " systems: name one with 'system'");
      path.clear();
      for (const std::string& m : *members)
        if (named.empty() || m.substr(m.rfind('/') + 1) == named) path = m;
      if (path.empty()) return Status::NotFound(base_ + " has no system '" + named + "'");
    }
    auto system = Call("GET", path);
    if (!system.ok()) return system.status();
    auto parsed = ParseRedfishSystem(*system, path);
    if (parsed.ok() && parsed->reset_types.empty() && !parsed->action_info.empty()) {
      auto info = Call("GET", parsed->action_info);
      if (info.ok()) parsed->reset_types = RedfishActionInfoResetTypes(*info);
    }
    return parsed;
  }

  const std::string& base() const { return base_; }

 private:
  const PowerSettings& settings_;
  std::string base_, user_, ca_, secret_name_, password_, pin_;
};

class Redfish final : public PowerDriver {
 public:
  std::string_view name() const override { return "redfish"; }
  std::string_view title() const override { return "Redfish"; }
  PowerCapabilities capabilities() const override {
    return {.on = true, .off = true, .cycle = true, .status = true};
  }
  std::vector<std::string_view> settings() const override {
    return {"address", "user", "secret", "system", "ca", "boot"};
  }
  Status Validate(const json& config) const override {
    std::string address = PowerSetting(config, "address");
    if (address.empty())
      return Status::Invalid("the redfish power driver needs 'address' (the BMC: https://HOST)");
    if (address.find("://") != std::string::npos && address.rfind("https://", 0) != 0)
      return Status::Invalid(
          "redfish 'address' must be https:// (credentials go with each "
          "request), found '" +
          address + "'");
    if (PowerSetting(config, "user").empty() || PowerSetting(config, "secret").empty())
      return Status::Invalid(
          "the redfish power driver needs 'user' and 'secret' (the password's name in the "
          "secrets store)");
    std::string boot = PowerSetting(config, "boot");
    if (!boot.empty() && boot != "pxe" && boot != "auto" && boot != "none")
      return Status::Invalid("redfish 'boot' must be pxe, auto or none, found '" + boot + "'");
    return Status::Ok();
  }

  Result<std::string> Run(PowerOp op, const PowerSettings& s,
                          const PowerTarget& target) const override {
    RedfishClient bmc(s, target.config);
    std::string done;
    Status ready = bmc.Prepare(done);
    if (!ready.ok()) return ready;
    auto system = bmc.System(PowerSetting(target.config, "system"));
    if (!system.ok()) return system.status();
    if (op == PowerOp::kStatus) {
      auto word = RedfishPowerWord(system->power_state);
      if (!word.ok()) return word.status();
      return *word + " (redfish: " + done + system->path + " PowerState " + system->power_state +
             ")";
    }
    auto resets = RedfishResets(op, *system);
    if (!resets.ok()) return resets.status();
    const std::string boot = PowerSetting(target.config, "boot");
    if (op != PowerOp::kOff &&
        (boot == "pxe" || ((boot.empty() || boot == "auto") && target.netboot))) {
      if (!system->pxe_allowed)
        return Status::Invalid(system->path +
                               " does not offer a boot override to Pxe; set "
                               "boot=none to power it without one");
      auto patched = bmc.Call("PATCH", system->path, RedfishPxeOnce());
      if (!patched.ok()) return patched.status();
      done += "next boot from the network (Pxe once), then ";
    }
    for (size_t i = 0; i < resets->size(); ++i) {
      auto posted = bmc.Call("POST", system->reset_target, {{"ResetType", (*resets)[i]}});
      if (!posted.ok()) return posted.status();
      done += (i ? ", " : "") + (*resets)[i];
    }
    return "redfish: " + done + " (" + system->path + ")";
  }
};

}  // namespace

const PowerDriver& RedfishDriver() {
  static const Redfish driver;
  return driver;
}

}  // namespace prov
