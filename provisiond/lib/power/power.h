// Powering nodes on and off, with a driver per node (power/driver.h; the
// drivers are listed in power/registry.cc):
//   wol      Wake-on-LAN magic packet on the cluster interface (consumer
//            boards have no BMC); it can only power on.
//   ipmi     ipmitool against the node's BMC; credentials come from a file
//            only its owner can read, and the password travels in the
//            environment, never on a command line or in a log.
//   command  a program from the config, called as PROGRAM ACTION HOSTNAME
//            MAC (the lab's virtual machines).
// These functions take a node's power config as stored (JSON) and find its
// driver in the registry.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "base/result.h"
#include "power/driver.h"
#include "power/registry.h"

namespace prov {

// Validates a node's power config ({"driver": ...}); the message names the
// field. Null or {} (no driver) is valid.
Status ValidatePowerConfig(const nlohmann::json& power);

// Parses "driver=ipmi,address=10.0.0.5" (the CLI's form) into the JSON form.
Result<nlohmann::json> ParsePowerSpec(const std::string& spec);

// Runs `action` (on, off, cycle) for one node; the result says what was done.
Result<std::string> PowerAction(const PowerSettings& settings, const nlohmann::json& power,
                                const std::string& action, const std::string& hostname,
                                const std::string& mac);

// Asks the node's driver whether the node is on; an error when its driver
// cannot tell (wol, command).
Result<std::string> PowerStatus(const PowerSettings& settings, const nlohmann::json& power,
                                const std::string& hostname, const std::string& mac);

// Runs `op` with `driver` after checking that the driver can do it (the
// message says what it can do instead).
Result<std::string> RunPowerOp(const PowerDriver& driver, PowerOp op, const PowerSettings& settings,
                               const PowerTarget& target);

// Builds the Wake-on-LAN magic packet (6 x 0xff, then the MAC 16 times).
Result<std::string> MagicPacket(const std::string& mac);

}  // namespace prov
