// The module table: lookups by name, argument checks, and the shell quoting
// every family's scripts rely on.
#include "playbook/modules/modules.h"

#include <doctest/doctest.h>

#include "playbook/modules/test_fixture.h"

namespace prov {

// What is particular to a module is in its own entry (ModuleRules): the
// loader, the validation and the runner ask the entry, never the name.
TEST_CASE("module rules: combinations, raw conditions, expressions, local files") {
  auto problems = [](const char* module, const nlohmann::json& args) {
    const ModuleSpec* spec = FindModule(module);
    REQUIRE(spec != nullptr);
    return ValidateModuleArgs(*spec, args);
  };
  using V = std::vector<std::string>;
  CHECK(problems("shell", {{"chdir", "/"}}) == V{"shell needs a command (free form, cmd)"});
  CHECK(problems("command", {{"argv", {"ls"}}}).empty());
  CHECK(problems("wait_for", {{"port", 22}, {"path", "/x"}}) ==
        V{"wait_for takes port or path, not both"});
  CHECK(problems("wait_for", {{"port", 22}}).empty());
  CHECK(problems("debug", {{"msg", "a"}, {"var", "b"}}) == V{"debug takes msg or var, not both"});
  CHECK(problems("lineinfile", {{"path", "/x"}, {"insertafter", "a"}, {"insertbefore", "b"}}) ==
        V{"lineinfile takes insertafter or insertbefore, not both"});
  int raw = 0;
  for (const ModuleSpec& m : AllModules()) raw += m.rules.raw_args;
  CHECK(raw == 1);
  CHECK(FindModule("ansible.builtin.assert")->rules.raw_args);
  CHECK(FindModule("assert")->rules.condition_args == V{"that"});
  CHECK(FindModule("debug")->rules.expression_args == V{"var"});
  CHECK(FindModule("template")->rules.local_dir == "templates");
  CHECK(FindModule("template")->rules.local_is_template);
  CHECK(FindModule("copy")->rules.local_dir == "files");
  CHECK_FALSE(FindModule("copy")->rules.local_is_template);
}

TEST_CASE("ValidateModuleArgs: unknown, missing, bad choice, aliases, free form") {
  const ModuleSpec* copy = FindModule("ansible.builtin.copy");
  REQUIRE(copy != nullptr);
  CHECK(FindModule("ansible.posix.copy") == copy);
  CHECK(FindModule("no_such_module") == nullptr);
  CHECK(ValidateModuleArgs(*copy, {{"dest", "/x"}, {"content", "a"}}).empty());

  auto p = ValidateModuleArgs(*copy, {{"dest", "/x"}, {"content", "a"}, {"colour", "red"}});
  REQUIRE(p.size() == 1);
  CHECK(p[0].find("unknown argument 'colour'") != std::string::npos);

  p = ValidateModuleArgs(*copy, {{"content", "a"}});
  REQUIRE(p.size() == 1);
  CHECK(p[0].find("missing required argument 'dest'") != std::string::npos);

  p = ValidateModuleArgs(*copy, {{"dest", "/x"}});
  REQUIRE(p.size() == 1);
  CHECK(p[0].find("exactly one of src and content") != std::string::npos);

  const ModuleSpec* file = FindModule("file");
  p = ValidateModuleArgs(*file, {{"path", "/x"}, {"state", "folder"}});
  REQUIRE(p.size() == 1);
  CHECK(p[0].find("'state'") != std::string::npos);
  CHECK(p[0].find("directory") != std::string::npos);
  // Not rendered yet: checked when it runs.
  CHECK(ValidateModuleArgs(*file, {{"path", "/x"}, {"state", "{{ s }}"}}).empty());
  // An alias satisfies the requirement; both at once is an error.
  CHECK(ValidateModuleArgs(*file, {{"dest", "/x"}}).empty());
  p = ValidateModuleArgs(*file, {{"dest", "/x"}, {"path", "/y"}});
  REQUIRE(p.size() == 1);
  CHECK(p[0].find("given twice") != std::string::npos);

  const ModuleSpec* command = FindModule("command");
  CHECK(command->free_form);
  CHECK(ValidateModuleArgs(*command, {{"_raw_params", "ls"}, {"chdir", "/"}}).empty());
  CHECK_FALSE(ValidateModuleArgs(*command, {{"chdir", "/"}}).empty());
  CHECK_FALSE(ValidateModuleArgs(*FindModule("shell"), {{"argv", json::array({"ls"})}}).empty());

  const ModuleSpec* set_fact = FindModule("set_fact");
  CHECK(ValidateModuleArgs(*set_fact, {{"anything", 1}, {"cacheable", true}}).empty());
  CHECK_FALSE(ValidateModuleArgs(*copy, json::array()).empty());

  // Every module of the brief is in the table.
  for (const char* m :
       {"command", "shell", "copy",           "template", "file",     "lineinfile", "user",
        "group",   "apt",   "apt_repository", "get_url",  "systemd",  "service",    "wait_for",
        "reboot",  "stat",  "assert",         "debug",    "set_fact", "fail",       "ping"})
    CHECK_MESSAGE(FindModule(m) != nullptr, m);
}

TEST_CASE("ShellQuote survives quotes, spaces and newlines") {
  LocalRemote remote;
  const std::string tricky = "it's a \"test\"\n$HOME `x` \\ *";
  auto r = remote.Run("printf '%s' " + ShellQuote(tricky), "", "", 5000);
  REQUIRE(r.ok());
  CHECK(r->out == tricky);
}

}  // namespace prov
