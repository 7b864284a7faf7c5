// The power driver interface: one driver per way of switching a node (a
// Wake-on-LAN packet, a smart plug's HTTP API, a BMC over IPMI or Redfish,
// the node's own OS over SSH, a program of the site's), each in its own file
// and listed once in registry.cc. A driver names the settings it reads from a
// node's power config, checks them, and does what it can of on, off, cycle
// and status; what it cannot do is refused before it runs (power.cc), with a
// message that says what it can. A node's config may chain drivers per action
// (power.h).
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/process.h"
#include "base/result.h"

namespace prov {

// What this control node lends the drivers: its config and its services. A
// driver's own settings are the node's (PowerDriver::settings) or, for the
// few that are the control node's, a value of `site` under the config key
// the driver documents ("power.command", "ipmi_credentials_file").
struct PowerSettings {
  std::string interface;  // the cluster interface (Wake-on-LAN broadcasts)
  std::map<std::string, std::string> site;
  // Where drivers keep what they learn about a node's power (Redfish BMCs'
  // pinned certificates). Empty: nothing is kept, nothing is pinned.
  std::string state_dir;
  // The secrets store: the value of the secret a node's config names.
  std::function<Result<std::string>(const std::string& name)> secret;
  // Runs a shell command on the node over its pinned SSH session (the ssh
  // driver); the result is its output.
  std::function<Result<std::string>(const std::string& node, const std::string& command)>
      node_command;
  int timeout_ms = 30000;

  // site[key], or "" when the config has none.
  std::string Site(const std::string& key) const;
};

enum class PowerOp { kOn, kOff, kCycle, kStatus };

// "on", "off", "cycle", "status": the words of the API, the CLI and programs.
const char* ToString(PowerOp op);
Result<PowerOp> ParsePowerOp(std::string_view word);

// What a driver can do. Status is optional: not every way of switching a
// node can tell whether it is on.
struct PowerCapabilities {
  bool on = false;
  bool off = false;
  bool cycle = false;
  bool status = false;
  bool can(PowerOp op) const;
};

// The node a driver acts on. `config` is the node's power config, already
// accepted by the Validate of every driver it uses.
struct PowerTarget {
  const nlohmann::json& config;
  std::string hostname;
  std::string mac;
  // Whether the node boots from the network (not an installed machine): BMCs
  // that can are told to netboot it.
  bool netboot = true;
};

class PowerDriver {
 public:
  virtual ~PowerDriver() = default;
  // The name a node's config uses ({"driver": "ipmi"}); unique in the registry.
  virtual std::string_view name() const = 0;
  // What it is in messages ("Wake-on-LAN").
  virtual std::string_view title() const = 0;
  virtual PowerCapabilities capabilities() const = 0;
  // The settings of a node's config this driver reads (all strings).
  virtual std::vector<std::string_view> settings() const = 0;
  // Checks the values of its settings in a node's power config (the common
  // check has refused unknown settings and non-strings): required ones
  // missing, values it cannot use. The message names the setting.
  virtual Status Validate(const nlohmann::json& config) const = 0;
  // Does `op`, which capabilities() allows, to `target`; the result says what
  // was done (for status: "on" or "off", then what the driver learnt).
  // Drivers hold no state: calls may run at once from several threads. No
  // secret may appear in the result or an error.
  virtual Result<std::string> Run(PowerOp op, const PowerSettings& settings,
                                  const PowerTarget& target) const = 0;
};

// For drivers that run a program (ipmitool, the site's command): runs `spec`;
// a timeout or a non-zero exit is an error naming the command line (secret
// arguments redacted), success gives the program's output without its
// trailing newlines and spaces.
Result<std::string> RunPowerProgram(const ProcessSpec& spec, int timeout_ms);

// A setting of a node's config as a string ("" when absent).
std::string PowerSetting(const nlohmann::json& config, std::string_view key);

// Checks that setting `key` of `driver`, when present, is a whole number in
// [min, max]; `what` says what it is ("a UDP port").
Status CheckNumberSetting(const nlohmann::json& config, std::string_view driver,
                          std::string_view key, long min, long max, std::string_view what);

}  // namespace prov
