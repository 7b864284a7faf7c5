#include "api/profiles.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <map>

#include "api/test_fixture.h"
#include "base/file_util.h"
#include "store/testing/test_database.h"

namespace prov {
namespace {}  // namespace

TEST_CASE("api: apply v0.1, v0.2, v0.1 again: plans, idempotence, rollback") {
  api_test::Fixture f;
  for (int i = 0; i < 4; ++i)
    f.Add("node" + std::to_string(i), "52:54:00:00:00:0" + std::to_string(i));

  auto plan = f.CallJson("GET", "/api/v1/profiles/v0.1/plan");
  CHECK(plan["changes"] == true);
  CHECK(plan["nodes"].size() == 2);  // v0.1 covers node[0-1]
  // A plan changes nothing.
  CHECK(f.store->ListNodes()[0].profile_version.empty());

  auto applied = f.CallJson("POST", "/api/v1/profiles/v0.1/apply");
  CHECK(applied["changes"] == true);
  CHECK(f.CallJson("GET", "/api/v1/nodes?profile=v0.1")["count"] == 2);
  CHECK(f.CallJson("GET", "/api/v1/nodes/node0")["image"] == "ubuntu-arc");

  auto again = f.CallJson("POST", "/api/v1/profiles/v0.1/apply");
  CHECK(again["changes"] == false);
  for (const auto& n : again["nodes"]) CHECK(n["action"] == "unchanged");
  CHECK(f.store->AppliedProfiles().size() == 1);

  auto v2 = f.CallJson("POST", "/api/v1/profiles/v0.2/apply");
  CHECK(v2["changes"] == true);
  CHECK(v2["nodes"].size() == 4);
  CHECK(v2["nodes"][0]["reboot"] == true);
  CHECK(f.CallJson("GET", "/api/v1/nodes?profile=v0.2")["count"] == 4);
  CHECK(f.CallJson("GET", "/api/v1/nodes/node3")["image"] == "debian-amd-npu");

  // Rollback: node0-1 go back to v0.1; node2-3 are not covered and are released.
  auto back = f.CallJson("POST", "/api/v1/profiles/v0.1/apply");
  std::map<std::string, std::string> action;
  for (const auto& n : back["nodes"]) action[n["node"]] = n["action"];
  CHECK(action["node0"] == "assign");
  CHECK(action["node2"] == "release");
  CHECK(f.CallJson("GET", "/api/v1/nodes/node2")["profile"] == "");
  CHECK(f.CallJson("GET", "/api/v1/status")["applied_profile"]["version"] == "v0.1");
  CHECK(f.store->AppliedProfiles().size() == 3);
  auto profiles = f.CallJson("GET", "/api/v1/profiles");
  CHECK(profiles["history"].size() == 3);
}

TEST_CASE("api: a newly enrolled node covered by the applied profile gets it") {
  api_test::Fixture f;
  f.CallJson("POST", "/api/v1/profiles/v0.1/apply");
  f.Add("node1", "52:54:00:00:00:01");
  f.Add("other", "52:54:00:00:00:02");
  CHECK(f.CallJson("GET", "/api/v1/nodes/node1")["profile"] == "v0.1");
  CHECK(f.CallJson("GET", "/api/v1/nodes/other")["profile"] == "");
}

TEST_CASE("profiles: apply answers with what after_apply started") {
  api_test::Fixture f;
  f.Add("node0", "52:54:00:00:00:00");
  std::string seen_who;
  f.context.after_apply = [&](const Plan& plan, const std::string& who) {
    seen_who = who;
    return nlohmann::json{{"nodes", plan.nodes.size()}};
  };
  auto applied = f.CallJson("POST", "/api/v1/profiles/v0.1/apply");
  CHECK(applied["configure"]["nodes"] == applied["nodes"].size());
  CHECK(seen_who == "alice");
}

TEST_CASE("profiles: the list is read again when a profile's files change, from memory otherwise") {
  auto store = std::move(*Store::Open(::prov::testing::TestDatabase()));
  TempDir dir{"profiles"}, snapshots{"snapshots"};
  auto write = [&](const std::string& version, const std::string& text) {
    REQUIRE(MakeDirs(dir.path() + "/" + version).ok());
    REQUIRE(WriteFileAtomic(dir.path() + "/" + version + "/profile.yaml", text).ok());
  };
  write("a", "version: a\nimage: {name: lab}\nnodes: {pattern: \"a*\"}\n");
  Inventory inventory{*store, dir.path(), PROVISION_SOURCE_DIR "/playbooks", snapshots.path()};
  std::vector<std::string> errors;
  auto first = inventory.ListProfiles(errors);
  REQUIRE(first.size() == 1);
  CHECK(errors.empty());
  CHECK(inventory.ListProfiles(errors).at("a").sha256 == first.at("a").sha256);
  write("a", "version: a\nimage: {name: lab}\nnodes: {pattern: \"b*\"}\n");  // edited
  auto edited = inventory.ListProfiles(errors);
  CHECK(edited.at("a").sha256 != first.at("a").sha256);
  CHECK(edited.at("a").Covers("b1", "52:54:00:00:00:01"));
  write("b", "version: b\nimage: [not, closed\n");  // added, broken
  errors.clear();
  CHECK(inventory.ListProfiles(errors).size() == 1);
  CHECK(errors.size() == 1);
  errors.clear();
  inventory.ListProfiles(errors);  // unchanged: the errors come from memory too
  CHECK(errors.size() == 1);
  std::filesystem::remove_all(dir.path() + "/b");  // removed
  errors.clear();
  CHECK(inventory.ListProfiles(errors).size() == 1);
  CHECK(errors.empty());
}

TEST_CASE(
    "profiles: a storage rule no disk of a known node matches is a plan error naming the "
    "node; an installed machine's disks are its own") {
  auto store = std::move(*Store::Open(::prov::testing::TestDatabase()));
  TempDir dir{"profiles"}, snapshots{"snapshots"};
  REQUIRE(MakeDirs(dir.path() + "/s").ok());
  REQUIRE(WriteFileAtomic(dir.path() + "/s/profile.yaml",
                          "version: s\nimage: {name: lab}\nnodes: {pattern: \"n*\"}\n"
                          "storage:\n  - name: data\n    disks: {transport: nvme}\n"
                          "    filesystem: ext4\n    mount: /srv/data\n")
              .ok());
  Inventory inventory{*store, dir.path(), PROVISION_SOURCE_DIR "/playbooks", snapshots.path()};
  for (const char* name : {"n0", "n1"}) {
    auto n = inventory.Enroll({name, std::string("52:54:00:00:01:0") + name[1], "", ""}, "t");
    REQUIRE_MESSAGE(n.ok(), n.status().message());
  }
  auto facts = [&](const std::string& name, const std::string& transport, bool installed) {
    REQUIRE(store
                ->Transact([&](StoreTx& tx) {
                  auto n = tx.FindNode(name);
                  if (!n.ok()) return n.status();
                  n->facts = nlohmann::json{{"disks",
                                             {{{"name", "sda"},
                                               {"transport", transport},
                                               {"by_id", "/dev/disk/by-id/x-" + name},
                                               {"size_bytes", 1000000000000LL}}}}}
                                 .dump();
                  n->installed = installed;
                  return tx.UpdateNode(*n);
                })
                .ok());
  };
  facts("n0", "nvme", false);
  facts("n1", "sata", false);
  auto plan = inventory.PlanProfile("s");
  REQUIRE_FALSE(plan.ok());
  CHECK_MESSAGE(plan.status().message().find("node n1: ") != std::string::npos,
                plan.status().message());
  CHECK(plan.status().message().find("node n0") == std::string::npos);
  facts("n1", "sata", true);  // n1 keeps its own OS
  plan = inventory.PlanProfile("s");
  CHECK_MESSAGE(plan.ok(), plan.status().message());
}

}  // namespace prov
