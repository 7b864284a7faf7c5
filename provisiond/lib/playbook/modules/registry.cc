// The module table: every family's specs gathered into the one list that
// playbook loading checks arguments against and the runner dispatches on
// (docs/playbooks.md follows it), and the wrapper each module runs inside.
#include "playbook/modules/modules.h"

#include <algorithm>
#include <string>
#include <vector>

#include "playbook/modules/common.h"

namespace prov {
namespace {

using nlohmann::json;

// Renames aliases to the argument's own name.
json Canonical(const std::vector<ArgSpec>& specs, const json& args) {
  if (!args.is_object()) return args;
  json out = json::object();
  for (auto it = args.begin(); it != args.end(); ++it) {
    std::string name = it.key();
    for (const auto& a : specs)
      if (std::find(a.aliases.begin(), a.aliases.end(), name) != a.aliases.end()) name = a.name;
    if (!out.contains(name) || name == it.key()) out[name] = it.value();
  }
  return out;
}

bool IsTemplated(const json& v) {
  if (!v.is_string()) return false;
  const std::string& s = v.get_ref<const std::string&>();
  return s.find("{{") != std::string::npos || s.find("{%") != std::string::npos;
}

// In this order the modules are listed where a load error names them.
std::vector<ModuleSpec> BuildTable() {
  std::vector<ModuleSpec> t;
  for (auto family : {modules::CommandModules, modules::FileModules, modules::UserModules,
                      modules::PackageModules, modules::ServiceModules, modules::CheckModules})
    for (auto& spec : family()) t.push_back(std::move(spec));
  return t;
}

}  // namespace

namespace modules {

ModuleSpec Module(std::string name, std::vector<ArgSpec> args, RunFn fn, bool free_form,
                  bool any_args, ModuleRules rules) {
  ModuleSpec spec;
  spec.name = std::move(name);
  spec.args = std::move(args);
  spec.free_form = free_form;
  spec.any_args = any_args;
  spec.rules = std::move(rules);
  ModuleSpec check = spec;  // without run: what the wrapper validates against
  spec.run = [check, fn](const json& raw, ModuleContext& ctx) {
    json args = Canonical(check.args, raw.is_null() ? json::object() : raw);
    ModuleOutcome o;
    auto problems = ValidateModuleArgs(check, args);
    if (!problems.empty())
      o = Fail(check.name + ": " + Join(problems, "; "));
    else
      o = fn(args, ctx);
    if (!o.result.is_object()) o.result = json::object();
    o.result["changed"] = o.changed;
    o.result["failed"] = o.failed;
    if (!o.msg.empty() && !o.result.contains("msg")) o.result["msg"] = o.msg;
    return o;
  };
  return spec;
}

}  // namespace modules

const std::vector<ModuleSpec>& AllModules() {
  static const std::vector<ModuleSpec> table = BuildTable();
  return table;
}

const ModuleSpec* FindModule(const std::string& name) {
  std::string shortname = name;
  for (const char* prefix : {"ansible.builtin.", "ansible.posix.", "ansible.legacy."}) {
    if (shortname.rfind(prefix, 0) == 0) {
      shortname = shortname.substr(std::string(prefix).size());
      break;
    }
  }
  for (const auto& m : AllModules())
    if (m.name == shortname) return &m;
  return nullptr;
}

std::vector<std::string> ValidateModuleArgs(const ModuleSpec& spec, const nlohmann::json& args) {
  std::vector<std::string> problems;
  if (!args.is_null() && !args.is_object()) {
    problems.push_back("the arguments of " + spec.name + " must be a mapping");
    return problems;
  }
  auto given = [&](const ArgSpec& a) -> std::vector<std::string> {
    std::vector<std::string> names;
    if (args.is_object()) {
      if (args.contains(a.name)) names.push_back(a.name);
      for (const auto& al : a.aliases)
        if (args.contains(al)) names.push_back(al);
    }
    return names;
  };
  if (args.is_object()) {
    for (auto it = args.begin(); it != args.end(); ++it) {
      bool known = spec.any_args;
      for (const auto& a : spec.args)
        if (a.name == it.key() ||
            std::find(a.aliases.begin(), a.aliases.end(), it.key()) != a.aliases.end())
          known = true;
      if (!known) {
        std::vector<std::string> names;
        for (const auto& a : spec.args)
          if (a.name != "_raw_params") names.push_back(a.name);
        problems.push_back("unknown argument '" + it.key() + "' for module " + spec.name +
                           (names.empty() ? "" : " (it takes: " + Join(names, ", ") + ")"));
      }
    }
  }
  for (const auto& a : spec.args) {
    auto names = given(a);
    if (a.required && names.empty())
      problems.push_back("missing required argument '" + a.name + "' for module " + spec.name);
    if (names.size() > 1)
      problems.push_back("argument '" + a.name + "' of module " + spec.name + " given twice (as " +
                         Join(names, " and ") + ")");
    if (!names.empty() && !a.choices.empty()) {
      const json& v = args.at(names[0]);
      if (!IsTemplated(v)) {
        std::string text = v.is_string() ? v.get<std::string>() : v.dump();
        if (std::find(a.choices.begin(), a.choices.end(), text) == a.choices.end())
          problems.push_back("argument '" + names[0] + "' of module " + spec.name + " is '" + text +
                             "', expected one of: " + Join(a.choices, ", "));
      }
    }
  }
  // Combinations, from the module's own rules.
  auto has = [&](const std::string& k) {
    for (const auto& a : spec.args)
      if (a.name == k) return !given(a).empty();
    return false;
  };
  using Kind = ModuleRules::Combination::Kind;
  for (const auto& c : spec.rules.combinations) {
    size_t n = 0;
    for (const auto& a : c.args) n += has(a);
    const bool ok = c.kind == Kind::kAtLeastOne   ? n >= 1
                    : c.kind == Kind::kExactlyOne ? n == 1
                                                  : n <= 1;
    if (!ok) problems.push_back(c.message);
  }
  return problems;
}

}  // namespace prov
