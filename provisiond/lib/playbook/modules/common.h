// What the module families share (internal to playbook/modules/): reading
// arguments as Ansible does, outcomes, running one script on the node, and
// the pieces every family's table is built from.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "base/strings.h"
#include "playbook/modules/modules.h"
#include "playbook/remote.h"

namespace prov::modules {

using nlohmann::json;

// Arguments, as they reach `run`: rendered, aliases renamed.

bool Has(const json& args, const std::string& key);
std::string Str(const json& args, const std::string& key, const std::string& def = "");
Result<bool> Bool(const json& args, const std::string& key, bool def);
Result<long long> Int(const json& args, const std::string& key, long long def);
// A list argument: a YAML list, or a comma-separated string.
std::vector<std::string> List(const json& args, const std::string& key);
// A file mode as chmod takes it. Integers are what YAML makes of an unquoted
// 0644 (420), so they are read as Ansible does: the number's value.
Result<std::string> ModeArg(const json& args, const std::string& key = "mode");
std::string Basename(const std::string& p);

// Outcomes

ModuleOutcome Fail(const std::string& msg, json result = json::object());
ModuleOutcome Unreachable(const Status& status);
std::vector<std::string> Lines(const std::string& s);
std::string StripEnds(std::string s);

// One script on the node

struct NodeRun {
  RemoteResult r;
  std::map<std::string, std::string> meta;  // the last value of each key
  std::vector<std::pair<std::string, std::string>> meta_list;
  bool changed = false;
};

// Runs `body` after the shell functions every script starts with (changed,
// fail, attrs) and collects what it reported on fd 3.
Result<NodeRun> RunOnNode(ModuleContext& ctx, const std::string& body,
                          const std::string& input = "", int timeout_ms = 0);
// A failed script as the task's outcome: rc, stdout and stderr registered.
ModuleOutcome FailedRun(const NodeRun& run, const std::string& what, ModuleContext& ctx);

inline std::string Q(const std::string& s) {
  return ShellQuote(s);
}

// The table

using RunFn = ModuleOutcome (*)(const json&, ModuleContext&);

ArgSpec A(std::string name, bool required = false, std::vector<std::string> choices = {},
          std::vector<std::string> aliases = {});
// The owner, group and mode arguments of the modules that write a file.
std::vector<ArgSpec> WithAttrs(std::vector<ArgSpec> args);
// Wraps a module: aliases renamed, the rendered arguments checked again (a
// choice that came from a variable), and the outcome's flags copied into
// the registered result.
ModuleSpec Module(std::string name, std::vector<ArgSpec> args, RunFn fn, bool free_form = false,
                  bool any_args = false, ModuleRules rules = {});

// The families, each in its own file with its modules' code; registry.cc
// gathers them into AllModules().
std::vector<ModuleSpec> CommandModules();
std::vector<ModuleSpec> FileModules();
std::vector<ModuleSpec> UserModules();
std::vector<ModuleSpec> PackageModules();
std::vector<ModuleSpec> ServiceModules();
std::vector<ModuleSpec> CheckModules();

}  // namespace prov::modules
