// The power driver interface: one driver per way of switching a node (a
// Wake-on-LAN packet, a BMC over IPMI, a program of the site's), each in its
// own file and listed once in registry.cc. A driver checks its part of a
// node's power config and does what it can of on, off, cycle and status;
// what it cannot do is refused before it runs (power.cc), with a message
// that says what it can.
#pragma once

#include <nlohmann/json.hpp>

#include <initializer_list>
#include <string>
#include <string_view>

#include "base/process.h"
#include "base/result.h"

namespace prov {

// How this control node powers nodes: provisiond's config, not a node's.
struct PowerSettings {
  std::string interface;  // for Wake-on-LAN broadcasts
  std::string ipmi_credentials_file;
  std::string ipmitool = "/usr/bin/ipmitool";
  std::string command;  // the "command" driver's program
  int timeout_ms = 30000;
};

enum class PowerOp { kOn, kOff, kCycle, kStatus };

// "on", "off", "cycle", "status": the words of the API, the CLI and programs.
const char* ToString(PowerOp op);

// What a driver can do. Status is optional: not every way of switching a
// node can tell whether it is on.
struct PowerCapabilities {
  bool on = false;
  bool off = false;
  bool cycle = false;
  bool status = false;
  bool can(PowerOp op) const;
};

// The node a driver acts on. `config` is the node's power config
// ({"driver": ..., its settings}), already accepted by the driver's Validate.
struct PowerTarget {
  const nlohmann::json& config;
  std::string hostname;
  std::string mac;
};

class PowerDriver {
 public:
  virtual ~PowerDriver() = default;
  // The name a node's config uses ({"driver": "ipmi"}); unique in the registry.
  virtual std::string_view name() const = 0;
  // What it is in messages ("Wake-on-LAN").
  virtual std::string_view title() const = 0;
  virtual PowerCapabilities capabilities() const = 0;
  // Checks a node's power config whose "driver" is this driver: settings it
  // does not know, values that are not strings, required ones missing. The
  // message names the setting.
  virtual Status Validate(const nlohmann::json& config) const = 0;
  // Does `op`, which capabilities() allows, to `target`; the result says what
  // was done (for status: the state as the driver learnt it). Drivers hold no
  // state: calls may run at once from several threads.
  virtual Result<std::string> Run(PowerOp op, const PowerSettings& settings,
                                  const PowerTarget& target) const = 0;
};

// For Validate: every key of `config` but "driver" must be one of `known`,
// and every value a string.
Status CheckPowerSettings(const nlohmann::json& config, std::string_view driver,
                          std::initializer_list<std::string_view> known);

// For drivers that run a program (ipmitool, the site's command): runs `spec`;
// a timeout or a non-zero exit is an error naming the command line (secret
// arguments redacted), success gives the program's output without its
// trailing newlines and spaces.
Result<std::string> RunPowerProgram(const ProcessSpec& spec, int timeout_ms);

}  // namespace prov
