#include "profiles/snapshot.h"

#include <doctest/doctest.h>
#include <sys/stat.h>

#include <filesystem>

#include "base/file_util.h"
#include "base/temp_dir.h"
#include "profiles/inventory.h"
#include "store/store.h"
#include "store/testing/test_database.h"

namespace prov {
namespace {

namespace fs = std::filesystem;

// A profiles and a playbooks directory on disk, an in-memory store and an
// inventory with its snapshot directory: what provisiond has, without HTTP.
struct World {
  TempDir tmp{"snapshot-test"};
  std::string profiles = tmp.path() + "/profiles";
  std::string playbooks = tmp.path() + "/playbooks";
  std::unique_ptr<Store> store = std::move(*Store::Open(::prov::testing::TestDatabase()));
  std::unique_ptr<Inventory> inventory;

  World() {
    Write(profiles + "/snap/profile.yaml",
          "version: snap\nimage:\n  name: lab\nplaybooks:\n  - playbook: motd.yml\n"
          "nodes:\n  hostlist: n[1-2]\n");
    Write(playbooks + "/motd.yml",
          "- hosts: all\n  tasks:\n    - name: motd\n      template:\n"
          "        src: motd.j2\n        dest: /etc/motd\n");
    Write(playbooks + "/templates/motd.j2", "version A {{ inventory_hostname }}\n");
    Write(playbooks + "/templates/unused.j2", "not reached by any playbook\n");
    inventory = std::make_unique<Inventory>(*store, profiles, playbooks, tmp.path() + "/snapshots");
  }
  static void Write(const std::string& path, const std::string& text) {
    REQUIRE(MakeDirs(fs::path(path).parent_path().string()).ok());
    REQUIRE(WriteFileAtomic(path, text).ok());
  }
  // What a node's next configure run would write as /etc/motd: the template
  // as the applied snapshot holds it.
  std::string NodeTemplate() {
    auto p = inventory->Snapshot("snap");
    REQUIRE_MESSAGE(p.ok(), p.status().message());
    const auto& pb = (*p)->playbooks.at(0).parsed;
    REQUIRE(pb);
    FileSet disk;
    auto text = ReadFile(ReadThenParse(
        disk, [&](FileSet& f) { return FindPlaybookFile(f, pb->dir, "templates", "motd.j2"); }));
    REQUIRE_MESSAGE(text.ok(), text.status().message());
    return *text;
  }
  Plan Apply(const std::string& spec) {
    auto plan = inventory->ApplyProfile(spec, "test");
    REQUIRE_MESSAGE(plan.ok(), plan.status().message());
    return *plan;
  }
};

std::vector<std::string> Paths(const Profile& p) {
  std::vector<std::string> out;
  for (const auto& f : p.files) out.push_back(f.path);
  return out;
}

}  // namespace

TEST_CASE("snapshot: a profile is made of its file, its playbooks and what they reach") {
  World w;
  auto p = w.inventory->DiskProfile("snap");
  REQUIRE_MESSAGE(p.ok(), p.status().message());
  CHECK(Paths(*p) == std::vector<std::string>{"playbooks/motd.yml", "playbooks/templates/motd.j2",
                                              "profile.yaml"});
  CHECK(p->sha256 == HashProfileFiles(p->files));
  // A template edit is a profile change.
  std::string before = p->sha256;
  World::Write(w.playbooks + "/templates/motd.j2", "version B\n");
  CHECK(w.inventory->DiskProfile("snap")->sha256 != before);
  // A file no playbook reaches is not.
  before = w.inventory->DiskProfile("snap")->sha256;
  World::Write(w.playbooks + "/templates/unused.j2", "still unused\n");
  CHECK(w.inventory->DiskProfile("snap")->sha256 == before);
}

TEST_CASE("snapshot: a templated src reaches its whole folder") {
  World w;
  World::Write(w.playbooks + "/motd.yml",
               "- hosts: all\n  tasks:\n    - name: motd\n      template:\n"
               "        src: \"{{ which }}.j2\"\n        dest: /etc/motd\n");
  auto p = w.inventory->DiskProfile("snap");
  REQUIRE_MESSAGE(p.ok(), p.status().message());
  CHECK(Paths(*p) == std::vector<std::string>{"playbooks/motd.yml", "playbooks/templates/motd.j2",
                                              "playbooks/templates/unused.j2", "profile.yaml"});
}

TEST_CASE("snapshot: a file outside the playbooks directory cannot be part of a profile") {
  World w;
  World::Write(w.tmp.path() + "/elsewhere.j2", "x\n");
  World::Write(w.playbooks + "/motd.yml",
               "- hosts: all\n  tasks:\n    - name: motd\n      template:\n        src: " +
                   w.tmp.path() + "/elsewhere.j2\n        dest: /etc/motd\n");
  auto p = w.inventory->DiskProfile("snap");
  REQUIRE_FALSE(p.ok());
  CHECK(p.status().message().find("outside the playbooks directory") != std::string::npos);
}

TEST_CASE("snapshot: nodes get what was applied; edits wait for the next apply; rollback") {
  World w;
  Plan first = w.Apply("snap");
  CHECK(first.changes);
  CHECK(w.NodeTemplate() == "version A {{ inventory_hostname }}\n");

  // Edited on disk after the apply: nothing a node runs changes.
  World::Write(w.playbooks + "/templates/motd.j2", "version B {{ inventory_hostname }}\n");
  CHECK(w.NodeTemplate() == "version A {{ inventory_hostname }}\n");

  // The plan names the file that would change, against the applied snapshot.
  auto plan = w.inventory->PlanProfile("snap");
  REQUIRE(plan.ok());
  CHECK(plan->changes);
  CHECK(plan->files_against == first.sha256);
  REQUIRE(plan->files.size() == 1);
  CHECK(plan->files[0].path == "playbooks/templates/motd.j2");
  CHECK(plan->files[0].change == "changed");

  // A second apply: a new hash, and nodes get the new content.
  Plan second = w.Apply("snap");
  CHECK(second.changes);
  CHECK(second.sha256 != first.sha256);
  CHECK(w.NodeTemplate() == "version B {{ inventory_hostname }}\n");
  CHECK_FALSE(w.inventory->PlanProfile("snap")->changes);

  // Rollback to the first snapshot restores it byte for byte, although the
  // files on disk still say B.
  Plan back = w.Apply("snap@" + first.sha256.substr(0, 12));
  CHECK(back.changes);
  CHECK(back.sha256 == first.sha256);
  CHECK(w.NodeTemplate() == "version A {{ inventory_hostname }}\n");
  CHECK(w.store->CurrentProfile()->sha256 == first.sha256);
  // Applying it again changes nothing.
  CHECK_FALSE(w.Apply("snap@" + first.sha256.substr(0, 12)).changes);
}

TEST_CASE("snapshot: bad rollback specs are clear errors") {
  World w;
  w.Apply("snap");
  auto short_prefix = w.inventory->PlanProfile("snap@abc");
  REQUIRE_FALSE(short_prefix.ok());
  CHECK(short_prefix.status().message().find("8 or more hex digits") != std::string::npos);
  auto unknown = w.inventory->PlanProfile("snap@0000000000");
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.status().code() == Code::kNotFound);
}

