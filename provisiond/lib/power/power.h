// Powering nodes on and off, with the drivers a node's power config names
// (power/driver.h; the drivers are listed in power/registry.cc):
//   wol      Wake-on-LAN magic packet on the cluster interface (consumer
//            boards have no BMC); it can only power on.
//   ssh      the node's own OS (systemctl poweroff/reboot) over its pinned
//            session: off and cycle of a node that is up.
//   webhook  HTTP requests to a smart plug, a PDU or a hub (presets for
//            Tasmota, Shelly and Home Assistant).
//   ipmi     ipmitool against the node's BMC.
//   redfish  the BMC's Redfish service.
//   command  a program from the config, called as PROGRAM ACTION HOSTNAME
//            MAC (the lab's virtual machines).
//
// A node's config is {"driver": NAME, its settings...}, and may chain drivers
// per action: {"on": "wol", "off": "ssh+webhook", "cycle": "webhook", ...}.
// A chain is tried in order until one driver succeeds ("ssh+webhook": a clean
// shutdown, and the plug when the node does not answer); an action without a
// chain uses `driver`. Every driver of the config reads its own settings from
// the same object. Secrets are named (secret=NAME), never given.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "base/result.h"
#include "power/driver.h"
#include "power/registry.h"
#include "store/store.h"

namespace prov {

// Validates a node's power config; the message names the field. Null or {}
// (no driver) is valid.
Status ValidatePowerConfig(const nlohmann::json& power);

// Parses "driver=ipmi,address=10.0.0.5" (the CLI's form) into the JSON form.
Result<nlohmann::json> ParsePowerSpec(const std::string& spec);

// The config's plan in words, for `node show`: "on: wol; off: ssh, then
// webhook; cycle: webhook; status: webhook" ("" when it has no driver).
std::string DescribePowerPlan(const nlohmann::json& power);

// Runs `op` for one node through its chain; the result says which driver did
// it and which failed before it ("ssh failed (...), then webhook: ...").
Result<std::string> PowerAction(const PowerSettings& settings, const nlohmann::json& power,
                                PowerOp op, const PowerTarget& target);

// Runs `op` for `node` and records the outcome as its "power" event, by
// `who`: what the API and the heartbeat's recovery do.
Result<std::string> NodePower(Store& store, const PowerSettings& settings, const NodeRecord& node,
                              PowerOp op, const std::string& who, const std::string& why = "");

// Runs `op` with `driver` after checking that the driver can do it (the
// message says what it can do instead).
Result<std::string> RunPowerOp(const PowerDriver& driver, PowerOp op, const PowerSettings& settings,
                               const PowerTarget& target);

// Builds the Wake-on-LAN magic packet (6 x 0xff, then the MAC 16 times).
Result<std::string> MagicPacket(const std::string& mac);

}  // namespace prov
