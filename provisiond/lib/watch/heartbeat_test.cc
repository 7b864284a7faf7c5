#include "watch/heartbeat.h"

#include <doctest/doctest.h>

#include "base/temp_dir.h"

namespace prov {
namespace {

constexpr const char* kBootA = "0f6c1d3e-8b2a-4c59-9e07-4d1f2a3b5c6d";
constexpr const char* kBootB = "7a1e2b3c-4d5e-4f60-8a9b-0c1d2e3f4a5b";
constexpr const char* kHostKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHq root@inst0";

// An inventory with installed nodes and a fake network: what each node
// answers (a boot id, or nothing), its facts, and who was configured.
struct HeartbeatFixture {
  std::unique_ptr<Store> store = std::move(*Store::Open(":memory:"));
  TempDir snapshots{"snapshots"};
  Inventory inventory{*store, PROVISION_SOURCE_DIR "/profiles", PROVISION_SOURCE_DIR "/playbooks",
                      snapshots.path()};
  std::map<std::string, std::string> boot_of;  // absent: does not answer
  std::vector<std::string> read, configured;
  bool facts_fail = false;
  Heartbeat heartbeat{inventory,
                      {.boot_ids =
                           [this](const std::vector<NodeRecord>& nodes) {
                             std::vector<Result<std::string>> out;
                             for (const auto& n : nodes) {
                               read.push_back(n.name());
                               auto it = boot_of.find(n.name());
                               if (it == boot_of.end())
                                 out.push_back(Status::Error(Code::kUnavailable,
                                                             n.name() + ": connection refused"));
                               else
                                 out.push_back(it->second + "\n");
                             }
                             return out;
                           },
                       .facts = [this](const NodeRecord& n) -> Result<nlohmann::json> {
                         if (facts_fail) return Status::Error(Code::kUnavailable, "timed out");
                         return nlohmann::json{{"hostname", n.name()},
                                               {"memory_bytes", 1 << 30},
                                               {"boot_id", boot_of[n.name()]}};
                       },
                       .configure = [this](const std::string& n) { configured.push_back(n); }},
                      1000};

