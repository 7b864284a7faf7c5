// Powering nodes on and off, with a driver per node:
//   wol      Wake-on-LAN magic packet on the cluster interface (consumer boards
//            have no BMC); it can only power on.
//   ipmi     ipmitool against the node's BMC; credentials come from a file only
//            its owner can read, and the password travels in the environment,
//            never on a command line or in a log.
//   command  a program from the config, called as PROGRAM ACTION HOSTNAME MAC
//            (the lab's virtual machines).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "base/result.h"

namespace prov {

struct PowerSettings {
  std::string interface;  // for Wake-on-LAN broadcasts
  std::string ipmi_credentials_file;
  std::string ipmitool = "/usr/bin/ipmitool";
  std::string command;  // the "command" driver's program
  int timeout_ms = 30000;
};

// Validates a node's power config ({"driver": ...}); the message names the
// field.
Status ValidatePowerConfig(const nlohmann::json& power);

// Parses "driver=ipmi,address=10.0.0.5" (the CLI's form) into the JSON form.
Result<nlohmann::json> ParsePowerSpec(const std::string& spec);

// Runs `action` (on, off, cycle) for one node; the result says what was done.
Result<std::string> PowerAction(const PowerSettings& settings, const nlohmann::json& power,
                                const std::string& action, const std::string& hostname,
                                const std::string& mac);

// Builds the Wake-on-LAN magic packet (6 x 0xff, then the MAC 16 times).
Result<std::string> MagicPacket(const std::string& mac);

}  // namespace prov
