// The playbook modules. Each one runs on a node through a Remote, decides
// itself whether anything had to change (idempotent: a second run reports
// ok), and returns what Ansible would register for it (rc, stdout, stderr,
// changed, failed, msg, and module-specific keys such as stat).
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/strings.h"  // ShellQuote
#include "playbook/remote.h"

namespace prov {

struct ModuleContext {
  Remote& remote;
  std::string become_user;  // "" runs as the login user
  int timeout_ms = 300000;
  std::string playbook_dir;    // copy src: / template src: are relative to it
  const nlohmann::json& vars;  // for template src:
};

// The outcome of one module call. `result` is the registered value:
// {"changed": bool, "failed": bool, "rc": int, "stdout": ..., "stderr": ...,
//  "msg": ..., ...}.
struct ModuleOutcome {
  bool changed = false;
  bool failed = false;
  bool unreachable = false;  // the session broke: the node stops here
  std::string msg;
  nlohmann::json result = nlohmann::json::object();
};

struct ArgSpec {
  std::string name;
  bool required = false;
  std::vector<std::string> choices;  // empty: any value
  std::vector<std::string> aliases;
};

// Notes for the runner and the parser:
// - Arguments reach `run` rendered, except assert's `that`: conditions are
//   evaluated here with EvalCondition against ctx.vars, so the runner must
//   pass `that` as written (a string or a list of strings), not rendered.
//   debug's `var` is an expression evaluated here as well. template renders
//   its src file itself with RenderTemplate(ctx.vars).
// - Aliases (dest for file's path, pkg for apt's name, ...) may be passed as
//   written: run renames them, and checks the rendered values against
//   `choices` again (a choice that came from a variable).
// - Modes: a string ("0644", "u=rw,g=r") or an integer, read as Ansible does
//   (YAML's unquoted 0644 is 420, i.e. 0644; an unquoted 644 is 01204).
// - set_fact: result["ansible_facts"] holds the facts to set.
// - reboot: returns changed with result["rebooted"] = true once the reboot is
//   issued; the runner reconnects (see the comment at RunReboot in
//   modules/services.cc: reboot_timeout, boot_id_before, test_command).
// - apt_repository takes one argument Ansible lacks: signed_by, a keyring
//   file already on the node, written as [signed-by=...] (keys cannot be
//   fetched from a keyserver offline; copy the key there first). A ppa:
//   becomes "deb https://ppa.launchpadcontent.net/<owner>/<name>/ubuntu
//   <codename> main" in <owner>-ubuntu-<name>-<codename>.list.
// - file state=touch reports changed every time, as in Ansible, unless
//   modification_time and access_time are "preserve".
// - Node scripts report on fd 3; a Remote must collect it (RemoteResult.meta).
// What is particular to a module beyond each argument's own spec: the
// loader, the validation and the runner read it here rather than asking for
// the module by name.
struct ModuleRules {
  // Arguments that go together: at least one of them, exactly one, or at
  // most one; `message` says so when they do not.
  struct Combination {
    enum class Kind { kAtLeastOne, kExactlyOne, kAtMostOne };
    Kind kind = Kind::kAtLeastOne;
    std::vector<std::string> args = {};
    std::string message = {};
  };
  std::vector<Combination> combinations = {};
  // Its arguments are conditions it evaluates itself (assert): the runner
  // passes them as written, not rendered.
  bool raw_args = false;
  // Checked when the playbook loads: arguments that are conditions (assert's
  // `that`, a string or a list) or expressions (debug's `var`).
  std::vector<std::string> condition_args = {};
  std::vector<std::string> expression_args = {};
  // A literal `src` it reads from the playbook's folder (<dir>/src, then
  // src): it must exist when the playbook loads; a template's syntax is
  // checked too.
  std::string local_dir = {};  // "templates" or "files"; empty: none
  bool local_is_template = false;
};

struct ModuleSpec {
  std::string name;
  std::vector<ArgSpec> args;
  bool free_form = false;  // command/shell: "command: ls -l" is _raw_params
  // Rendered arguments in, outcome out.
  std::function<ModuleOutcome(const nlohmann::json& args, ModuleContext& ctx)> run;
  // set_fact: any argument name is accepted (each one is a fact).
  bool any_args = false;
  ModuleRules rules;
};

// Looks a module up by its short or ansible.builtin./ansible.posix. name.
const ModuleSpec* FindModule(const std::string& name);
const std::vector<ModuleSpec>& AllModules();

// Checks arguments (before rendering): unknown names, missing required ones,
// values outside `choices` when they are literal. Returns one message per
// problem, naming the argument.
std::vector<std::string> ValidateModuleArgs(const ModuleSpec& spec, const nlohmann::json& args);

}  // namespace prov
