// What the redfish power driver reads from and writes to a BMC, as pure
// functions over the DMTF Redfish schema's shapes (ServiceRoot,
// ComputerSystemCollection, ComputerSystem and its Reset action, ActionInfo),
// so unit tests check them against those shapes without a BMC.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "base/result.h"
#include "power/driver.h"

namespace prov {

struct RedfishSystem {
  std::string path;          // "/redfish/v1/Systems/1"
  std::string power_state;   // "On", "Off", "PoweringOn", "PoweringOff", "Paused"
  std::string reset_target;  // where the Reset action is POSTed
  // The ResetType values the system allows (from the action or its
  // ActionInfo); empty when it does not say.
  std::vector<std::string> reset_types;
  std::string action_info;  // the action's @Redfish.ActionInfo, when it has one
  bool pxe_allowed = true;  // false when the system lists its boot targets without Pxe
};

// The Systems collection's path in a ServiceRoot.
Result<std::string> RedfishSystemsPath(const nlohmann::json& service_root);
// The members' paths of a collection.
Result<std::vector<std::string>> RedfishMembers(const nlohmann::json& collection);
// A ComputerSystem read at `path`.
Result<RedfishSystem> ParseRedfishSystem(const nlohmann::json& system, const std::string& path);
// The ResetType values an ActionInfo allows.
std::vector<std::string> RedfishActionInfoResetTypes(const nlohmann::json& action_info);
// The Reset requests that do `op` (kOn, kOff, kCycle) to a system in the
// state it is in, in order: {"PowerCycle"}, or {"ForceOff", "On"} where the
// system offers no restart; an error says what it offers.
Result<std::vector<std::string>> RedfishResets(PowerOp op, const RedfishSystem& system);
// The PATCH body for a one-time boot from the network.
nlohmann::json RedfishPxeOnce();
// "on" or "off" for a PowerState (an error for one that is neither).
Result<std::string> RedfishPowerWord(const std::string& power_state);

}  // namespace prov
