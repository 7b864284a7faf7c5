#include "configure/command.h"

#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>

#include "base/temp_dir.h"
#include "configure/testing/fake_sessions.h"
#include "store/testing/test_database.h"

namespace prov {
namespace {

using testing::FakeNetwork;

struct CommandFixture {
  std::unique_ptr<Store> store = std::move(*Store::Open(::prov::testing::TestDatabase()));
  FakeNetwork net;
  Sessions sessions{*store, {}, net.Connector()};

  NodeRecord Add(const std::string& name, const std::string& ip) {
    NodeRecord n;
    n.hostname = name;
    n.mac = "52:54:00:00:04:0" + std::to_string(++count);
    n.ip = ip;
    n.host_key = "ssh-ed25519 AAAA" + name;
    if (!ip.empty()) net.Add(ip, n.host_key);
    Result<NodeRecord> added = Status::Internal("not run");
    REQUIRE(store
                ->Transact([&](StoreTx& tx) -> Status {
                  added = tx.InsertNode(n);
                  return added.status();
                })
                .ok());
    REQUIRE(added.ok());
    return *added;
  }
  std::vector<CommandResult> Run(const std::vector<std::string>& nodes, const std::string& cmd,
                                 int timeout_ms = 10000) {
    return RunCommandOnNodes(*store, sessions, nodes, cmd, "", timeout_ms);
  }
  int count = 0;
};

}  // namespace

TEST_CASE("command: every node's result, in the order asked, by the node's name") {
  CommandFixture f;
  NodeRecord a = f.Add("a1", "10.0.0.1");
  f.Add("a2", "10.0.0.2");
  auto results = f.Run({a.mac, "a2"}, "echo out; echo err >&2");
  REQUIRE(results.size() == 2);
  CHECK(results[0].node == "a1");  // asked by MAC, named by hostname
  CHECK(results[1].node == "a2");
  for (const auto& r : results) {
    CHECK(std::string(ToString(r.status)) == "ok");
    CHECK(r.exit_code == 0);
    CHECK(r.out == "out\n");
    CHECK(r.err == "err\n");
    CHECK(r.error.empty());
  }
  CHECK(f.net.connects() == 2);
  // The sessions are kept for the next command (and runs).
  f.Run({"a1", "a2"}, "true");
  CHECK(f.net.connects() == 2);
}

TEST_CASE("command: more nodes than workers all run; each stream keeps its end, bounded") {
  CommandFixture f;
  std::vector<std::string> names;
  for (size_t i = 0; i < kCommandWorkers + 6; ++i) {
    names.push_back("w" + std::to_string(i));
    f.Add(names.back(), "10.0.1." + std::to_string(i + 1));
  }
  auto results = f.Run(names, "head -c 100000 /dev/zero | tr '\\0' x; echo END");
  REQUIRE(results.size() == names.size());
  for (const auto& r : results) {
    CHECK(std::string(ToString(r.status)) == "ok");
    CHECK(r.out.size() < kCommandOutputBytes + 64);
    CHECK(r.out.rfind("[", 0) == 0);  // "[N bytes cut]"
    CHECK(r.out.size() > 4);
    CHECK(r.out.substr(r.out.size() - 4) == "END\n");
  }
}

TEST_CASE("command: failures per node, never for the others") {
  CommandFixture f;
  f.Add("ok1", "10.0.0.1");
  f.Add("down", "10.0.0.9");
  f.net.Unplug("10.0.0.9");
  f.Add("noip", "");
  auto results = f.Run({"ok1", "down", "ghost", "noip"}, "exit 7");
  REQUIRE(results.size() == 4);
  CHECK(std::string(ToString(results[0].status)) == "failed");
  CHECK(results[0].exit_code == 7);
  CHECK(results[0].error.empty());
  CHECK(std::string(ToString(results[1].status)) == "unreachable");
  CHECK(results[1].error.find("no SSH connection") != std::string::npos);
  CHECK(results[2].node == "ghost");
  CHECK(std::string(ToString(results[2].status)) == "failed");
  CHECK(!results[2].error.empty());
  CHECK(std::string(ToString(results[3].status)) == "unreachable");
  CHECK(results[3].error.find("has no address") != std::string::npos);
}

TEST_CASE("command: a command past its timeout") {
  CommandFixture f;
  f.Add("slow", "10.0.0.1");
  // Had the command been waited for, it would have written `finished`.
  TempDir dir;
  const std::string finished = dir.path() + "/finished";
  auto results = f.Run({"slow"}, "sleep 30; touch " + finished, 1000);
  CHECK_FALSE(std::filesystem::exists(finished));
  REQUIRE(results.size() == 1);
  CHECK(std::string(ToString(results[0].status)) == "timeout");
  CHECK(results[0].error == "timed out after 1 s");
}

TEST_CASE("command: a host key other than the pinned one is refused") {
  CommandFixture f;
  f.Add("moved", "10.0.0.1");
  f.net.Add("10.0.0.1", "ssh-ed25519 AAAAimpostor");
  auto results = f.Run({"moved"}, "true");
  CHECK(std::string(ToString(results[0].status)) == "failed");
  CHECK(results[0].error.find("host key changed") != std::string::npos);
}

TEST_CASE("command: a broken session is replaced by the next command") {
  CommandFixture f;
  f.Add("n1", "10.0.0.1");
  CHECK(std::string(ToString(f.Run({"n1"}, "true")[0].status)) == "ok");
  f.net.Unplug("10.0.0.1");
  f.net.Plug("10.0.0.1");  // the old session stays broken; a new one works
  CHECK(std::string(ToString(f.Run({"n1"}, "true")[0].status)) == "ok");
  CHECK(f.net.connects() == 2);
}

TEST_CASE("command: a node busy with a run gets a session of its own") {
  CommandFixture f;
  NodeRecord n = f.Add("busy", "10.0.0.1");
  auto run = f.sessions.Acquire(n.id);  // a run holds the node's session
  REQUIRE(run.Get(n).ok());
  auto results = f.Run({"busy"}, "echo hi");
  CHECK(std::string(ToString(results[0].status)) == "ok");
  CHECK(results[0].out == "hi\n");
  CHECK(f.net.connects() == 2);
}

TEST_CASE("command: results as JSON") {
  CommandResult r;
  r.node = "n1";
  r.status = CommandStatus::kOk;
  r.exit_code = 0;
  r.out = "hi\n";
  auto j = ToJson(r);
  CHECK(j["node"] == "n1");
  CHECK(j["stdout"] == "hi\n");
  CHECK(!j.contains("error"));
  r.error = "timed out after 1 s";
  CHECK(ToJson(r)["error"] == "timed out after 1 s");
}

}  // namespace prov
