// The configurator's path from phone-home to `ready` (and to `failed`, and
// resumed after a stop) on a fake network of nodes (testing/fake_sessions.h:
// scripts run on this machine, in this test's own folder) and a fake clock
// (base/testing/fake_clock.h): its retries and waits are asserted as the
// sleeps it asked for, never by waiting. Against real sshd targets:
// tests/integration/configure_test.sh.
#include "configure/configurator.h"

#include <doctest/doctest.h>

#include <filesystem>

#include "base/file_util.h"
#include "base/temp_dir.h"
#include "base/testing/fake_clock.h"
#include "configure/testing/fake_sessions.h"
#include "store/testing/test_database.h"

namespace prov {
namespace {

namespace fs = std::filesystem;

const std::string kKey1 = "ssh-ed25519 AAAAnode1";

// One profile "c1" covering n1 and n2: a playbook that leaves a mark per
// node in this test's folder, a health check that looks for n1's and one
// of the test's own.
struct ConfigureWorld {
  TempDir tmp{"configurator-test"};
  std::string marks = tmp.path() + "/marks";
  std::unique_ptr<Store> store = std::move(*Store::Open(::prov::testing::TestDatabase()));
  std::unique_ptr<Inventory> inventory;
  testing::FakeNetwork net;
  testing::FakeClock clock;
  std::unique_ptr<Configurator> configurator;

