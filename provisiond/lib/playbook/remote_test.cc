// LocalRemote, the Remote the modules' tests run on: a script's streams,
// exit code and fd 3, its timeout, and becoming another user. ChrootRemote
// the same inside a tiny root tree (busybox), and what it mounts there
// going away with the script.
#include "playbook/remote.h"

#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include "base/temp_dir.h"
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
  // Had Run waited for the script, it would have written `finished`.
  const std::string finished = dir / "finished";
  auto r = remote.Run("sleep 30 & echo $! > " + ShellQuote(dir / "pid") + "; sleep 30; touch " +
                          ShellQuote(finished),
                      "", "", 300);
  REQUIRE(r.ok());
  CHECK(r->timed_out);
  CHECK_FALSE(std::filesystem::exists(finished));
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

namespace {

// Whether ChrootRemote can run here: it mounts and chroots (root), in a
// mount namespace of its own, into a tree made of the static busybox.
bool ChrootRemoteCanRun() {
  if (geteuid() != 0) {
    MESSAGE("skipped: ChrootRemote needs root");
    return false;
  }
  if (system("unshare --mount --uts true >/dev/null 2>&1") != 0) {
    MESSAGE("skipped: unshare --mount --uts fails here");
    return false;
  }
  if (!std::filesystem::exists("/bin/busybox")) {
    MESSAGE("skipped: no /bin/busybox (busybox-static) to build a root tree from");
    return false;
  }
  return true;
}

// A root tree: /usr/bin/busybox, /bin/<applet> links to it, a marker file
// and an /etc/resolv.conf of its own; no /proc, /sys, /dev, /tmp or /run
// (ChrootRemote makes its mount points).
struct ChrootRemoteTree {
  TempDir dir{"provisiond-chroot-test"};
  std::string root = dir.path() + "/root";

  ChrootRemoteTree() {
    namespace fs = std::filesystem;
    fs::create_directories(root + "/usr/bin");
    fs::create_directories(root + "/bin");
    fs::create_directories(root + "/etc");
    fs::copy_file("/bin/busybox", root + "/usr/bin/busybox");
    for (const char* applet :
         {"sh", "cat", "echo", "ls", "id", "mkdir", "test", "sleep", "hostname", "grep", "env"})
      fs::create_symlink("../usr/bin/busybox", root + "/bin/" + applet);
    PutFile(root + "/image-marker", "");
    PutFile(root + "/etc/resolv.conf", "nameserver 192.0.2.1\n");
  }

  // Whether anything is mounted at or under the tree, as this process sees.
  bool Mounted() const {
    std::ifstream in("/proc/self/mountinfo");
    std::string line;
    while (std::getline(in, line))
      if (line.find(" " + root + " ") != std::string::npos ||
          line.find(" " + root + "/") != std::string::npos)
        return true;
    return false;
  }
};

}  // namespace

TEST_CASE("ChrootRemote runs a script in the tree with stdin, stdout, stderr, exit code and fd 3") {
  if (!ChrootRemoteCanRun()) return;
  ChrootRemoteTree tree;
  ChrootRemote remote("image:test", tree.root);
  CHECK(remote.node() == "image:test");
  auto r = remote.Run("read x; echo \"got $x\"; echo oops >&2; echo changed=1 >&3; exit 3",
                      "hello\n", "", 10000);
  REQUIRE(r.ok());
  INFO(r->err);
  CHECK(r->exit_code == 3);
  CHECK(r->out == "got hello\n");
  CHECK(r->err == "oops\n");
  CHECK(r->meta == "changed=1\n");
  CHECK_FALSE(r->timed_out);
  // As root, named or not: the tree's /bin/sh as uid 0.
  r = remote.Run("id -u", "", "root", 10000);
  REQUIRE(r.ok());
  CHECK(r->exit_code == 0);
  CHECK(r->out == "0\n");
  CHECK_FALSE(tree.Mounted());
}

TEST_CASE("ChrootRemote sees the tree as / with proc, and what /tmp and /run get never lands") {
  if (!ChrootRemoteCanRun()) return;
  namespace fs = std::filesystem;
  ChrootRemoteTree tree;
  ChrootRemote remote("image:test", tree.root);
  auto r = remote.Run(
      "ls /; test -d /proc/self && echo proc=ok >&3; cat /proc/1/comm >/dev/null && "
      "echo comm=ok >&3; test -c /dev/null && echo dev=ok >&3; echo x >/tmp/left && "
      "echo x >/run/left && echo tmp=ok >&3; grep -q ' /tmp ' /proc/self/mountinfo && "
      "echo tmpfs=ok >&3",
      "", "", 10000);
  REQUIRE(r.ok());
  INFO(r->err);
  CHECK(r->exit_code == 0);
  // The tree's content, none of this machine's; the mount points made.
  CHECK(r->out == "bin\ndev\netc\nimage-marker\nproc\nrun\nsys\ntmp\nusr\n");
  CHECK(r->meta == "proc=ok\ncomm=ok\ndev=ok\ntmp=ok\ntmpfs=ok\n");
  // Nothing the script wrote to /tmp or /run is in the tree, and nothing
  // stays mounted: the mount points are empty folders.
  for (const char* d : {"proc", "sys", "dev", "tmp", "run"}) {
    CHECK_MESSAGE(fs::is_directory(tree.root + "/" + d), d);
    CHECK_MESSAGE(fs::is_empty(tree.root + "/" + d), d);
  }
  CHECK((fs::status(tree.root + "/tmp").permissions() & fs::perms::sticky_bit) != fs::perms::none);
  CHECK_FALSE(tree.Mounted());
}

