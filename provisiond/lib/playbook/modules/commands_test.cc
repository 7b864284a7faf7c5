// command and shell, run on this machine (test_fixture.h).
#include <doctest/doctest.h>

#include "playbook/modules/modules.h"
#include "playbook/modules/test_fixture.h"

namespace prov {

TEST_CASE_FIXTURE(ModuleFixture, "command runs without a shell; creates/removes skip it") {
  auto o = Run("command", {{"_raw_params", "echo 'a  b' \"c\" | wc"}});
  REQUIRE_FALSE(o.failed);
  CHECK(o.changed);
  CHECK(o.result["rc"] == 0);
  CHECK(o.result["stdout"] == "a  b c | wc");
  CHECK(o.result["stdout_lines"] == json::array({"a  b c | wc"}));

  o = Run("command",
          {{"argv", json::array({"sh", "-c", "echo out; echo err >&2"})}, {"chdir", dir.path}});
  CHECK(o.result["stdout"] == "out");
  CHECK(o.result["stderr"] == "err");

  // creates: runs until the file exists, then is skipped (ok).
  std::string marker = dir / "made";
  json args = {{"_raw_params", "touch " + marker}, {"creates", marker}};
  o = Run("command", args);
  CHECK(o.changed);
  CHECK(fs::exists(marker));
  o = Run("command", args);
  CHECK_FALSE(o.changed);
  CHECK_FALSE(o.failed);
  CHECK(o.msg.find("exists") != std::string::npos);
  // creates with a glob.
  o = Run("command", {{"_raw_params", "false"}, {"creates", dir / "ma*"}});
  CHECK_FALSE(o.changed);
  CHECK_FALSE(o.failed);
  // removes: skipped while the file is missing.
  o = Run("command", {{"_raw_params", "rm " + marker}, {"removes", marker}});
  CHECK(o.changed);
  o = Run("command", {{"_raw_params", "rm " + marker}, {"removes", marker}});
  CHECK_FALSE(o.changed);

  o = Run("command", {{"_raw_params", "false"}});
  CHECK(o.failed);
  CHECK(o.result["rc"] == 1);
  CHECK(o.msg == "non-zero return code");

  o = Run("command", {{"_raw_params", "no-such-program-provisiond"}});
  CHECK(o.failed);
  CHECK(o.result["rc"] == 127);

  o = Run("command", {{"_raw_params", "true"}, {"chdir", dir / "missing"}});
  CHECK(o.failed);
  CHECK(o.msg.find("Unable to change directory") != std::string::npos);

  o = Run("command", {{"_raw_params", "echo 'unterminated"}});
  CHECK(o.failed);
  CHECK(o.msg.find("no closing quotation") != std::string::npos);

  // The command cannot write into the module's report channel.
  o = Run("command", {{"argv", json::array({"sh", "-c", "echo changed=0 >&3"})}});
  CHECK(o.failed);
}

TEST_CASE_FIXTURE(ModuleFixture, "shell runs through sh, with stdin and a timeout") {
  auto o = Run("shell", {{"_raw_params", "echo $((1+2)) | tr 3 x; echo e >&2"}});
  REQUIRE_FALSE(o.failed);
  CHECK(o.changed);
  CHECK(o.result["stdout"] == "x");
  CHECK(o.result["stderr_lines"] == json::array({"e"}));

  o = Run("shell", {{"cmd", "read a; echo \"[$a]\""}, {"stdin", "hi"}});
  CHECK(o.result["stdout"] == "[hi]");

  o = Run("shell", {{"_raw_params", "exit 4"}});
  CHECK(o.failed);
  CHECK(o.result["rc"] == 4);

  o = Run("shell", {{"_raw_params", "sleep 20"}}, 300);
  CHECK(o.failed);
  CHECK(o.msg.find("timed out") != std::string::npos);
}

}  // namespace prov