  explicit ConfigureWorld(const std::string& health_command = "", const std::string& extra = "") {
    Write(tmp.path() + "/profiles/c1/profile.yaml",
          "version: c1\nimage: {name: lab}\nplaybooks:\n  - playbook: site.yml\n"
          "health_checks:\n  - name: marked\n    command: test -e " +
              marks + "/n1\n  - name: own check\n    command: " +
              (health_command.empty() ? "true" : health_command) +
              "\nnodes: {hostlist: 'n[1-2]'}\n" + extra);
    Write(tmp.path() + "/playbooks/site.yml",
          "- hosts: all\n  tasks:\n    - name: mark\n      ansible.builtin.command: touch " +
              marks + "/{{ inventory_hostname }}\n");
    REQUIRE(MakeDirs(marks).ok());
    inventory = std::make_unique<Inventory>(*store, tmp.path() + "/profiles",
                                            tmp.path() + "/playbooks", tmp.path() + "/snapshots");
  }
  static void Write(const std::string& path, const std::string& text) {
    REQUIRE(MakeDirs(fs::path(path).parent_path().string()).ok());
    REQUIRE(WriteFileAtomic(path, text).ok());
  }
  void Start() {
    ConfigureSettings settings;
    settings.workers = 2;
    settings.connect_retry_s = 30;
    settings.connector = net.Connector();
    settings.clock = &clock;
    configurator = std::make_unique<Configurator>(*inventory, settings);
  }
  // Enrolled with the profile; `home`: phoned home (booted, with its address
  // and host key, on the fake network).
  NodeRecord Node(const std::string& name, const std::string& ip, bool home) {
    EnrollRequest r;
    r.hostname = name;
    r.mac = "52:54:00:00:02:0" + name.substr(1);
    r.ip = ip;
    r.profile = "c1";
    auto n = inventory->Enroll(r, "test");
    REQUIRE_MESSAGE(n.ok(), n.status().message());
    if (!home) return *n;
    net.Add(ip, kKey1);
    NodeRecord node = *n;
    Status s = store->Transact([&](StoreTx& tx) -> Status {
      node.state = NodeState::kBooted;
      node.host_key = kKey1;
      return tx.UpdateNode(node);
    });
    REQUIRE_MESSAGE(s.ok(), s.message());
    return node;
  }
  // Waits (bounded) on the store's events until the configurator is idle
  // and `name` has left booted and configuring.
  NodeRecord Settled(const std::string& name) {
    int64_t seen = 0;
    for (int i = 0; i < 600; ++i) {
      auto n = store->FindNode(name);
      REQUIRE(n.ok());
      if (configurator->active() == 0 && n->state != NodeState::kBooted &&
          n->state != NodeState::kConfiguring)
        return *n;
      seen = store->LastEventId();
      store->WaitForEvents(seen, 100);
    }
    FAIL("node " << name << " did not settle");
    return {};
  }
  std::vector<std::string> Events(const NodeRecord& n, const std::string& kind) {
    std::vector<std::string> out;
    for (const auto& e : store->ListEvents(0, n.id, 1000))
      if (e.kind == kind) out.push_back(e.detail);
    return out;
  }
  RunRecord LastRun(const NodeRecord& n) {
    auto runs =
        store->ListRuns(RunFilter{.node_id = n.id, .status = std::nullopt, .ids = {}, .limit = 1});
    REQUIRE(runs.size() == 1);
    return runs.front();
  }
};

bool Has(const std::vector<std::string>& list, const std::string& part) {
  for (const auto& s : list)
    if (s.find(part) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("configurator: a node that phoned home is configured over its session, then ready") {
  ConfigureWorld w;
  w.Start();
  NodeRecord n1 = w.Node("n1", "10.9.0.1", true);
  REQUIRE(w.configurator->Configure("n1", "hello"));
  NodeRecord done = w.Settled("n1");
  CHECK(done.state == NodeState::kReady);
  auto profile = w.inventory->Snapshot("c1");
  REQUIRE(profile.ok());
  CHECK(done.configured == (*profile)->sha256);
  CHECK(fs::exists(w.marks + "/n1"));  // the playbook ran through the session
  RunRecord run = w.LastRun(n1);
  CHECK(run.kind == "configure");
  CHECK(std::string(ToString(run.status)) == "ok");
  CHECK(run.who == "hello");
  auto states = w.Events(n1, "state");
  CHECK(Has(states, "booted -> configuring: profile c1: site.yml"));
  CHECK(Has(states, "configuring -> ready: profile c1 configured"));
  CHECK(w.net.connects() == 1);
  CHECK(w.clock.sleeps().empty());  // nothing waited
  // Configured with the same profile since its boot: not again unless forced.
  std::string why;
  CHECK_FALSE(w.configurator->Configure("n1", "test", false, &why));
  CHECK(why == "n1 is ready with profile c1 already");
  CHECK(w.configurator->Configure("n1", "test", true));
  CHECK(w.Settled("n1").state == NodeState::kReady);
  CHECK(w.net.connects() == 1);  // the session was kept
}

TEST_CASE("configurator: a failing health check fails the node, naming the check") {
  ConfigureWorld w("test -e " + std::string("/nonexistent/configurator-test-mark"));
  w.Start();
  NodeRecord n1 = w.Node("n1", "10.9.0.1", true);
  REQUIRE(w.configurator->Configure("n1", "hello"));
  NodeRecord done = w.Settled("n1");
  CHECK(done.state == NodeState::kFailed);
  CHECK_MESSAGE(done.reason.find("own check") != std::string::npos, done.reason);
  CHECK(fs::exists(w.marks + "/n1"));  // the playbook had run
  CHECK(std::string(ToString(w.LastRun(n1).status)) == "failed");
}

TEST_CASE("configurator: a node that does not answer is tried again, backing off, then failed") {
  ConfigureWorld w;
  w.Start();
  NodeRecord n1 = w.Node("n1", "10.9.0.1", true);
  w.net.Unplug("10.9.0.1");
  REQUIRE(w.configurator->Configure("n1", "hello"));
  NodeRecord done = w.Settled("n1");
  // connect_retry_s 30: 1 + 2 + 4 + 8 s, and 16 more would pass it.
  CHECK(w.clock.sleeps() == std::vector<int>{1000, 2000, 4000, 8000});
  CHECK(w.net.connects() == 5);
  CHECK(done.state == NodeState::kFailed);
  CHECK_MESSAGE(done.reason.find("ssh: node n1") != std::string::npos, done.reason);
  CHECK(std::string(ToString(w.LastRun(n1).status)) == "unreachable");
  CHECK_FALSE(fs::exists(w.marks + "/n1"));
}

TEST_CASE("configurator: wait_for_peers waits on the clock, then goes on without the missing") {
  ConfigureWorld w("", "wait_for_peers: 5\n");
  w.Start();
  NodeRecord n1 = w.Node("n1", "10.9.0.1", true);
  w.Node("n2", "10.9.0.2", false);  // enrolled, never phones home
  REQUIRE(w.configurator->Configure("n1", "hello"));
  NodeRecord done = w.Settled("n1");
  CHECK(done.state == NodeState::kReady);
  CHECK(w.clock.sleeps() == std::vector<int>(5, 1000));
  auto notes = w.Events(n1, "configure");
  CHECK(Has(notes, "waiting up to 5 s for the profile's other nodes to phone home: n2"));
  CHECK(Has(notes, "went on without n2 (not home after 5 s)"));
}

TEST_CASE("configurator: a run cut off by a stop is marked interrupted and resumed at start") {
  ConfigureWorld w;
  NodeRecord n1 = w.Node("n1", "10.9.0.1", true);
  // What a provisiond killed in the middle of n1's run left behind.
  Status s = w.store->Transact([&](StoreTx& tx) -> Status {
    NodeRecord n = n1;
    if (Status t = tx.Transition(n, NodeState::kConfiguring, "profile c1", "test"); !t.ok())
      return t;
    RunRecord run;
    run.node_id = n.id;
    run.node = "n1";
    run.kind = "configure";
    run.what = "c1";
    run.who = "test";
    return tx.InsertRun(run);
  });
  REQUIRE_MESSAGE(s.ok(), s.message());
  w.Start();  // marks the run interrupted
  RunRecord cut = w.LastRun(n1);
  CHECK(std::string(ToString(cut.status)) == "interrupted");
  CHECK(cut.message == "provisiond stopped while it ran");
  CHECK(w.configurator->ResumeCutOff("provisiond") == 1);
  NodeRecord done = w.Settled("n1");
  CHECK(done.state == NodeState::kReady);
  CHECK(std::string(ToString(w.LastRun(n1).status)) == "ok");
  CHECK(w.LastRun(n1).id > cut.id);
}

}  // namespace prov
