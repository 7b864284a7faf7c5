// systemd, service, wait_for and reboot, run on this machine against
// stand-ins (test_fixture.h).
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "base/file_util.h"
#include "playbook/modules/modules.h"
#include "playbook/modules/test_fixture.h"

namespace prov {

namespace {

// A stand-in systemctl keeping unit state in files, for machines (such as
// build containers) without systemd as PID 1.
constexpr const char* kFakeSystemctl = R"SH(#!/bin/sh
d="$FAKE_SYSTEMD_DIR"
[ "$1" = --quiet ] && shift
verb=$1; shift
case "$verb" in
  daemon-reload) echo reload >> "$d/daemon-reloads"; exit 0 ;;
  show)
    props=""
    while [ $# -gt 0 ]; do case "$1" in -p) props="$props $2"; shift 2 ;; --value) value=1; shift ;; --) shift ;; *) unit=$1; shift ;; esac; done
    for p in $props; do
      case "$p" in
        LoadState) if [ -e "$d/$unit.unit" ]; then v=loaded; else v=not-found; fi ;;
        ActiveState) if [ -e "$d/$unit.active" ]; then v=active; else v=inactive; fi ;;
        SubState) if [ -e "$d/$unit.active" ]; then v=running; else v=dead; fi ;;
        UnitFileState) if [ -e "$d/$unit.masked" ]; then v=masked; elif [ -e "$d/$unit.enabled" ]; then v=enabled; else v=disabled; fi ;;
      esac
      if [ -n "$value" ]; then echo "$v"; else echo "$p=$v"; fi
    done ;;
  *)
    [ "$1" = --quiet ] && { quiet=1; shift; }
    [ "$1" = -- ] && shift
    unit=$1
    [ -e "$d/$unit.unit" ] || { echo "Unit $unit not found." >&2; exit 5; }
    case "$verb" in
      is-enabled) if [ -e "$d/$unit.masked" ]; then s=masked; elif [ -e "$d/$unit.enabled" ]; then s=enabled; else s=disabled; fi
        [ -n "$quiet" ] || echo $s; [ $s = enabled ] ;;
      start) touch "$d/$unit.active"; echo start >> "$d/$unit.log" ;;
      stop) rm -f "$d/$unit.active"; echo stop >> "$d/$unit.log" ;;
      restart) touch "$d/$unit.active"; echo restart >> "$d/$unit.log" ;;
      reload) echo reload >> "$d/$unit.log" ;;
      enable) touch "$d/$unit.enabled"; echo reload >> "$d/daemon-reloads" ;;
      disable) rm -f "$d/$unit.enabled"; echo reload >> "$d/daemon-reloads" ;;
      mask) touch "$d/$unit.masked" ;;
      unmask) rm -f "$d/$unit.masked" ;;
      *) echo "unknown verb $verb" >&2; exit 1 ;;
    esac ;;
esac
)SH";

}  // namespace

TEST_CASE_FIXTURE(ModuleFixture, "systemd changes only what differs (a stand-in systemctl)") {
  fs::create_directories(dir / "bin");
  fs::create_directories(dir / "units");
  WriteExecutable(dir / "bin/systemctl", kFakeSystemctl);
  PutFile(dir / "units/web.service.unit", "");
  setenv("FAKE_SYSTEMD_DIR", (dir / "units").c_str(), 1);
  PathPrefix path(dir / "bin");

  Idempotent("systemd", {{"name", "web.service"}, {"state", "started"}, {"enabled", true}});
  CHECK(fs::exists(dir / "units/web.service.active"));
  CHECK(fs::exists(dir / "units/web.service.enabled"));
  auto o = Run("systemd", {{"name", "web.service"}, {"state", "started"}});
  CHECK(o.result["status"]["ActiveState"] == "active");
  CHECK(o.result["status"]["UnitFileState"] == "enabled");

  o = Run("systemd", {{"name", "web.service"}, {"state", "restarted"}});
  CHECK(o.changed);
  CHECK(Run("systemd", {{"name", "web.service"}, {"state", "restarted"}}).changed);
  Idempotent("systemd", {{"name", "web.service"}, {"state", "stopped"}, {"enabled", false}});
  Idempotent("systemd", {{"name", "web.service"}, {"masked", true}});
  Idempotent("systemd", {{"name", "web.service"}, {"masked", false}});

  o = Run("systemd", {{"daemon_reload", true}});
  CHECK_FALSE(o.failed);
  CHECK_FALSE(o.changed);
  CHECK(fs::exists(dir / "units/daemon-reloads"));

  // Like systemctl, the stand-in's enable and disable reload: with
  // daemon_reload, a task that enables reloads once, not twice.
  auto reloads = [&] {
    auto r = ReadFile(dir / "units/daemon-reloads");
    return r.ok() ? std::count(r->begin(), r->end(), '\n') : 0;
  };
  fs::remove(dir / "units/daemon-reloads");
  o = Run("systemd", {{"name", "web.service"}, {"enabled", true}, {"daemon_reload", true}});
  CHECK(o.changed);
  CHECK(reloads() == 1);
  o = Run("systemd", {{"name", "web.service"}, {"enabled", true}, {"daemon_reload", true}});
  CHECK_FALSE(o.changed);
  CHECK(reloads() == 2);  // nothing to enable: the reload itself
  o = Run("systemd", {{"name", "web.service"}, {"enabled", false}, {"daemon_reload", true}});
  CHECK(o.changed);
  CHECK(reloads() == 3);
  CHECK_FALSE(fs::exists(dir / "units/web.service.enabled"));

  o = Run("systemd", {{"name", "nothere.service"}, {"state", "started"}});
  CHECK(o.failed);
  CHECK(o.msg.find("Could not find the requested service nothere.service") != std::string::npos);
  o = Run("systemd", {{"state", "started"}});
  CHECK(o.failed);
  CHECK(o.msg.find("name is required") != std::string::npos);
  o = Run("systemd", {{"name", "web.service"}, {"state", "running"}});
  CHECK(o.failed);
  CHECK(o.msg.find("expected one of") != std::string::npos);
  unsetenv("FAKE_SYSTEMD_DIR");
}

