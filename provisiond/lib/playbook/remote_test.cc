// LocalRemote, the Remote the modules' tests run on: a script's streams,
// exit code and fd 3, its timeout, and becoming another user.
#include "playbook/remote.h"

#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "playbook/modules/modules.h"
#include "playbook/modules/test_fixture.h"

namespace prov {

TEST_CASE("LocalRemote runs a script with stdin, stdout, stderr, exit code and fd 3") {
  LocalRemote remote;
  auto r = remote.Run("read x; echo \"got $x\"; echo oops >&2; echo changed=1 >&3; exit 3",
                      "hello\n", "", 5000);
  REQUIRE(r.ok());
  CHECK(r->exit_code == 3);
  CHECK(r->out == "got hello\n");
  CHECK(r->err == "oops\n");
  CHECK(r->meta == "changed=1\n");
  CHECK_FALSE(r->timed_out);
}

TEST_CASE("LocalRemote stops a script and what it started at the timeout") {
  LocalRemote remote;
  ScratchDir dir;
  auto start = std::chrono::steady_clock::now();
  auto r =
      remote.Run("sleep 30 & echo $! > " + ShellQuote(dir / "pid") + "; sleep 30", "", "", 300);
  auto took = std::chrono::steady_clock::now() - start;
  REQUIRE(r.ok());
  CHECK(r->timed_out);
  CHECK(took < std::chrono::seconds(5));
  // The background sleep was in the script's process group: gone too.
  pid_t child = std::atoi(FileText(dir / "pid").c_str());
  REQUIRE(child > 0);
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    gone = kill(child, 0) != 0;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(gone);
}

TEST_CASE("LocalRemote becomes another user and keeps fd 3") {
  if (geteuid() != 0) return;
  LocalRemote remote;
  auto r = remote.Run("id -un; echo who=$(id -un) >&3", "", "nobody", 5000);
  REQUIRE(r.ok());
  INFO(r->err);
  CHECK(r->exit_code == 0);
  CHECK(r->out == "nobody\n");
  CHECK(r->meta == "who=nobody\n");
  auto bad = remote.Run("true", "", "no-such-user-provisiond", 5000);
  REQUIRE(bad.ok());
  CHECK(bad->exit_code != 0);
}

}  // namespace prov
