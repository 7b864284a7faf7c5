// Drives every module through LocalRemote on this machine, inside a temporary
// directory: each one changes on its first run, reports ok on the second, and
// fails with a message that names the problem. The user and group tests
// create and delete uniquely named system accounts (the tests run as root;
// they are skipped otherwise). Nothing is fetched from the network.
#include "playbook/modules.h"

#include <doctest/doctest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "playbook/remote.h"

namespace prov {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/provisiond-modules-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return path + "/" + name; }
};

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  REQUIRE(out.good());
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

unsigned Mode(const std::string& path) {
  struct stat st {};
  REQUIRE(lstat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

// A module run against this machine.
struct Fixture {
  TempDir dir;
  LocalRemote remote{"testnode"};
  json vars = json::object();

  ModuleOutcome Run(const std::string& module, const json& args, int timeout_ms = 30000) {
    const ModuleSpec* spec = FindModule(module);
    REQUIRE_MESSAGE(spec != nullptr, module);
    ModuleContext ctx{remote, "", timeout_ms, dir.path, vars};
    ModuleOutcome o = spec->run(args, ctx);
    // The registered result always mirrors the outcome.
    CHECK(o.result["changed"] == o.changed);
    CHECK(o.result["failed"] == o.failed);
    return o;
  }
  // Runs twice: changed, then ok.
  void Idempotent(const std::string& module, const json& args) {
    ModuleOutcome first = Run(module, args);
    INFO(module << " " << args.dump() << ": " << first.msg << " " << first.result.dump());
    REQUIRE_FALSE(first.failed);
    CHECK(first.changed);
    ModuleOutcome second = Run(module, args);
    INFO("second: " << second.msg << " " << second.result.dump());
    REQUIRE_FALSE(second.failed);
    CHECK_FALSE(second.changed);
  }
};

// Puts `dir` first on PATH for the life of the object (fake systemctl,
// shutdown); LocalRemote's scripts inherit it.
struct PathPrefix {
  std::string old;
  explicit PathPrefix(const std::string& dir) {
    old = getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin";
    setenv("PATH", (dir + ":" + old).c_str(), 1);
  }
  ~PathPrefix() { setenv("PATH", old.c_str(), 1); }
};

void WriteExecutable(const std::string& path, const std::string& text) {
  WriteFile(path, text);
  REQUIRE(chmod(path.c_str(), 0755) == 0);
}

bool WaitForFile(const std::string& path, int timeout_ms) {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < end) {
    if (fs::exists(path)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return fs::exists(path);
}

std::string UniqueName(const std::string& prefix) {
  return prefix + std::to_string(getpid() % 100000);
}

}  // namespace

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
  TempDir dir;
  auto start = std::chrono::steady_clock::now();
  auto r =
      remote.Run("sleep 30 & echo $! > " + ShellQuote(dir / "pid") + "; sleep 30", "", "", 300);
  auto took = std::chrono::steady_clock::now() - start;
  REQUIRE(r.ok());
  CHECK(r->timed_out);
  CHECK(took < std::chrono::seconds(5));
  // The background sleep was in the script's process group: gone too.
  pid_t child = std::atoi(ReadFile(dir / "pid").c_str());
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

TEST_CASE_FIXTURE(Fixture, "command runs without a shell; creates/removes skip it") {
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

TEST_CASE_FIXTURE(Fixture, "shell runs through sh, with stdin and a timeout") {
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

TEST_CASE_FIXTURE(Fixture,
                  "copy content and src: checksum, temp + rename, mode only when it differs") {
  std::string dest = dir / "motd";
  Idempotent("copy", {{"dest", dest}, {"content", "hello\n"}, {"mode", "0600"}});
  CHECK(ReadFile(dest) == "hello\n");
  CHECK(Mode(dest) == 0600);

  // Only the mode differs: changed, content untouched.
  auto o = Run("copy", {{"dest", dest}, {"content", "hello\n"}, {"mode", "0640"}});
  CHECK(o.changed);
  CHECK(o.result["mode"] == "0640");
  CHECK(Mode(dest) == 0640);
  // YAML's unquoted 0644 arrives as the integer 420.
  o = Run("copy", {{"dest", dest}, {"content", "hello\n"}, {"mode", 420}});
  CHECK(o.changed);
  CHECK(Mode(dest) == 0644);
  o = Run("copy", {{"dest", dest}, {"content", "hello\n"}, {"mode", "u=rw,g=r,o=r"}});
  CHECK_FALSE(o.changed);

  // New content keeps the file's mode; owner given as it is: no change.
  o = Run("copy", {{"dest", dest}, {"content", "bye\n"}, {"owner", "root"}, {"backup", true}});
  CHECK(o.changed);
  CHECK(ReadFile(dest) == "bye\n");
  CHECK(Mode(dest) == 0644);
  REQUIRE(o.result.contains("backup_file"));
  CHECK(ReadFile(o.result["backup_file"].get<std::string>()) == "hello\n");
  // No temporary file left behind.
  for (const auto& e : fs::directory_iterator(dir.path))
    CHECK(e.path().filename().string().rfind(".provisiond.", 0) != 0);

  // force: no keeps an existing file.
  o = Run("copy", {{"dest", dest}, {"content", "other\n"}, {"force", "no"}});
  CHECK_FALSE(o.changed);
  CHECK(ReadFile(dest) == "bye\n");

  // src under playbook_dir/files/, and into a directory under the source's name.
  fs::create_directories(dir / "files");
  fs::create_directories(dir / "out");
  WriteFile(dir / "files/app.conf", "x=1\n");
  Idempotent("copy", {{"src", "app.conf"}, {"dest", dir / "out/"}});
  CHECK(ReadFile(dir / "out/app.conf") == "x=1\n");

  // Large content: checked first, sent only when it differs.
  std::string big(300 * 1024, 'z');
  Idempotent("copy", {{"dest", dir / "big"}, {"content", big}});
  CHECK(ReadFile(dir / "big") == big);
}

TEST_CASE_FIXTURE(Fixture, "copy errors name the problem") {
  auto o = Run("copy", {{"dest", dir / "nodir/file"}, {"content", "x"}});
  CHECK(o.failed);
  CHECK(o.msg.find("Destination directory") != std::string::npos);
  CHECK(o.msg.find("does not exist") != std::string::npos);

  o = Run("copy", {{"dest", dir / "f"}, {"src", "no-such-file"}});
  CHECK(o.failed);
  CHECK(o.msg.find("'no-such-file' not found") != std::string::npos);

  o = Run("copy", {{"dest", dir / "f"}, {"content", "x"}, {"mode", "0999"}});
  CHECK(o.failed);
  CHECK(o.msg.find("is not a mode") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "f"));

  o = Run("copy", {{"dest", dir / "f"}, {"content", "x"}, {"owner", "no-such-user-provisiond"}});
  CHECK(o.failed);
  CHECK(o.msg.find("chown no-such-user-provisiond") != std::string::npos);

  o = Run("copy", {{"dest", dir.path}, {"content", "x"}});
  CHECK(o.failed);
  CHECK(o.msg.find("is a directory") != std::string::npos);

  o = Run("copy", {{"dest", dir / "f"}, {"content", "x"}, {"state", "present"}});
  CHECK(o.failed);
  CHECK(o.msg.find("unknown argument 'state'") != std::string::npos);
}

TEST_CASE_FIXTURE(Fixture, "template renders its src with the task's variables") {
  fs::create_directories(dir / "templates");
  WriteFile(dir / "templates/greeting.j2", "Hello {{ who }}!\n");
  vars = {{"who", "world"}};
  std::string dest = dir / "greeting";
  Idempotent("template", {{"src", "greeting.j2"}, {"dest", dest}, {"mode", "0644"}});
  CHECK(ReadFile(dest) == "Hello world!\n");
  vars = {{"who", "nodes"}};
  auto o = Run("template", {{"src", "greeting.j2"}, {"dest", dest}});
  CHECK(o.changed);
  CHECK(ReadFile(dest) == "Hello nodes!\n");

  o = Run("template", {{"src", "missing.j2"}, {"dest", dest}});
  CHECK(o.failed);
  CHECK(o.msg.find("missing.j2") != std::string::npos);

  WriteFile(dir / "templates/broken.j2", "{% if %}\n");
  o = Run("template", {{"src", "broken.j2"}, {"dest", dest}});
  CHECK(o.failed);
  CHECK(o.msg.find("broken.j2") != std::string::npos);
}

TEST_CASE_FIXTURE(Fixture, "file: directory, touch, link, absent, attributes") {
  std::string d = dir / "a/b";
  Idempotent("file", {{"path", d}, {"state", "directory"}, {"mode", "0750"}});
  CHECK(fs::is_directory(d));
  CHECK(Mode(d) == 0750);
  auto o = Run("file", {{"path", d}, {"state", "directory"}, {"mode", "0755"}});
  CHECK(o.changed);
  CHECK(o.result["mode"] == "0755");

  // recurse: the mode reaches what is inside.
  WriteFile(d + "/inner", "x");
  chmod((d + "/inner").c_str(), 0600);
  Idempotent(
      "file",
      {{"path", dir / "a"}, {"state", "directory"}, {"recurse", true}, {"mode", "u+rwX,g+rX"}});
  CHECK((Mode(d + "/inner") & 0040) != 0);

  // touch changes every time (as in Ansible), unless the times are preserved.
  std::string t = dir / "touched";
  o = Run("file", {{"path", t}, {"state", "touch"}});
  CHECK(o.changed);
  CHECK(fs::exists(t));
  o = Run("file", {{"path", t}, {"state", "touch"}});
  CHECK(o.changed);
  Idempotent("file", {{"path", dir / "t2"},
                      {"state", "touch"},
                      {"modification_time", "preserve"},
                      {"access_time", "preserve"}});

  // state: file only fixes attributes of what exists.
  Idempotent("file", {{"path", t}, {"mode", "0604"}});
  CHECK(Mode(t) == 0604);

  std::string l = dir / "link";
  Idempotent("file", {{"path", l}, {"state", "link"}, {"src", t}});
  CHECK(fs::read_symlink(l) == t);
  o = Run("file", {{"path", l}, {"state", "link"}, {"src", "touched"}});
  CHECK(o.changed);
  CHECK(fs::read_symlink(l) == "touched");
  CHECK(o.result["state"] == "link");

  Idempotent("file", {{"path", l}, {"state", "absent"}});
  CHECK_FALSE(fs::exists(fs::symlink_status(l)));
  Idempotent("file", {{"path", dir / "a"}, {"state", "absent"}});
  CHECK_FALSE(fs::exists(dir / "a"));
}

TEST_CASE_FIXTURE(Fixture, "file errors name the problem") {
  auto o = Run("file", {{"path", dir / "missing"}, {"state", "file"}});
  CHECK(o.failed);
  CHECK(o.msg.find("is absent, cannot continue") != std::string::npos);

  WriteFile(dir / "plain", "x");
  o = Run("file", {{"path", dir / "plain"}, {"state", "directory"}});
  CHECK(o.failed);
  CHECK(o.msg.find("not a directory") != std::string::npos);

  o = Run("file", {{"path", dir / "plain"}, {"state", "link"}, {"src", "/etc/hostname"}});
  CHECK(o.failed);
  CHECK(o.msg.find("refusing to convert") != std::string::npos);
  // force converts.
  o = Run("file",
          {{"path", dir / "plain"}, {"state", "link"}, {"src", "/etc/hostname"}, {"force", true}});
  CHECK_FALSE(o.failed);
  CHECK(fs::is_symlink(dir / "plain"));

  o = Run("file", {{"path", dir / "l2"}, {"state", "link"}, {"src", dir / "nothing"}});
  CHECK(o.failed);
  CHECK(o.msg.find("does not exist") != std::string::npos);

  o = Run("file", {{"path", dir / "l3"}, {"state", "link"}});
  CHECK(o.failed);
  CHECK(o.msg.find("src is required") != std::string::npos);

  o = Run("file", {{"path", dir / "x"}, {"state", "directory"}, {"mode", "rwxr-xr-x"}});
  CHECK(o.failed);
  CHECK(o.msg.find("is not a mode") != std::string::npos);

  o = Run("file", {{"path", dir / "y"}, {"state", "folder"}});
  CHECK(o.failed);
  CHECK(o.msg.find("expected one of") != std::string::npos);

  o = Run("file", {{"path", dir / "nodir/sub/t"}, {"state", "touch"}});
  CHECK(o.failed);
  CHECK(o.msg.find("could not touch") != std::string::npos);
}

TEST_CASE_FIXTURE(Fixture, "lineinfile adds, replaces, inserts and removes lines") {
  std::string f = dir / "conf";
  Idempotent("lineinfile", {{"path", f}, {"line", "a=1"}, {"create", true}, {"mode", "0640"}});
  CHECK(ReadFile(f) == "a=1\n");
  CHECK(Mode(f) == 0640);

  WriteFile(f, "# header\nport=80\nname=x");  // no final newline
  Idempotent("lineinfile", {{"path", f}, {"regexp", "^port="}, {"line", "port=8080"}});
  CHECK(ReadFile(f) == "# header\nport=8080\nname=x");

  Idempotent("lineinfile", {{"path", f}, {"line", "last=1"}});
  CHECK(ReadFile(f) == "# header\nport=8080\nname=x\nlast=1\n");

  Idempotent("lineinfile", {{"path", f}, {"line", "after=1"}, {"insertafter", "^port="}});
  CHECK(ReadFile(f) == "# header\nport=8080\nafter=1\nname=x\nlast=1\n");

  Idempotent("lineinfile", {{"path", f}, {"line", "first=1"}, {"insertbefore", "BOF"}});
  CHECK(ReadFile(f).rfind("first=1\n# header\n", 0) == 0);

  Idempotent("lineinfile", {{"path", f}, {"line", "before=1"}, {"insertbefore", "^name="}});
  CHECK(ReadFile(f).find("before=1\nname=x\n") != std::string::npos);

  // The line exists though the regexp matches nothing: no duplicate.
  auto o = Run("lineinfile", {{"path", f}, {"regexp", "^nomatch"}, {"line", "last=1"}});
  CHECK_FALSE(o.changed);

  o = Run("lineinfile", {{"path", f}, {"regexp", "=1$"}, {"state", "absent"}});
  CHECK(o.changed);
  CHECK(o.msg == "4 line(s) removed");
  CHECK(ReadFile(f) == "# header\nport=8080\nname=x\n");
  o = Run("lineinfile", {{"path", f}, {"regexp", "=1$"}, {"state", "absent"}});
  CHECK_FALSE(o.changed);

  o = Run("lineinfile", {{"path", dir / "missing"}, {"line", "x"}});
  CHECK(o.failed);
  CHECK(o.msg.find("does not exist") != std::string::npos);
  o = Run("lineinfile", {{"path", dir / "missing"}, {"line", "x"}, {"state", "absent"}});
  CHECK_FALSE(o.failed);
  CHECK_FALSE(o.changed);

  o = Run("lineinfile", {{"path", f}, {"regexp", "([a-z"}, {"line", "x"}});
  CHECK(o.failed);
  CHECK(o.msg.find("invalid regular expression") != std::string::npos);

  o = Run("lineinfile", {{"path", f}, {"regexp", "^x"}});
  CHECK(o.failed);
  CHECK(o.msg.find("line is required") != std::string::npos);

  o = Run("lineinfile", {{"path", dir.path}, {"line", "x"}});
  CHECK(o.failed);
  CHECK(o.msg.find("not a regular file") != std::string::npos);
}

TEST_CASE_FIXTURE(Fixture, "group and user: create, change, remove a system account") {
  if (geteuid() != 0) return;
  const std::string g = UniqueName("provtg"), g2 = UniqueName("provtx"), u = UniqueName("provtu");
  struct Cleanup {
    std::string u, g, g2;
    ~Cleanup() {
      std::string cmd = "userdel -r " + u + " >/dev/null 2>&1; groupdel " + g +
                        " >/dev/null 2>&1; groupdel " + g2 + " >/dev/null 2>&1";
      (void)std::system(cmd.c_str());
    }
  } cleanup{u, g, g2};

  Idempotent("group", {{"name", g}, {"system", true}});
  Idempotent("group", {{"name", g2}, {"gid", 45678}});
  auto o = Run("group", {{"name", g2}, {"gid", 45679}});
  CHECK(o.changed);
  CHECK(o.result["gid"] == 45679);

  std::string home = dir / "home";
  Idempotent("user", {{"name", u},
                      {"system", true},
                      {"group", g},
                      {"shell", "/bin/sh"},
                      {"home", home},
                      {"create_home", true},
                      {"comment", "test user"}});
  CHECK(fs::is_directory(home));
  o = Run("user", {{"name", u}, {"shell", "/bin/bash"}});
  CHECK(o.changed);
  CHECK(o.result["shell"] == "/bin/bash");
  Idempotent("user", {{"name", u}, {"groups", json::array({g2})}, {"append", true}});
  CHECK(Run("user", {{"name", u}, {"groups", g2}}).changed == false);
  // A new account has no password: locked already. With one, locking changes it once.
  Idempotent("user", {{"name", u}, {"password", "$6$provisiond$notarealhash"}});
  Idempotent("user", {{"name", u}, {"password_lock", true}});
  CHECK_FALSE(Run("user", {{"name", u}, {"password", "$6$provisiond$notarealhash"}}).changed);

  o = Run("user", {{"name", UniqueName("provtn")}, {"group", "no-such-group-provisiond"}});
  CHECK(o.failed);
  CHECK(o.msg.find("useradd") != std::string::npos);
  CHECK(o.msg.find("no-such-group-provisiond") != std::string::npos);
  o = Run("user", {{"name", "bad name!"}});
  CHECK(o.failed);
  CHECK(o.msg.find("not a valid user name") != std::string::npos);

  Idempotent("user", {{"name", u}, {"state", "absent"}, {"remove", true}});
  Idempotent("group", {{"name", g2}, {"state", "absent"}});
  Idempotent("group", {{"name", g}, {"state", "absent"}});
}

TEST_CASE_FIXTURE(Fixture, "apt: an installed package is ok, nothing is fetched") {
  if (system("command -v dpkg-query >/dev/null 2>&1") != 0) return;
  auto o = Run("apt", {{"name", json::array({"coreutils", "dpkg"})}, {"state", "present"}});
  INFO(o.msg);
  CHECK_FALSE(o.failed);
  CHECK_FALSE(o.changed);
  o = Run("apt", {{"pkg", "coreutils"}});
  CHECK_FALSE(o.changed);
  // Absent and never installed: nothing to do.
  o = Run("apt", {{"name", "provisiond-no-such-package"}, {"state", "absent"}});
  CHECK_FALSE(o.failed);
  CHECK_FALSE(o.changed);
  o = Run("apt", {{"name", "Bad Name"}});
  CHECK(o.failed);
  CHECK(o.msg.find("not a package name") != std::string::npos);
  o = Run("apt", {{"state", "present"}});
  CHECK(o.failed);
  o = Run("apt", {{"deb", dir / "missing.deb"}});
  CHECK(o.failed);
  CHECK(o.msg.find("not found on the node") != std::string::npos);
}

TEST_CASE_FIXTURE(Fixture, "apt_repository writes ppa and deb lines into its own sources") {
  // APT_CONFIG points apt-config (and so the module) at sources under dir.
  fs::create_directories(dir / "sources.list.d");
  WriteFile(dir / "sources.list", "deb http://deb.debian.org/debian bookworm main\n");
  WriteFile(dir / "apt.conf", "Dir::Etc::sourcelist \"" + (dir / "sources.list") +
                                  "\";\nDir::Etc::sourceparts \"" + (dir / "sources.list.d") +
                                  "\";\n");
  setenv("APT_CONFIG", (dir / "apt.conf").c_str(), 1);
  struct Unset {
    ~Unset() { unsetenv("APT_CONFIG"); }
  } unset;

  json ppa = {{"repo", "ppa:graphics-drivers/ppa"}, {"codename", "noble"}, {"update_cache", false}};
  Idempotent("apt_repository", ppa);
  std::string f = dir / "sources.list.d/graphics-drivers-ubuntu-ppa-noble.list";
  CHECK(ReadFile(f) ==
        "deb https://ppa.launchpadcontent.net/graphics-drivers/ppa/ubuntu noble main\n");
  CHECK(Mode(f) == 0644);

  json deb = {{"repo", "deb  [arch=amd64]  https://repo.example.com/apt stable main"},
              {"filename", "example"},
              {"update_cache", "no"}};
  Idempotent("apt_repository", deb);
  CHECK(ReadFile(dir / "sources.list.d/example.list") ==
        "deb [arch=amd64] https://repo.example.com/apt stable main\n");

  // Already in sources.list: nothing to add.
  auto o = Run("apt_repository", {{"repo", "deb http://deb.debian.org/debian bookworm main"},
                                  {"update_cache", false}});
  CHECK_FALSE(o.changed);

  Idempotent("apt_repository", {{"repo", "deb https://x.example.org/debian stable main"},
                                {"signed_by", "/usr/share/keyrings/x.gpg"},
                                {"update_cache", false}});
  CHECK(ReadFile(dir / "sources.list.d/x_example_org_debian.list") ==
        "deb [signed-by=/usr/share/keyrings/x.gpg] https://x.example.org/debian stable main\n");

  json ppa_absent = ppa;
  ppa_absent["state"] = "absent";
  Idempotent("apt_repository", ppa_absent);
  CHECK_FALSE(fs::exists(f));

  o = Run("apt_repository", {{"repo", "http://not-a-line"}, {"update_cache", false}});
  CHECK(o.failed);
  CHECK(o.msg.find("must be a 'deb ...'") != std::string::npos);
}

TEST_CASE_FIXTURE(Fixture, "get_url fetches once, checks the checksum") {
  if (system("command -v curl >/dev/null 2>&1") != 0) return;
  WriteFile(dir / "source.bin", "payload\n");
  const std::string url = "file://" + (dir / "source.bin");
  const std::string sum =
      "sha256:" + std::string("3cbdbfcc9b7bc2d5ab0d4b46bbac3d3e2c1f2b0e9b2b1a9e0b4f0bd7a4e5ac7f");
  std::string dest = dir / "got.bin";
  Idempotent("get_url", {{"url", url}, {"dest", dest}, {"mode", "0600"}});
  CHECK(ReadFile(dest) == "payload\n");
  CHECK(Mode(dest) == 0600);

  // The right checksum of what is there: ok; a wrong one: fetched again and refused.
  auto stat = Run("stat", {{"path", dest}, {"checksum_algorithm", "sha256"}});
  std::string good = "sha256:" + stat.result["stat"]["checksum"].get<std::string>();
  auto o = Run("get_url", {{"url", url}, {"dest", dest}, {"checksum", good}});
  CHECK_FALSE(o.failed);
  CHECK_FALSE(o.changed);
  o = Run("get_url", {{"url", url}, {"dest", dir / "other.bin"}, {"checksum", sum}});
  CHECK(o.failed);
  CHECK(o.msg.find("did not match") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "other.bin"));

  // force: fetched again, but the same bytes: not changed.
  o = Run("get_url", {{"url", url}, {"dest", dest}, {"force", true}});
  CHECK_FALSE(o.changed);
  WriteFile(dir / "source.bin", "payload 2\n");
  o = Run("get_url", {{"url", url}, {"dest", dest}, {"force", true}});
  CHECK(o.changed);
  CHECK(ReadFile(dest) == "payload 2\n");

  o = Run("get_url", {{"url", "file://" + (dir / "absent")}, {"dest", dir / "x"}});
  CHECK(o.failed);
  CHECK(o.msg.find("Request failed") != std::string::npos);
  o = Run("get_url", {{"url", url}, {"dest", dir / "nodir/x"}});
  CHECK(o.failed);
  CHECK(o.msg.find("does not exist") != std::string::npos);
  o = Run("get_url", {{"url", url}, {"dest", dest}, {"checksum", "sha256"}});
  CHECK(o.failed);
  CHECK(o.msg.find("checksum must be") != std::string::npos);
}

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
      enable) touch "$d/$unit.enabled" ;;
      disable) rm -f "$d/$unit.enabled" ;;
      mask) touch "$d/$unit.masked" ;;
      unmask) rm -f "$d/$unit.masked" ;;
      *) echo "unknown verb $verb" >&2; exit 1 ;;
    esac ;;