TEST_CASE_FIXTURE(ModuleFixture, "systemd and service at image stage: unit files, never a state") {
  fs::create_directories(dir / "bin");
  fs::create_directories(dir / "units");
  WriteExecutable(dir / "bin/systemctl", kFakeSystemctl);
  PutFile(dir / "units/web.service.unit", "");
  setenv("FAKE_SYSTEMD_DIR", (dir / "units").c_str(), 1);
  PathPrefix path(dir / "bin");
  vars["provisiond_stage"] = "image";

  // Enabled as asked; started never (no daemon of the image on this machine).
  auto o = Run("systemd", {{"name", "web.service"}, {"state", "started"}, {"enabled", true}});
  INFO(o.msg << " " << o.result.dump());
  CHECK_FALSE(o.failed);
  CHECK(o.changed);
  CHECK(o.msg ==
        "state: started not applied at image stage (no daemon of the image runs on the control "
        "node; an enabled unit starts when the node boots)");
  CHECK_FALSE(o.result.contains("skipped"));
  CHECK(fs::exists(dir / "units/web.service.enabled"));
  CHECK_FALSE(fs::exists(dir / "units/web.service.active"));
  CHECK_FALSE(fs::exists(dir / "units/web.service.log"));

  // Only a state: skipped, saying why; so is a restart (a handler's).
  for (const char* state : {"started", "restarted", "reloaded", "stopped"}) {
    o = Run("ansible.builtin.systemd", {{"name", "web.service"}, {"state", state}});
    CHECK_FALSE(o.failed);
    CHECK_FALSE(o.changed);
    CHECK(o.result["skipped"] == true);
    CHECK(o.msg.find(std::string("state: ") + state + " not applied at image stage") == 0);
  }
  CHECK_FALSE(fs::exists(dir / "units/web.service.log"));  // no start, stop or restart ran

  // daemon_reload: nothing to reload (no systemd runs the image's units;
  // systemctl in a chroot ignores it, or fails without systemd as PID 1).
  fs::remove(dir / "units/daemon-reloads");  // the stand-in's enable wrote it
  o = Run("systemd", {{"daemon_reload", true}});
  CHECK_FALSE(o.failed);
  CHECK(o.result["skipped"] == true);
  CHECK(o.msg.find("daemon_reload not needed at image stage") == 0);
  CHECK_FALSE(fs::exists(dir / "units/daemon-reloads"));
  o = Run("systemd", {{"name", "web.service"}, {"state", "restarted"}, {"daemon_reload", true}});
  CHECK(o.result["skipped"] == true);
  CHECK(o.msg.find("state: restarted not applied") == 0);
  CHECK(o.msg.find("; daemon_reload not needed") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "units/daemon-reloads"));
  CHECK_FALSE(fs::exists(dir / "units/web.service.log"));

  // service: in the tree no systemd runs, yet a tree with systemctl is a
  // systemd image: its unit files are what enabled changes.
  o = Run("service", {{"name", "web.service"}, {"state", "started"}, {"enabled", false}});
  CHECK_FALSE(o.failed);
  CHECK(o.changed);
  CHECK_FALSE(fs::exists(dir / "units/web.service.enabled"));
  CHECK_FALSE(fs::exists(dir / "units/web.service.active"));
  o = Run("ansible.builtin.service", {{"name", "web.service"}, {"state", "restarted"}});
  CHECK(o.result["skipped"] == true);
  Idempotent("systemd", {{"name", "web.service"}, {"masked", true}});

  // Argument errors are still errors.
  o = Run("systemd", {{"state", "started"}});
  CHECK(o.failed);
  CHECK(o.msg.find("name is required") != std::string::npos);

  // At node stage, said, the same task starts the unit.
  vars["provisiond_stage"] = "node";
  Idempotent("systemd", {{"name", "web.service"}, {"masked", false}});
  Idempotent("systemd", {{"name", "web.service"}, {"state", "started"}});
  CHECK(fs::exists(dir / "units/web.service.active"));
  unsetenv("FAKE_SYSTEMD_DIR");
}