  // `name` adopted (booted in `boot`), then configured to `state`.
  void Installed(const std::string& name, const std::string& boot, NodeState state) {
    const std::string i = std::to_string(store->ListNodes().size());
    auto n = inventory.Enroll({name, "52:54:00:aa:00:0" + i, "10.99.0.5" + i, ""}, "test");
    REQUIRE_MESSAGE(n.ok(), n.status().message());
    nlohmann::json facts = {{"hostname", name}, {"memory_bytes", 1 << 30}};
    if (!boot.empty()) facts["boot_id"] = boot;
    auto adopted = inventory.Adopt(name, kHostKey, facts, "test");
    REQUIRE_MESSAGE(adopted.ok(), adopted.status().message());
    To(name, state);
  }
  void To(const std::string& name, NodeState state) {
    REQUIRE(store
                ->Transact([&](StoreTx& tx) -> Status {
                  auto n = tx.FindNode(name);
                  if (!n.ok()) return n.status();
                  n->profile_version = "lab";  // configured by a profile
                  if (Status u = tx.UpdateNode(*n); !u.ok()) return u;
                  if (state == NodeState::kBooted) return Status::Ok();
                  Status s = tx.Transition(*n, NodeState::kConfiguring, "test", "test");
                  if (!s.ok() || state == NodeState::kConfiguring) return s;
                  return tx.Transition(*n, state, "test", "test");
                })
                .ok());
  }
  std::vector<std::string> Events(const std::string& node, const std::string& kind) {
    std::vector<std::string> out;
    auto n = store->FindNode(node);
    for (const auto& e : store->ListEvents(0, n->id, 100))
      if (e.kind == kind) out.push_back(e.detail);
    return out;
  }
  NodeRecord Node(const std::string& name) { return *store->FindNode(name); }
};

TEST_CASE_FIXTURE(HeartbeatFixture,
                  "heartbeat: the same boot is quiet, another boot is a reboot that configures "
                  "the node again") {
  Installed("inst0", kBootA, NodeState::kReady);
  boot_of["inst0"] = kBootA;
  heartbeat.Beat();
  CHECK(read == std::vector<std::string>{"inst0"});
  CHECK(Events("inst0", "heartbeat").empty());
  CHECK(Node("inst0").state == NodeState::kReady);
  CHECK(configured.empty());

  boot_of["inst0"] = kBootB;  // it rebooted
  heartbeat.Beat();
  NodeRecord n = Node("inst0");
  CHECK(n.state == NodeState::kBooted);
  CHECK_FALSE(n.stage.has_value());  // no boot stages: it booted itself
  CHECK(nlohmann::json::parse(n.facts)["boot_id"] == kBootB);
  CHECK(configured == std::vector<std::string>{"inst0"});
  bool said = false;
  for (const auto& e : store->ListEvents(0, n.id, 100))
    if (e.detail.find("rebooted (boot 0f6c1d3e → 7a1e2b3c), seen by its heartbeat") !=
            std::string::npos &&
        e.who == "heartbeat")
      said = true;
  CHECK(said);

  // Booted, then being configured: not read (its configure run has it).
  read.clear();
  To("inst0", NodeState::kConfiguring);
  heartbeat.Beat();
  CHECK(read.empty());
}

TEST_CASE_FIXTURE(HeartbeatFixture,
                  "heartbeat: silence is one event, answering again another; only installed nodes "
                  "that are ready or failed are read") {
  Installed("inst0", kBootA, NodeState::kReady);
  Installed("inst1", kBootA, NodeState::kFailed);
  Installed("inst2", kBootA, NodeState::kConfiguring);
  auto netbooted = inventory.Enroll({"net0", "52:54:00:aa:01:01", "10.99.0.70", ""}, "test");
  REQUIRE(netbooted.ok());
  boot_of["inst1"] = kBootA;
  heartbeat.Beat();
  CHECK(read == std::vector<std::string>{"inst0", "inst1"});
  heartbeat.Beat();
  CHECK(Events("inst0", "heartbeat") ==
        std::vector<std::string>{"no answer over SSH: inst0: connection refused"});
  CHECK(Events("inst1", "heartbeat").empty());
  CHECK(Node("inst0").state == NodeState::kReady);  // silence alone changes no state
  boot_of["inst0"] = kBootA;
  heartbeat.Beat();
  CHECK(Events("inst0", "heartbeat").size() == 2);
  CHECK(Events("inst0", "heartbeat")[1] == "answers again over SSH");
  CHECK(configured.empty());
}

TEST_CASE_FIXTURE(HeartbeatFixture,
                  "heartbeat: a boot id it never had is kept; a reboot whose facts cannot be "
                  "read leaves the node as it was, with the reason") {
  Installed("inst0", "", NodeState::kReady);
  boot_of["inst0"] = kBootA;
  heartbeat.Beat();
  CHECK(nlohmann::json::parse(Node("inst0").facts)["boot_id"] == kBootA);
  CHECK(Events("inst0", "heartbeat").empty());

  boot_of["inst0"] = "not a boot id";
  heartbeat.Beat();
  CHECK(Events("inst0", "heartbeat") ==
        std::vector<std::string>{"no answer over SSH: it answered no boot id ('not a boot id')"});

  boot_of["inst0"] = kBootB;
  facts_fail = true;
  heartbeat.Beat();
  auto events = Events("inst0", "heartbeat");
  REQUIRE(events.size() == 3);
  CHECK(events[1] == "answers again over SSH");
  CHECK(events[2] ==
        "rebooted (boot 0f6c1d3e → 7a1e2b3c), but its facts could not be collected: timed out");
  CHECK(Node("inst0").state == NodeState::kReady);
  CHECK(configured.empty());
  heartbeat.Beat();  // still unreadable: tried again, not said again
  CHECK(Events("inst0", "heartbeat").size() == 3);
  facts_fail = false;
  heartbeat.Beat();  // the next round tries again
  CHECK(Node("inst0").state == NodeState::kBooted);
  CHECK(configured == std::vector<std::string>{"inst0"});
}

}  // namespace
}  // namespace prov