esac
)SH";

TEST_CASE_FIXTURE(Fixture, "systemd changes only what differs (a stand-in systemctl)") {
  fs::create_directories(dir / "bin");
  fs::create_directories(dir / "units");
  WriteExecutable(dir / "bin/systemctl", kFakeSystemctl);
  WriteFile(dir / "units/web.service.unit", "");
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

TEST_CASE_FIXTURE(Fixture, "systemd against the real systemd, when PID 1 is systemd") {
  if (!fs::exists("/run/systemd/system") || geteuid() != 0) return;
  // A unit that exists on every systemd system and is safe to query.
  auto o = Run("systemd", {{"name", "systemd-journald.service"}, {"state", "started"}});
  CHECK_FALSE(o.failed);
  CHECK_FALSE(o.changed);
  o = Run("service", {{"name", "systemd-journald"}, {"state", "started"}});
  CHECK_FALSE(o.failed);
  CHECK_FALSE(o.changed);
}

TEST_CASE_FIXTURE(Fixture, "wait_for a path and a port, within its timeout") {
  std::string f = dir / "ready";
  WriteFile(f, "state: ready\n");
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
    WriteFile(dir / "later", "x");
  });
  o = Run("wait_for", {{"path", dir / "later"}, {"timeout", 20}, {"sleep", "0.1"}});
  writer.join();
  CHECK_FALSE(o.failed);

  auto start = std::chrono::steady_clock::now();
  o = Run("wait_for", {{"path", dir / "never"}, {"timeout", 1}, {"sleep", "0.2"}});
  CHECK(o.failed);
  CHECK(o.msg.find("Timeout when waiting for file") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));

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

