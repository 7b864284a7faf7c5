#include "watch/heartbeat.h"

#include <doctest/doctest.h>

#include "base/file_util.h"
#include "base/temp_dir.h"
#include "store/testing/test_database.h"

#include <filesystem>

namespace prov {
namespace {

constexpr const char* kBootA = "0f6c1d3e-8b2a-4c59-9e07-4d1f2a3b5c6d";
constexpr const char* kBootB = "7a1e2b3c-4d5e-4f60-8a9b-0c1d2e3f4a5b";
constexpr const char* kHostKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHq root@inst0";

// An inventory with installed nodes and a fake network: what each node
// answers (a boot id, or nothing), its facts, and who was configured.
// The shipped profiles, and lab-recovery: the lab profile with a recovery
// policy (silent 10 s, at most 2 power cycles an hour).
struct RecoveryProfiles {
  TempDir dir{"profiles"};
  RecoveryProfiles() {
    namespace fs = std::filesystem;
    fs::copy(PROVISION_SOURCE_DIR "/profiles", dir.path(), fs::copy_options::recursive);
    fs::copy(dir.path() + "/lab", dir.path() + "/lab-recovery", fs::copy_options::recursive);
    std::string yaml = *ReadFile(dir.path() + "/lab-recovery/profile.yaml");
    yaml.replace(yaml.find("version: lab\n"), 13, "version: lab-recovery\n");
    yaml += "recovery:\n  silent_for: 10\n  cycles: 2\n";
    REQUIRE(WriteFileAtomic(dir.path() + "/lab-recovery/profile.yaml", yaml, 0644).ok());
  }
};

struct HeartbeatFixture {
  std::unique_ptr<Store> store = std::move(*Store::Open(::prov::testing::TestDatabase()));
  TempDir snapshots{"snapshots"};
  RecoveryProfiles profiles;
  Inventory inventory{*store, profiles.dir.path(), PROVISION_SOURCE_DIR "/playbooks",
                      snapshots.path()};
  int64_t now_ms = 1'000'000;
  std::map<std::string, std::string> boot_of;  // absent: does not answer
  std::vector<std::string> read, configured, cycled;
  bool facts_fail = false;
  Heartbeat heartbeat{
      inventory,
      {.boot_ids =
           [this](const std::vector<NodeRecord>& nodes) {
             std::vector<Result<std::string>> out;
             for (const auto& n : nodes) {
               read.push_back(n.name());
               auto it = boot_of.find(n.name());
               if (it == boot_of.end())
                 out.push_back(
                     Status::Error(Code::kUnavailable, n.name() + ": connection refused"));
               else
                 out.push_back(it->second + "\n");
             }
             return out;
           },
       .facts = [this](const NodeRecord& n) -> Result<nlohmann::json> {
         if (facts_fail) return Status::Error(Code::kUnavailable, "timed out");
         return nlohmann::json{
             {"hostname", n.name()}, {"memory_bytes", 1 << 30}, {"boot_id", boot_of[n.name()]}};
       },
       .configure = [this](const std::string& n) { configured.push_back(n); },
       .power_cycle = [this](const NodeRecord& n, const std::string& why) -> Result<std::string> {
         cycled.push_back(n.name());
         store->RecordEvent({.node_id = n.id,
                             .node = n.name(),
                             .kind = "power",
                             .detail = "cycle (" + why + "): plug switched",
                             .who = "heartbeat"});
         return std::string("plug switched");
       },
       .now = [this] { return now_ms; }},
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
  // `name` netbooted with `profile` (its host key pinned at its phone-home).
  void Netbooted(const std::string& name, const std::string& profile, NodeState state) {
    const std::string i = std::to_string(store->ListNodes().size());
    auto n = inventory.Enroll({name, "52:54:00:bb:00:0" + i, "10.99.0.7" + i, ""}, "test");
    REQUIRE_MESSAGE(n.ok(), n.status().message());
    To(name, state, profile, kHostKey);
  }
  void To(const std::string& name, NodeState state, const std::string& profile = "lab",
          const std::string& host_key = "") {
    REQUIRE(store
                ->Transact([&](StoreTx& tx) -> Status {
                  auto n = tx.FindNode(name);
                  if (!n.ok()) return n.status();
                  n->profile_version = profile;  // configured by a profile
                  if (!host_key.empty()) n->host_key = host_key;
                  if (Status u = tx.UpdateNode(*n); !u.ok()) return u;
                  if (state == NodeState::kBooted) return Status::Ok();
                  if (state == NodeState::kMaintenance)
                    return tx.Transition(*n, state, "test", "test");
                  if (n->state == NodeState::kEnrolled)
                    if (Status b = tx.Transition(*n, NodeState::kBooting, "test", "test"); !b.ok())
                      return b;
                  if (n->state == NodeState::kBooting)
                    if (Status b = tx.Transition(*n, NodeState::kBooted, "test", "test"); !b.ok())
                      return b;
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
TEST_CASE_FIXTURE(HeartbeatFixture,
                  "heartbeat: a silent node of a profile with recovery is power-cycled, at most "
                  "`cycles` times a window, then failed; others are not") {
  Netbooted("net0", "lab-recovery", NodeState::kReady);
  Netbooted("net1", "lab", NodeState::kReady);           // no recovery: not read
  Netbooted("net2", "lab-recovery", NodeState::kReady);  // in maintenance below
  To("net2", NodeState::kMaintenance, "lab-recovery");
  boot_of["net0"] = kBootA;
  heartbeat.Beat();
  CHECK(read == std::vector<std::string>{"net0"});
  CHECK(Events("net0", "heartbeat").empty());

  boot_of.erase("net0");  // it hangs
  heartbeat.Beat();
  CHECK(Events("net0", "heartbeat") ==
        std::vector<std::string>{"no answer over SSH: net0: connection refused"});
  now_ms += 9'000;
  heartbeat.Beat();
  CHECK(cycled.empty());  // silent 9 s of 10
  now_ms += 2'000;
  heartbeat.Beat();
  REQUIRE(cycled == std::vector<std::string>{"net0"});
  auto power = Events("net0", "power");
  REQUIRE(power.size() == 1);
  CHECK(power[0] ==
        "cycle (recovery: no answer over SSH for 11 s, try 1 of 2 in 3600 s): plug switched");
  CHECK(Node("net0").state == NodeState::kBooting);  // its boot path takes it from here
  read.clear();
  now_ms += 60'000;
  heartbeat.Beat();
  CHECK(read.empty());  // not read while it boots
  CHECK(cycled.size() == 1);

  To("net0", NodeState::kReady, "lab-recovery");  // back after the cycle
  boot_of["net0"] = kBootA;
  heartbeat.Beat();
  CHECK(Events("net0", "heartbeat").back() == "answers again over SSH");
  boot_of.erase("net0");  // and hangs again
  heartbeat.Beat();
  now_ms += 10'000;
  heartbeat.Beat();
  CHECK(cycled.size() == 2);
  CHECK(Events("net0", "power").back().find("try 2 of 2") != std::string::npos);
  To("net0", NodeState::kReady, "lab-recovery");
  heartbeat.Beat();  // silent from its first round back, not from its cycle
  now_ms += 9'000;
  heartbeat.Beat();
  CHECK(Node("net0").state == NodeState::kReady);

  // Silent again after two cycles within the hour: failed, not cycled.
  now_ms += 1'000;
  heartbeat.Beat();
  CHECK(cycled.size() == 2);
  NodeRecord n = Node("net0");
  CHECK(n.state == NodeState::kFailed);
  CHECK(n.reason ==
        "no answer over SSH for 10 s after 2 power cycle(s) in the last 3600 s (its profile's "
        "recovery allows 2): not cycled again");
  now_ms += 60'000;
  heartbeat.Beat();
  CHECK(cycled.size() == 2);
  for (const char* other : {"net1", "net2"}) {
    CHECK(Events(other, "power").empty());
    CHECK(std::find(read.begin(), read.end(), other) == read.end());
  }
}

}  // namespace prov