TEST_CASE("snapshot: a snapshot changed after its commit is refused") {
  World w;
  Plan plan = w.Apply("snap");
  std::string dir = w.tmp.path() + "/snapshots/" + plan.sha256;
  World::Write(dir + "/playbooks/templates/motd.j2", "tampered\n");
  SnapshotStore fresh(w.tmp.path() + "/snapshots");  // nothing cached yet
  auto p = fresh.Get(plan.sha256);
  REQUIRE_FALSE(p.ok());
  CHECK(p.status().message().find("does not match its hash") != std::string::npos);
  CHECK_FALSE(fresh.Get("../../etc").ok());
}

TEST_CASE("snapshot: a version never applied is committed on first use, once") {
  World w;
  auto node = w.inventory->Enroll({"n1", "52:54:00:00:00:01", "", "snap"}, "test");
  REQUIRE_MESSAGE(node.ok(), node.status().message());
  auto sha = w.store->SnapshotOf("snap");
  REQUIRE(sha);
  World::Write(w.playbooks + "/templates/motd.j2", "version B\n");
  auto again = w.inventory->Enroll({"n2", "52:54:00:00:00:02", "", "snap"}, "test");
  REQUIRE(again.ok());
  CHECK(*w.store->SnapshotOf("snap") == *sha);
  CHECK(w.NodeTemplate() == "version A {{ inventory_hostname }}\n");
}

