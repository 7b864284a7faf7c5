#include "cli.h"

#include <doctest/doctest.h>

#include <sstream>
#include <vector>

#include "client.h"
#include "testing/fake_daemon.h"
#include "verb.h"

namespace prov::ctl {
namespace {

// Runs provisionctl with `args` against an address where nothing listens, so
// no test depends on a daemon (Run: testing/fake_daemon.h).
Run Cli(std::vector<const char*> args) {
  args.insert(args.begin(), {"provisionctl", "--url", "http://127.0.0.1:1"});
  std::istringstream in;
  std::ostringstream out, err;
  int status = RunCli(static_cast<int>(args.size()), args.data(), {in, out, err, false});
  return {status, out.str(), err.str()};
}

std::vector<const char*> Words(const std::string& path, std::vector<std::string>& storage) {
  std::istringstream in(path);
  for (std::string w; in >> w;) storage.push_back(w);
  std::vector<const char*> out;
  for (const auto& w : storage) out.push_back(w.c_str());
  return out;
}

}  // namespace

TEST_CASE("every verb of the table is a command whose help comes from the table") {
  CurlGlobal curl;
  for (const auto& verb : Verbs()) {
    INFO(verb.path);
    std::vector<std::string> storage;
    auto args = Words(verb.path, storage);
    args.push_back("--help");
    Run r = Cli(args);
    CHECK(r.status == kExitOk);
    CHECK(r.out.find(std::string("Usage: provisionctl ") + verb.synopsis) != std::string::npos);
    CHECK(r.out.find(verb.summary) != std::string::npos);
    CHECK(r.out.find(verb.description) != std::string::npos);
  }
}

TEST_CASE("doc describes every verb with its options") {
  CurlGlobal curl;
  Run r = Cli({"doc"});
  CHECK(r.status == kExitOk);
  for (const auto& verb : Verbs()) {
    INFO(verb.path);
    CHECK(r.out.find(std::string("provisionctl ") + verb.synopsis + "\n") != std::string::npos);
  }
  CHECK(r.out.find("--reason TEXT Needs: --state") != std::string::npos);
  CHECK(r.out.find("PROVISIOND_TOKEN") != std::string::npos);
}

TEST_CASE("usage errors exit 2 before anything is sent") {
  CurlGlobal curl;
  const std::vector<std::vector<const char*>> cases = {
      {},
      {"bogus"},
      {"node"},
      {"node", "list", "--state", "bogus"},
      {"node", "list", "node[0-"},
      {"node", "show"},
      {"node", "add", "node0"},
      {"node", "set", "node0"},
      {"node", "set", "node[0-3]", "--ip", "10.0.0.1"},
      {"node", "set", "node[0-", "--state", "enrolled"},
      {"node", "set", "node0", "--state", "bogus"},
      {"node", "set", "node0", "--reason", "why"},
      {"node", "set", "node0", "--profile", "v0.1", "--no-profile"},
      {"node", "rm", "node[3-1]"},
      {"node", "why"},
      {"node", "power", "on"},
      {"node", "power", "reboot", "node0"},
      {"node", "power", "on", "node[0-"},
      {"node", "set", "node0", "--power", "bogus"},
      {"node", "set", "node0", "--uefi-loader", "shim"},
      {"node", "add", "node0", "--mac", "52:54:00:00:00:01", "--power", "ipmi"},
      {"node", "set", "node0", "--power", "driver=ipmi"},
      {"node", "set", "node0", "--power", "wol,address=10.0.0.5"},
      {"node", "set", "node[0-1]", "--power", "driver=ipmi,address=10.0.0.5"},
      {"image", "import", "lab", "--kernel", "vmlinuz"},
      {"image", "import", "a/b", "--kernel", "vmlinuz", "--initrd", "initrd.img"},
      {"image", "import", "--kernel", "vmlinuz", "--initrd", "initrd.img"},
      {"events", "--limit", "0"},
      {"events", "--since", "-1"},
  };
  for (const auto& args : cases) {
    std::string joined;
    for (const char* a : args) joined += std::string(a) + " ";
    INFO(joined);
    Run r = Cli(args);
    CHECK(r.status == kExitUsage);
    CHECK(r.err.find("cannot reach") == std::string::npos);
  }
}

TEST_CASE("an unreachable provisiond fails with exit 1 and says where it looked") {
  CurlGlobal curl;
  Run r = Cli({"status"});
  CHECK(r.status == kExitFailed);
  CHECK(r.err.find("provisionctl: cannot reach provisiond at http://127.0.0.1:1") == 0);
  // A hostlist stops at the first unreachable node rather than repeating it.
  r = Cli({"node", "rm", "node[0-9]"});
  CHECK(r.status == kExitFailed);
  CHECK(r.err.find("cannot reach") == r.err.rfind("cannot reach"));
}

}  // namespace prov::ctl