TEST_CASE_FIXTURE(ModuleFixture, "reboot and wait_for of a port fail at image stage, saying why") {
  fs::create_directories(dir / "bin");
  const std::string marker = dir / "shutdown-called";
  WriteExecutable(dir / "bin/shutdown", "#!/bin/sh\ntouch " + ShellQuote(marker) + "\n");
  PathPrefix path(dir / "bin");
  vars["provisiond_stage"] = "image";
  auto o = Run("reboot", json::object());
  CHECK(o.failed);
  CHECK_FALSE(o.changed);
  CHECK(o.msg.find("reboot cannot run at image stage") == 0);
  CHECK(o.msg.find("when: provisiond_stage != 'image'") != std::string::npos);
  CHECK_FALSE(o.result.contains("rebooted"));
  o = Run("wait_for", {{"port", 22}, {"timeout", 1}});
  CHECK(o.failed);
  CHECK(o.msg.find("wait_for of port 22 cannot run at image stage") == 0);
  // A file in the tree is there to wait for.
  PutFile(dir / "ready", "");
  o = Run("wait_for", {{"path", dir / "ready"}, {"timeout", 1}});
  CHECK_FALSE(o.failed);
  CHECK_FALSE(fs::exists(marker));  // no script ran: no shutdown is on its way
}

TEST_CASE_FIXTURE(ModuleFixture, "systemd against the real systemd, when PID 1 is systemd") {
  if (!fs::exists("/run/systemd/system") || geteuid() != 0) return;
  // A unit that exists on every systemd system and is safe to query.
  auto o = Run("systemd", {{"name", "systemd-journald.service"}, {"state", "started"}});
  CHECK_FALSE(o.failed);
  CHECK_FALSE(o.changed);
  o = Run("service", {{"name", "systemd-journald"}, {"state", "started"}});
  CHECK_FALSE(o.failed);
  CHECK_FALSE(o.changed);
}

TEST_CASE_FIXTURE(ModuleFixture, "wait_for a path and a port, within its timeout") {
  std::string f = dir / "ready";
  PutFile(f, "state: ready\n");
  auto o = Run("wait_for", {{"path", f}});
  CHECK_FALSE(o.failed);
  CHECK_FALSE(o.changed);
  o = Run("wait_for", {{"path", f}, {"search_regex", "ready$"}});
  CHECK_FALSE(o.failed);
  o = Run("wait_for", {{"path", dir / "never"}, {"state", "absent"}});
  CHECK_FALSE(o.failed);

  // Appears while the module waits.
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    PutFile(dir / "later", "x");
  });
  o = Run("wait_for", {{"path", dir / "later"}, {"timeout", 20}, {"sleep", "0.1"}});
  writer.join();
  CHECK_FALSE(o.failed);

  o = Run("wait_for", {{"path", dir / "never"}, {"timeout", 1}, {"sleep", "0.2"}});
  CHECK(o.failed);
  CHECK(o.msg.find("Timeout when waiting for file") != std::string::npos);
  // Its own timeout, not the default of 300 s: what the module reports.
  CHECK(o.result["elapsed"].get<int>() < 60);

  // A listening port on 127.0.0.1.
  int s = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(s >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(listen(s, 8) == 0);
  socklen_t len = sizeof addr;
  getsockname(s, reinterpret_cast<sockaddr*>(&addr), &len);
  int port = ntohs(addr.sin_port);
  o = Run("wait_for", {{"port", port}, {"host", "127.0.0.1"}, {"timeout", 10}});
  CHECK_FALSE(o.failed);
  close(s);
  o = Run("wait_for", {{"port", port}, {"state", "stopped"}, {"timeout", 10}});
  CHECK_FALSE(o.failed);
  o = Run("wait_for", {{"port", port}, {"timeout", 1}, {"sleep", "0.2"}});
  CHECK(o.failed);
  CHECK(o.msg.find("Timeout when waiting for 127.0.0.1:" + std::to_string(port)) !=
        std::string::npos);

  o = Run("wait_for", {{"port", port}, {"path", f}});
  CHECK(o.failed);
}