TEST_CASE_FIXTURE(Fixture, "reboot issues a detached shutdown and tells the runner to reconnect") {
  fs::create_directories(dir / "bin");
  const std::string marker = dir / "shutdown-called";
  WriteExecutable(dir / "bin/shutdown", "#!/bin/sh\necho \"$@\" > " + ShellQuote(marker) +
                                            ".tmp && mv " + ShellQuote(marker) + ".tmp " +
                                            ShellQuote(marker) + "\n");
  PathPrefix path(dir / "bin");
  auto start = std::chrono::steady_clock::now();
  auto o = Run("reboot", {{"msg", "kernel update"}, {"reboot_timeout", 900}});
  // The module returns before the shutdown runs.
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
  CHECK_FALSE(o.failed);
  CHECK_FALSE(o.unreachable);
  CHECK(o.changed);
  CHECK(o.result["rebooted"] == true);
  CHECK(o.result["reboot_timeout"] == 900);
  CHECK(o.result["test_command"] == "whoami");
  CHECK_FALSE(o.result["boot_id_before"].get<std::string>().empty());
  REQUIRE(WaitForFile(marker, 10000));
  CHECK(ReadFile(marker) == "-r now kernel update\n");
}

TEST_CASE_FIXTURE(Fixture, "stat reports type, mode, owner and checksum") {
  std::string f = dir / "f";
  WriteFile(f, "abc");
  chmod(f.c_str(), 0640);
  auto o = Run("stat", {{"path", f}, {"checksum_algorithm", "sha256"}});
  REQUIRE_FALSE(o.failed);
  CHECK_FALSE(o.changed);
  const json& st = o.result["stat"];
  CHECK(st["exists"] == true);
  CHECK(st["isreg"] == true);
  CHECK(st["isdir"] == false);
  CHECK(st["mode"] == "0640");
  CHECK(st["size"] == 3);
  CHECK(st["uid"] == geteuid());
  CHECK(st["checksum"] == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(st["mtime"].get<double>() > 0);
  CHECK(!st["pw_name"].get<std::string>().empty());

  o = Run("stat", {{"path", f}});  // sha1 by default, as Ansible
  CHECK(o.result["stat"]["checksum"] == "a9993e364706816aba3e25717850c26c9cd0d89d");
  o = Run("stat", {{"path", f}, {"get_checksum", false}});
  CHECK_FALSE(o.result["stat"].contains("checksum"));

  fs::create_symlink(f, dir / "l");
  o = Run("stat", {{"path", dir / "l"}});
  CHECK(o.result["stat"]["islnk"] == true);
  CHECK(o.result["stat"]["lnk_source"] == f);
  o = Run("stat", {{"path", dir / "l"}, {"follow", true}});
  CHECK(o.result["stat"]["isreg"] == true);
  o = Run("stat", {{"path", dir.path}});
  CHECK(o.result["stat"]["isdir"] == true);
  o = Run("stat", {{"path", dir / "missing"}});
  CHECK_FALSE(o.failed);
  CHECK(o.result["stat"]["exists"] == false);
  o = Run("stat", {{"path", f}, {"checksum_algorithm", "crc"}});
  CHECK(o.failed);
}

TEST_CASE_FIXTURE(Fixture, "assert, debug, set_fact, fail, ping") {
  vars = {{"x", 3}, {"name", "n1"}};
  auto o = Run("assert", {{"that", json::array({"x == 3", "name == 'n1'"})}});
  CHECK_FALSE(o.failed);
  CHECK(o.msg == "All assertions passed");
  o = Run("assert", {{"that", "x > 5"}, {"fail_msg", "x too small"}});
  CHECK(o.failed);
  CHECK(o.msg == "x too small");
  CHECK(o.result["assertion"] == "x > 5");
  CHECK(o.result["evaluated_to"] == false);
  o = Run("assert", {{"that", json::array({"x == 3", "x == 4"})}, {"msg", "second"}});
  CHECK(o.failed);
  CHECK(o.msg == "second");
  CHECK(o.result["assertion"] == "x == 4");
  o = Run("assert", {{"that", "x == 3"}, {"success_msg", "fine"}});
  CHECK(o.msg == "fine");
  o = Run("assert", {{"that", "x =="}});
  CHECK(o.failed);
  CHECK(o.msg.find("x ==") != std::string::npos);

  o = Run("debug", {{"msg", "hello"}});
  CHECK(o.result["msg"] == "hello");
  CHECK_FALSE(o.changed);
  o = Run("debug", {{"var", "x"}});
  CHECK(o.result["x"] == 3);
  o = Run("debug", {{"var", "undefined_thing"}});
  CHECK(o.result["undefined_thing"] == "VARIABLE IS NOT DEFINED!");
  o = Run("debug", json::object());
  CHECK(o.result["msg"] == "Hello world!");

  o = Run("set_fact", {{"a", 1}, {"b", json::array({"x"})}, {"cacheable", true}});
  CHECK_FALSE(o.failed);
  CHECK_FALSE(o.changed);
  CHECK(o.result["ansible_facts"] == json({{"a", 1}, {"b", json::array({"x"})}}));
  o = Run("set_fact", {{"bad-name", 1}});
  CHECK(o.failed);

  o = Run("fail", {{"msg", "stop here"}});
  CHECK(o.failed);
  CHECK(o.msg == "stop here");
  CHECK(o.result["msg"] == "stop here");
  o = Run("fail", json::object());
  CHECK(o.msg == "Failed as requested from task");

  o = Run("ping", json::object());
  CHECK_FALSE(o.failed);
  CHECK(o.result["ping"] == "pong");
  o = Run("ansible.builtin.ping", {{"data", "crash"}});
  CHECK(o.failed);
}

}  // namespace prov
