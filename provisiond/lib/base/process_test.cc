#include "base/process.h"

#include "base/supervisor.h"

#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <mutex>

namespace prov {
namespace {
ProcessSpec Cmd(std::vector<std::string> argv) {
  ProcessSpec spec;
  spec.argv = std::move(argv);
  return spec;
}
// Starts `sleep 30 MARK` as no child of ours (its shell exits: it is
// reparented, as a provisiond's dnsmasq is when provisiond is killed); its pid.
pid_t Orphan(const std::string& mark) {
  auto r = RunProcess(
      Cmd({"/bin/sh", "-c", "/bin/sleep 30 " + mark + " >/dev/null 2>&1 & echo $!"}), 5000);
  REQUIRE(r.ok());
  pid_t pid = static_cast<pid_t>(std::stol(r->output));
  for (int i = 0; i < 200 && FindProcessesWithArg(mark).empty(); ++i) usleep(10000);
  REQUIRE(FindProcessesWithArg(mark) == std::vector<pid_t>{pid});
  return pid;
}

bool Gone(const std::string& mark) {
  for (int i = 0; i < 300; ++i) {
    if (FindProcessesWithArg(mark).empty()) return true;
    usleep(10000);
  }
  return false;
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

TEST_CASE("process: a process that is not our child is adopted, signalled, seen to exit, stopped") {
  const std::string mark = "0.00" + std::to_string(getpid()) + "1";
  pid_t pid = Orphan(mark);
  auto c = ChildProcess::Adopt(pid);
  REQUIRE(c.ok());
  CHECK(c->adopted());
  CHECK(c->pid() == pid);
  int status = 1;
  CHECK_FALSE(c->Reap(status));
  CHECK(c->Signal(SIGKILL).ok());
  bool exited = false;
  for (int i = 0; i < 300 && !(exited = c->Reap(status)); ++i) usleep(10000);
  CHECK(exited);
  CHECK(status == 0);  // unknown: init is its parent
  CHECK_FALSE(c->running());
  CHECK_FALSE(c->Signal(SIGTERM).ok());

  pid = Orphan(mark);
  c = ChildProcess::Adopt(pid);
  REQUIRE(c.ok());
  c->Stop(2000);
  CHECK_FALSE(c->running());
  CHECK(Gone(mark));
  // Gone (or a zombie init has not reaped yet): not adopted, or seen to have exited at once.
  auto again = ChildProcess::Adopt(pid);
  if (again.ok()) CHECK(again->Reap(status));
}

TEST_CASE(
    "supervisor: a leftover with the same config is adopted, restarted from its spec if it dies") {
  const std::string mark = "0.00" + std::to_string(getpid()) + "2";
  std::mutex mu;
  std::vector<std::string> events;
  auto record = [&](const std::string& e) {
    std::lock_guard lock(mu);
    events.push_back(e);
  };
  auto seen = [&](const std::string& text) {
    std::lock_guard lock(mu);
    for (const auto& e : events)
      if (e.find(text) != std::string::npos) return true;
    return false;
  };
  pid_t old = Orphan(mark);
  pid_t leftover = AdoptOrStopLeftover("sleeper", mark, true, record);
  CHECK(leftover == old);
  {
    auto p = SupervisedProcess::Start("sleeper", Cmd({"/bin/sleep", "30", mark}), "marking", record,
                                      20, nullptr, leftover);
    REQUIRE(p.ok());
    CHECK((*p)->pid() == old);
    CHECK(seen("adopted (pid " + std::to_string(old) + ")"));
    CHECK_FALSE(seen("started"));
    kill(old, SIGKILL);
    for (int i = 0; i < 500 && ((*p)->pid() == old || (*p)->pid() <= 0); ++i) usleep(10000);
    CHECK((*p)->pid() > 0);
    CHECK((*p)->pid() != old);
    CHECK(seen("(adopted) exited; restarting"));
    CHECK(seen("started (pid " + std::to_string((*p)->pid()) + ")"));
  }
  CHECK(Gone(mark));  // stopped with its supervisor

  // A changed config: the leftover is stopped, with an event, not adopted.
  old = Orphan(mark);
  CHECK(AdoptOrStopLeftover("sleeper", mark, false, record) == -1);
  CHECK(Gone(mark));
  CHECK(seen("stopped pid " + std::to_string(old) +
             ", left running by a provisiond that did not stop (its config changed)"));
}

}  // namespace prov
