// What the modules' tests share (modules/*_test.cc, and remote_test.cc for
// LocalRemote). They drive every module through LocalRemote on this machine,
// inside a temporary directory: each one changes on its first run, reports ok
// on the second, and fails with a message that names the problem. The user
// and group tests create and delete uniquely named system accounts (the tests
// run as root; they are skipped otherwise). Nothing is fetched from the
// network.
#pragma once

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "playbook/modules/modules.h"
#include "playbook/remote.h"

namespace prov {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct ScratchDir {
  std::string path;
  ScratchDir() {
    char tmpl[] = "/tmp/provisiond-modules-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return path + "/" + name; }
};

inline void PutFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  REQUIRE(out.good());
}

inline std::string FileText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline unsigned Mode(const std::string& path) {
  struct stat st {};
  REQUIRE(lstat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

// A module run against this machine.
struct ModuleFixture {
  ScratchDir dir;
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

inline void WriteExecutable(const std::string& path, const std::string& text) {
  PutFile(path, text);
  REQUIRE(chmod(path.c_str(), 0755) == 0);
}

inline bool WaitForFile(const std::string& path, int timeout_ms) {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < end) {
    if (fs::exists(path)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return fs::exists(path);
}

inline std::string UniqueName(const std::string& prefix) {
  return prefix + std::to_string(getpid() % 100000);
}

}  // namespace
}  // namespace prov