TEST_CASE("ChrootRemote's environment, resolv.conf and host name") {
  if (!ChrootRemoteCanRun()) return;
  ChrootRemoteTree tree;
  ChrootRemote remote("image:test", tree.root);
  // The daemon's environment passes (a proxy), with the tree's PATH and
  // root's HOME; TMPDIR (a folder of this machine) does not.
  struct Restore {
    std::string name;
    std::optional<std::string> old;
    Restore(const char* n, const char* value) : name(n) {
      if (const char* v = getenv(n)) old = v;
      setenv(n, value, 1);
    }
    ~Restore() {
      if (old)
        setenv(name.c_str(), old->c_str(), 1);
      else
        unsetenv(name.c_str());
    }
  } proxy("http_proxy", "http://proxy.example:3128"), tmpdir("TMPDIR", "/nonexistent-tmpdir");
  auto r = remote.Run("echo \"$PATH|$HOME|$LC_ALL|$DEBIAN_FRONTEND|${TMPDIR-unset}|$http_proxy\"",
                      "", "", 10000);
  REQUIRE(r.ok());
  CHECK(r->out ==
        "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin|/root|C|noninteractive|"
        "unset|http://proxy.example:3128\n");

  // This machine's resolv.conf over the tree's, read-only; the tree's file
  // is as it was.
  if (std::filesystem::is_regular_file("/etc/resolv.conf")) {
    r = remote.Run("cat /etc/resolv.conf; echo 'nameserver 198.51.100.1' >/etc/resolv.conf", "", "",
                   10000);
    REQUIRE(r.ok());
    CHECK(r->out == FileText("/etc/resolv.conf"));
    CHECK(r->exit_code != 0);
    CHECK(FileText(tree.root + "/etc/resolv.conf") == "nameserver 192.0.2.1\n");
  }

  // A host name set inside is the namespace's.
  char mine[256] = {};
  gethostname(mine, sizeof mine - 1);
  r = remote.Run("hostname image-stage-test && hostname", "", "", 10000);
  REQUIRE(r.ok());
  CHECK(r->out == "image-stage-test\n");
  char after[256] = {};
  gethostname(after, sizeof after - 1);
  CHECK(std::string(after) == mine);
  CHECK_FALSE(tree.Mounted());
}

TEST_CASE("ChrootRemote stops a script and what it started at the timeout") {
  if (!ChrootRemoteCanRun()) return;
  ChrootRemoteTree tree;
  ChrootRemote remote("image:test", tree.root);
  // Had Run waited for the script, fd 3 would say `finished` too. (5 s: the
  // script must have started and said its child before the timeout, also on
  // a loaded machine; 500 ms was not always enough.)
  auto r = remote.Run("sleep 30 & echo pid=$! >&3; sleep 30; echo finished >&3", "", "", 5000);
  REQUIRE(r.ok());
  CHECK(r->timed_out);
  CHECK(r->exit_code == -1);
  CHECK(r->meta.find("finished") == std::string::npos);
  REQUIRE(r->meta.rfind("pid=", 0) == 0);
  pid_t child = std::atoi(r->meta.c_str() + 4);
  REQUIRE(child > 0);
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    gone = kill(child, 0) != 0;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(gone);
  // The namespace went with its last process, and its mounts with it.
  CHECK_FALSE(tree.Mounted());
}

TEST_CASE("ChrootRemote: a tree it cannot enter fails with a message naming it") {
  if (!ChrootRemoteCanRun()) return;
  TempDir empty("provisiond-chroot-empty");
  ChrootRemote remote("image:test", empty.path());
  auto r = remote.Run("echo never", "", "", 10000);
  REQUIRE(r.ok());
  CHECK(r->exit_code == 125);
  CHECK(r->out.empty());
  CHECK(r->err ==
        "provisiond: image root " + empty.path() + ": has no /bin/sh (not a root file system)\n");
  // Nothing was made in it.
  CHECK(std::filesystem::is_empty(empty.path()));

  ChrootRemote missing("image:test", empty.path() + "/nothere");
  r = missing.Run("echo never", "", "", 10000);
  REQUIRE(r.ok());
  CHECK(r->exit_code == 125);
  CHECK(r->err.find(empty.path() + "/nothere: not a directory") != std::string::npos);
}

}  // namespace prov
