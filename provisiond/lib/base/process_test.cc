#include "base/process.h"

#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace prov {
namespace {
ProcessSpec Cmd(std::vector<std::string> argv) {
  ProcessSpec spec;
  spec.argv = std::move(argv);
  return spec;
}
}  // namespace

TEST_CASE("process: exit status, output, no shell") {
  auto r = RunProcess(Cmd({"/bin/echo", "a b", "$HOME;", "c"}), 5000);
  REQUIRE(r.ok());
  CHECK(r->exit_code == 0);
  CHECK(r->output == "a b $HOME; c\n");  // arguments are not interpreted by a shell
  auto f = RunProcess(Cmd({"/bin/sh", "-c", "echo oops >&2; exit 3"}), 5000);
  REQUIRE(f.ok());
  CHECK(f->exit_code == 3);
  CHECK(f->output == "oops\n");
}

TEST_CASE("process: the spec's environment replaces what it names of ours") {
  setenv("PROVISION_TEST_VAR", "inherited", 1);
  ProcessSpec spec =
      Cmd({"/bin/sh", "-c", "echo \"$PROVISION_TEST_VAR\"; env | grep -c '^PROVISION_TEST_VAR='"});
  spec.env = {"PROVISION_TEST_VAR=ours"};
  auto r = RunProcess(spec, 5000);
  unsetenv("PROVISION_TEST_VAR");
  REQUIRE(r.ok());
  CHECK(r->output == "ours\n1\n");
}

TEST_CASE("process: output lines reach the callback as they come") {
  std::vector<std::string> lines;
  auto r = RunProcess(Cmd({"/bin/sh", "-c", "echo one; echo two >&2; printf three"}), 5000,
                      [&](const std::string& l) { lines.push_back(l); });
  REQUIRE(r.ok());
  CHECK(lines == std::vector<std::string>{"one", "two", "three"});
}

TEST_CASE("process: relative programs are refused, missing ones fail clearly") {
  CHECK(RunProcess(Cmd({"echo", "x"}), 1000).status().message().find("full path") !=
        std::string::npos);
  auto r = RunProcess(Cmd({"/nonexistent/prog"}), 1000);
  CHECK_FALSE(r.ok());
  CHECK(r.status().message().find("cannot start /nonexistent/prog") != std::string::npos);
}

TEST_CASE("process: a private /run is empty and does not leak to the host") {
  if (geteuid() != 0) return;  // needs CAP_SYS_ADMIN
  ProcessSpec spec =
      Cmd({"/bin/sh", "-c", "ls -A /run | wc -l; touch /run/provision-private-test"});
  spec.private_run = true;
  auto r = RunProcess(spec, 5000);
  REQUIRE(r.ok());
  CHECK(r->exit_code == 0);
  CHECK(r->output == "0\n");
  CHECK(access("/run/provision-private-test", F_OK) != 0);
}

TEST_CASE("process: a timeout stops the program") {
  auto r = RunProcess(Cmd({"/bin/sleep", "30"}), 200);
  REQUIRE(r.ok());
  CHECK(r->timed_out);
  CHECK(r->exit_code == -1);
}

TEST_CASE("process: secrets are redacted in the command line") {
  ProcessSpec spec = Cmd({"/usr/bin/ipmitool", "-U", "admin", "-P", "hunter2"});
  spec.secret_args = {4};
  CHECK(DescribeCommand(spec) == "/usr/bin/ipmitool -U admin -P ***");
}

TEST_CASE("process: a child is stopped by its owner") {
  auto c = ChildProcess::Start(Cmd({"/bin/sleep", "30"}));
  REQUIRE(c.ok());
  pid_t pid = c->pid();
  CHECK(kill(pid, 0) == 0);
  int status = 0;
  CHECK_FALSE(c->Reap(status));
  c->Stop(1000);
  CHECK_FALSE(c->running());
  CHECK(kill(pid, 0) != 0);
}

TEST_CASE("process: processes left behind are found by an argument and stopped") {
  // sleep adds up its arguments: the second one only marks this process.
  const std::string mark = "0.00" + std::to_string(getpid());
  auto c = ChildProcess::Start(Cmd({"/bin/sleep", "30", mark}));
  REQUIRE(c.ok());
  pid_t pid = c->pid();
  // The child may still be between fork and exec (its cmdline is ours then).
  auto found = FindProcessesWithArg(mark);
  for (int i = 0; i < 200 && found.empty(); ++i) {
    usleep(10000);
    found = FindProcessesWithArg(mark);
  }
  REQUIRE(found.size() == 1);
  CHECK(found[0] == pid);
  CHECK(FindProcessesWithArg(mark + "1").empty());
  auto stopped = StopProcessesWithArg(mark, 2000);
  CHECK(stopped == found);
  int status = 0;
  for (int i = 0; i < 100 && !c->Reap(status); ++i) usleep(10000);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGTERM);
  CHECK(FindProcessesWithArg(mark).empty());
}

}  // namespace prov