TEST_CASE_FIXTURE(ModuleFixture,
                  "reboot issues a detached shutdown and tells the runner to reconnect") {
  fs::create_directories(dir / "bin");
  const std::string marker = dir / "shutdown-called";
  // The fake shutdown finishes only once the test lets it (or after 60 s):
  // a module that waited for it would find `marker` written when it returns.
  const std::string go = dir / "go";
  WriteExecutable(dir / "bin/shutdown",
                  "#!/bin/sh\ni=0; while [ ! -e " + ShellQuote(go) +
                      " ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\necho \"$@\" > " +
                      ShellQuote(marker) + ".tmp && mv " + ShellQuote(marker) + ".tmp " +
                      ShellQuote(marker) + "\n");
  PathPrefix path(dir / "bin");
  auto o = Run("reboot", {{"msg", "kernel update"}, {"reboot_timeout", 900}});
  // The module returns before the shutdown runs.
  CHECK_FALSE(fs::exists(marker));
  PutFile(go, "");
  CHECK_FALSE(o.failed);
  CHECK_FALSE(o.unreachable);
  CHECK(o.changed);
  CHECK(o.result["rebooted"] == true);
  CHECK(o.result["reboot_timeout"] == 900);
  CHECK(o.result["test_command"] == "whoami");
  CHECK_FALSE(o.result["boot_id_before"].get<std::string>().empty());
  REQUIRE(WaitForFile(marker, 20000));
  CHECK(FileText(marker) == "-r now kernel update\n");
}

}  // namespace prov

namespace prov {
namespace {

// Runs each script in a UTS and mount namespace of its own, where
// /etc/hostname is a file of the test's and the kernel's name starts as the
// last run left it: the hostname module sets names there, never this
// machine's.
class UtsRemote : public Remote {
 public:
  explicit UtsRemote(std::string dir) : dir_(std::move(dir)), local_("testnode") {}
  const std::string& node() const override { return local_.node(); }
  Result<RemoteResult> Run(const std::string& script, const std::string& input,
                           const std::string& become_user, int timeout_ms) override {
    const std::string inner = "mount --bind " + dir_ + "/hostname /etc/hostname || exit 97\n" +
                              "hostname \"$(cat " + dir_ + "/uts)\" || exit 97\n" +
                              "/bin/sh -c \"$1\"; rc=$?\n" + "cat /proc/sys/kernel/hostname >" +
                              dir_ + "/uts\nexit $rc\n";
    return local_.Run("exec unshare --uts --mount --propagation private /bin/sh -c " +
                          ShellQuote(inner) + " sh " + ShellQuote(script),
                      input, become_user, timeout_ms);
  }

 private:
  std::string dir_;
  LocalRemote local_;
};

}  // namespace

TEST_CASE("hostname: sets the kernel's name and /etc/hostname, in a namespace of its own") {
  if (geteuid() != 0 || system("unshare --uts --mount true 2>/dev/null") != 0) return;
  ScratchDir dir;
  PutFile(dir / "hostname", "before\n");
  PutFile(dir / "uts", "before\n");
  UtsRemote remote(dir.path);
  json vars = json::object();
  ModuleContext ctx{remote, "", 30000, dir.path, vars};
  const ModuleSpec* spec = FindModule("ansible.builtin.hostname");
  REQUIRE(spec != nullptr);
  char mine[256] = {};
  gethostname(mine, sizeof mine - 1);

  ModuleOutcome o = spec->run({{"name", "gpu0.cluster.lan"}}, ctx);
  INFO(o.msg << " " << o.result.dump());
  REQUIRE_FALSE(o.failed);
  CHECK(o.changed);
  CHECK(FileText(dir / "hostname") == "gpu0.cluster.lan\n");
  CHECK(FileText(dir / "uts") == "gpu0.cluster.lan\n");
  CHECK(o.result["ansible_facts"]["ansible_hostname"] == "gpu0");
  CHECK(o.result["ansible_facts"]["ansible_domain"] == "cluster.lan");
  o = spec->run({{"name", "gpu0.cluster.lan"}}, ctx);
  CHECK_FALSE(o.failed);
  CHECK_FALSE(o.changed);
  // Only the file differs: it alone is written.
  PutFile(dir / "hostname", "stale\n");
  o = spec->run({{"name", "gpu0.cluster.lan"}, {"use", "systemd"}}, ctx);
  CHECK(o.changed);
  CHECK(FileText(dir / "hostname") == "gpu0.cluster.lan\n");

  for (const char* bad : {"-lead", "a_b", "two words", "x\nNodeName=evil"}) {
    o = spec->run({{"name", bad}}, ctx);
    CHECK(o.failed);
    CHECK_MESSAGE(o.msg.find("is not a host name") != std::string::npos, o.msg);
  }
  char after[256] = {};
  gethostname(after, sizeof after - 1);
  CHECK(std::string(after) == mine);  // this machine's name never changed
}

}  // namespace prov