TEST_CASE("snapshot: another control node commits an applied snapshot from the same profiles") {
  World w;
  Plan applied = w.Apply("snap");
  // A second control node on the same inventory, its own snapshot folder
  // empty: the profiles it keeps alike give the very same snapshot.
  Inventory other(*w.store, w.profiles, w.playbooks, w.tmp.path() + "/other-snapshots");
  auto p = other.Snapshot("snap");
  REQUIRE_MESSAGE(p.ok(), p.status().message());
  CHECK((*p)->sha256 == applied.sha256);
  CHECK(fs::exists(w.tmp.path() + "/other-snapshots/" + applied.sha256 + "/profile.yaml"));
  // Profiles that differ there are no stand-in for what was applied.
  World::Write(w.playbooks + "/templates/motd.j2", "version B\n");
  Inventory third(*w.store, w.profiles, w.playbooks, w.tmp.path() + "/third-snapshots");
  auto q = third.Snapshot("snap");
  REQUIRE_FALSE(q.ok());
  CHECK(q.status().message().find("never applied here") != std::string::npos);
}

TEST_CASE("snapshot: the snapshot directory is private to provisiond") {
  World w;
  Plan plan = w.Apply("snap");
  struct stat st {};
  REQUIRE(stat((w.tmp.path() + "/snapshots").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  REQUIRE(stat((w.tmp.path() + "/snapshots/" + plan.sha256 + "/profile.yaml").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
}

}  // namespace prov

namespace prov {

TEST_CASE("snapshot: a profile that bakes boots its derived image, built before apply") {
  World w;
  World::Write(w.profiles + "/baked/profile.yaml",
               "version: baked\nimage:\n  name: lab\nbake:\n  - playbook: motd.yml\n"
               "playbooks:\n  - playbook: motd.yml\nnodes:\n  hostlist: n[1-2]\n");
  EnrollRequest r;
  r.hostname = "n1";
  r.mac = "52:54:00:00:00:01";
  REQUIRE(w.inventory->Enroll(r, "test").ok());
  // Without the daemon's bake seam, nodes boot the image it names.
  CHECK(w.inventory->PlanProfile("baked")->image.ref == "lab");
  bool built = false;
  w.inventory->SetBakedImages([&](const Profile& p) -> Result<ImageChoice> {
    CHECK(p.bake.size() == 1);
    return ImageChoice{"lab.baked@0123456789abcdef", "lab@fedcba9876543210",
                       built ? ImageAction::kReused : ImageAction::kRebuild,
                       built ? std::vector<std::string>{}
                             : std::vector<std::string>{"no derived image of lab yet"}};
  });
  auto plan = w.inventory->PlanProfile("baked");
  REQUIRE(plan.ok());
  CHECK(plan->image.action == ImageAction::kRebuild);
  CHECK(plan->nodes.at(0).to_image == "lab.baked@0123456789abcdef");
  // No node is pointed at an image that is not built.
  auto refused = w.inventory->ApplyProfile("baked", "test");
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == Code::kConflict);
  CHECK_MESSAGE(refused.status().message().find("lab.baked@0123456789abcdef is not built yet (no "
                                                "derived image of lab yet)") != std::string::npos,
                refused.status().message());
  CHECK(w.store->FindNode("n1")->profile_version.empty());
  // A base that is not built: applied, the nodes get the derived name alone.
  w.inventory->SetBakedImages([&](const Profile&) -> Result<ImageChoice> {
    return Status::NotFound("the base image lab of profile baked is not built");
  });
  Plan unbuilt = w.Apply("baked");
  CHECK(unbuilt.image.action == ImageAction::kUnavailable);
  CHECK(w.store->FindNode("n1")->image_version == "lab.baked");
  w.inventory->SetBakedImages([&](const Profile&) -> Result<ImageChoice> {
    return ImageChoice{
        "lab.baked@0123456789abcdef", "lab@fedcba9876543210", ImageAction::kReused, {}};
  });
  built = true;
  Plan applied = w.Apply("baked");
  CHECK(applied.image.action == ImageAction::kReused);
  CHECK(w.store->FindNode("n1")->image_version == "lab.baked@0123456789abcdef");
  CHECK(ToJson(applied)["image"]["ref"] == "lab.baked@0123456789abcdef");
}

}  // namespace prov
