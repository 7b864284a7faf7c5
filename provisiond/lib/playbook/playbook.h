// Playbooks in Ansible's syntax (the subset in docs/playbooks.md): a list of
// plays with hosts, become, vars, pre_tasks, roles, tasks, post_tasks and
// handlers; tasks with a module and the keywords name, when, register,
// changed_when, failed_when, until/retries/delay, loop (loop_control's
// loop_var, index_var, label), notify, become, become_user, ignore_errors,
// vars, timeout, run_once, delegate_to: localhost; blocks with rescue and always;
// include_tasks/import_tasks of a literal file; roles from roles/ beside the
// playbook (tasks, defaults, vars, handlers, templates, files, meta
// dependencies). Parsing checks every module and argument against the module
// table, so an unknown module or argument is an error with file:line:col when
// the profile loads, not when a node runs it.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "base/result.h"

namespace YAML {
class Node;
}

namespace prov {

struct Task {
  std::string name;
  std::string module;  // short name: "copy" for copy and ansible.builtin.copy
  // Arguments as written (strings not yet rendered). Free-form modules
  // (command, shell) keep their command line in "_raw_params".
  nlohmann::json args = nlohmann::json::object();
  std::vector<std::string> when;  // all must hold
  std::string register_as;
  std::string changed_when;  // empty: the module decides
  std::string failed_when;   // empty: the module decides
  std::string until;         // empty: no retry loop
  int retries = 3;
  int delay_s = 5;
  std::optional<nlohmann::json> loop;  // a list, or a string expression
  std::string loop_var = "item";
  std::string index_var;   // loop_control's: the item's index, from 0
  std::string loop_label;  // loop_control's: how an item is shown (a template)
  std::vector<std::string> notify;
  std::optional<bool> become;
  std::string become_user;
  bool ignore_errors = false;
  bool no_log = false;  // nothing of its result is recorded but its status
  int timeout_s = 0;    // 0: the runner's default
  // Once for all the nodes of a run: the first node to reach it runs it, the
  // others take its result (RunOptions::once).
  bool run_once = false;
  // delegate_to: localhost: the module runs on the control node, with the
  // node's variables (RunOptions::local).
  bool delegate_local = false;
  nlohmann::json vars = nlohmann::json::object();
  std::string file;
  int line = 0;

  // A block: `block:` with its `rescue:` and `always:`, and what expands to
  // one when the playbook loads: include_tasks/import_tasks of a literal
  // file, a role (its dependencies first, then its tasks). `module` is
  // empty; `when` is evaluated once, when the block starts, and `vars` are
  // seen by every task inside.
  bool is_block = false;
  std::vector<Task> block, rescue, always;
  // A role's defaults/main.yml: below every other variable, inside the role.
  nlohmann::json defaults = nlohmann::json::object();
  // Where template and copy look for src: first (a role's folder); empty:
  // the playbook's.
  std::string files_dir;
  // Handlers: the topics they also answer to (`listen:`).
  std::vector<std::string> listen;

  // "file:line" for messages.
  std::string where() const;
};

struct Play {
  std::string name;
  std::string hosts = "all";  // all, a hostname, a glob, or a hostlist
  bool become = false;
  std::string become_user = "root";
  bool no_log = false;  // every task's
  nlohmann::json vars = nlohmann::json::object();
  // In the order they run: pre_tasks, then the roles (each a block) and
  // tasks, then post_tasks; notified handlers run after each of the three.
  std::vector<Task> pre_tasks;
  std::vector<Task> tasks;
  std::vector<Task> post_tasks;
  std::vector<Task> handlers;  // the play's and its roles'; run when notified
  std::string file;
  int line = 0;
};

struct Playbook {
  std::string file;
  std::string dir;  // for copy src: and template src:
  std::vector<Play> plays;
  // The controller-side files its tasks reach (template and copy src:), as
  // found when it was parsed; a templated src reaches the whole folder it is
  // looked up in (<dir>/templates or <dir>/files). An applied profile's
  // snapshot holds all of them.
  std::vector<std::string> reached_files;
  std::vector<std::string> reached_dirs;
};

// Parses the playbook `file`, and what it reaches (includes, roles, vars
// files, templates), from `files` alone: no I/O; what the set lacks is noted
// as wanted there (base/file_util.h: ReadThenParse reads it and parses
// again). All errors at once, each "file:line:col: message". Roles are looked
// up in roles/ beside the playbook, then in `roles_path` (':'-separated
// folders: the ansible_roles_path setting).
Result<Playbook> ParsePlaybook(FileSet& files, const std::string& file,
                               const std::string& roles_path = "");
// The same for playbook text said to be at `file`, and for the playbook at
// `path`: what they reach is read from disk first (ReadThenParse).
Result<Playbook> ParsePlaybook(const std::string& text, const std::string& file,
                               const std::string& roles_path = "");
Result<Playbook> LoadPlaybook(const std::string& path, const std::string& roles_path = "");

// True when `hosts` (a play's pattern) selects the node: "all", a hostname,
// a glob ("node*"), a hostlist ("node[01-04]"), several of them joined by ','
// or ':', and "!pattern" to leave nodes out.
bool HostsMatch(const std::string& hosts, const std::string& hostname);

// A YAML value as Ansible (PyYAML, YAML 1.1) reads it: plain yes/no/on/off
// and true/false are booleans, plain numbers are numbers (an unquoted 0644
// is octal, 420), ~/null/empty are null; quoted scalars stay strings.
nlohmann::json YamlToJson(const YAML::Node& node);

// Module arguments written as key=value words (`file: path=/x state=directory`),
// as Ansible reads them: values are strings, quotes group words and are
// removed, \n and \t inside quotes are decoded.
Result<nlohmann::json> ParseKeyValues(const std::string& text);

// Where a copy/template `src` lives: absolute, or <dir>/<subdir>/<src>, or
// <dir>/<src> (subdir "templates" or "files", as Ansible looks), as `files`
// has them. "" when none exists.
std::string FindPlaybookFile(FileSet& files, const std::string& dir, const std::string& subdir,
                             const std::string& src);

}  // namespace prov
