#include "cli.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <vector>

#include "base/file_util.h"
#include "client.h"
#include "settings.h"
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
      {"node", "set", "node[0-1]", "--power", "driver=ipmi,address=10.0.0.5"},
      {"node", "set", "node0", "--power", "wol,on"},
      {"node", "set", "node0", "--power", "driver=wol,=x"},
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

TEST_CASE("no command, an unknown command or verb: the commands, and the nearest one") {
  CurlGlobal curl;
  Run r = Cli({});
  CHECK(r.status == kExitUsage);
  CHECK(r.err.find("provisionctl: which command?") == 0);
  CHECK(r.err.find("provisionctl node list") != std::string::npos);
  r = Cli({"node", "lst"});
  CHECK(r.status == kExitUsage);
  CHECK(r.err.find("provisionctl node: unknown command 'lst'; did you mean 'node list'?") == 0);
  CHECK(r.err.find("provisionctl node why") != std::string::npos);
  CHECK(r.err.find("provisionctl image") == std::string::npos);  // only node's
  r = Cli({"nod", "list"});
  CHECK(r.err.find("unknown command 'nod'; did you mean 'node'?") != std::string::npos);
  r = Cli({"profle", "apply", "v0.2"});
  CHECK(r.err.find("did you mean 'profile'?") != std::string::npos);
  r = Cli({"node"});
  CHECK(r.status == kExitUsage);
  CHECK(r.err.find("provisionctl node: which one?") == 0);
  r = Cli({"zzzzzz"});
  CHECK(r.err.find("did you mean") == std::string::npos);
  CHECK(r.err.find("Commands:") != std::string::npos);
}

TEST_CASE("the config file: key: value, errors at file:line, flags and environment win") {
  auto s = ParseSettings(
      "# laptop\nurl: https://10.77.0.1:8443\ntoken_file: token\nfingerprint: 'AB:CD'\n",
      "/home/op/.config/provisionctl/config");
  REQUIRE_MESSAGE(s.ok(), s.status().message());
  CHECK(s->url == "https://10.77.0.1:8443");
  CHECK(s->token_file == "/home/op/.config/provisionctl/token");
  CHECK(s->fingerprint == "AB:CD");
  auto bad = ParseSettings("url: https://x\nurl_typo: y\n", "/c");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() ==
        "/c:2: unknown key 'url_typo' (known: url, token_file, ca_file, fingerprint)");
  CHECK_FALSE(ParseSettings("url: ftp://x\n", "/c").ok());
  CHECK_FALSE(ParseSettings("url\n", "/c").ok());

  // Through the command line: the file's URL is used, a flag overrides it.
  CurlGlobal curl;
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("provisionctl-cfg-" + std::to_string(getpid()));
  fs::create_directories(dir);
  REQUIRE(WriteFileAtomic((dir / "config").string(), "url: http://127.0.0.1:2\n").ok());
  setenv("PROVISIONCTL_CONFIG", (dir / "config").c_str(), 1);
  std::vector<const char*> args = {"provisionctl", "status"};
  std::istringstream in;
  std::ostringstream out, err;
  int status = RunCli(static_cast<int>(args.size()), args.data(), {in, out, err, false});
  CHECK(status == kExitFailed);
  CHECK(err.str().find("provisionctl: cannot reach provisiond at http://127.0.0.1:2") == 0);
  Run flag = Cli({"status"});  // --url http://127.0.0.1:1
  CHECK(flag.err.find("provisionctl: cannot reach provisiond at http://127.0.0.1:1") == 0);
  REQUIRE(WriteFileAtomic((dir / "config").string(), "bogus: 1\n").ok());
  Run broken = Cli({"status"});
  CHECK(broken.status == kExitUsage);
  CHECK(broken.err.find((dir / "config").string() + ":1: unknown key 'bogus'") !=
        std::string::npos);
  unsetenv("PROVISIONCTL_CONFIG");
  fs::remove_all(dir);
}

TEST_CASE("completion: nouns, verbs and options from the table, names from provisiond") {
  CurlGlobal curl;
  FakeDaemon d;
  d.Add("GET", "/api/v1/nodes", [](const HttpRequest&) {
    return HttpResponse::Json(
        200,
        {{"nodes", {{{"hostname", "gpu02"}}, {{"hostname", "gpu01"}}, {{"hostname", "cpu1"}}}}});
  });
  d.Add("GET", "/api/v1/profiles", [](const HttpRequest&) {
    return HttpResponse::Json(200, {{"profiles", {{{"version", "v0.2"}}, {{"version", "lab"}}}}});
  });
  CHECK(d.Cli({"__complete", "im"}).out == "image\n");
  CHECK(d.Cli({"__complete", "image", ""}).out == "list\nshow\nbuild\nimport\nverify\nrm\nprune\n");
  CHECK(d.Cli({"__complete", "node", "storage", ""}).out == "wipe\n");
  const std::string options = d.Cli({"__complete", "image", "build", "--"}).out;
  CHECK(options.find("--no-follow\n") != std::string::npos);
  CHECK(options.find("--url\n") != std::string::npos);           // a global one
  CHECK(options.find("--help\n") == options.rfind("--help\n"));  // once
  // Without a token, no names (and no request).
  unsetenv("PROVISIOND_TOKEN");
  CHECK(d.Cli({"__complete", "node", "show", ""}).out.empty());
  setenv("PROVISIOND_TOKEN", "completion-token", 1);
  CHECK(d.Cli({"__complete", "node", "show", "gpu"}).out == "gpu01\ngpu02\n");
  CHECK(d.Cli({"__complete", "profile", "apply", ""}).out == "lab\nv0.2\n");
  // An option's value is not the positional: still the node's names.
  CHECK(d.Cli({"__complete", "node", "set", "--profile", "lab", "c"}).out == "cpu1\n");
  // Once the positional is there, nothing more.
  CHECK(d.Cli({"__complete", "node", "show", "gpu01", ""}).out.empty());
  unsetenv("PROVISIOND_TOKEN");
}

}  // namespace prov::ctl
