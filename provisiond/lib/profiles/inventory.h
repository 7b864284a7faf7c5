// The inventory's domain operations: enrolling, changing and retiring nodes,
// planning and applying profiles. Each operation validates everything first,
// then writes in one store transaction (state, rows and events together).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include <functional>
#include <memory>
#include <mutex>
#include "base/result.h"

#include "profiles/profile.h"
#include "profiles/snapshot.h"
#include "store/store.h"

namespace prov {

struct EnrollRequest {
  std::string hostname;
  std::string mac;
  std::string ip;
  std::string profile;  // empty: the applied profile, if it covers the node
  nlohmann::json power = nlohmann::json::object();
  std::string uefi_loader = "";  // "": the profile's choice
};

struct NodeChange {
  std::optional<std::string> hostname;
  std::optional<std::string> ip;
  std::optional<std::string> profile;  // "" releases the node from its profile
  std::optional<NodeState> state;      // operator states only
  std::optional<std::string> reason;
  std::optional<std::string> host_key;
  std::optional<nlohmann::json> power;     // {} removes the driver
  std::optional<std::string> uefi_loader;  // "": back to the profile's choice
};

// What applying a profile does to one node: kAssign, it gets the profile;
// kUnchanged, it has it already; kRelease, it is not covered any more;
// kMissing, it is covered by name but not enrolled.
enum class PlanAction { kAssign, kUnchanged, kRelease, kMissing };
// "assign", "unchanged", "release", "missing": the API's words.
const char* ToString(PlanAction action);

struct NodePlan {
  std::string node;
  std::string mac;
  std::string state;
  PlanAction action = PlanAction::kUnchanged;
  std::string from_profile;
  std::string from_image;
  std::string to_image;
  bool reboot = false;                 // its image changes
  std::vector<std::string> playbooks;  // to run once it is booted
  std::vector<std::string> reasons;    // why, in words
};

// What a profile's derived image needs: kNone (no bake playbooks), kReused
// (built already), kRebuild (to build: the choice's `changes` say why) or
// kUnavailable (its base is not built: `changes` say so).
enum class ImageAction { kNone, kReused, kRebuild, kUnavailable };
// "", "reused", "rebuild", "unavailable": the API's words.
const char* ToString(ImageAction action);

// The image a profile's nodes boot: its own (`image:`), or, when it bakes,
// the derived image its bake playbooks make (bake/derived_image.h).
struct ImageChoice {
  std::string ref;   // what nodes get: "lab", "lab.baked@<version>"
  std::string base;  // the base version a derived image starts from
  ImageAction action = ImageAction::kNone;
  std::vector<std::string> changes;
};
nlohmann::json ToJson(const ImageChoice& c);

struct Plan {
  std::string version;
  std::string sha256;
  std::string current_version;  // applied now ("" if none)
  std::string current_sha256;
  bool changes = false;  // false: applying it again changes nothing
  ImageChoice image;     // what the covered nodes boot
  std::vector<NodePlan> nodes;
  // What the files would change against `files_against`: the snapshot that
  // stands for this version now, or else the one applied now ("" if none).
  std::string files_against;
  std::vector<FileChange> files;
};

nlohmann::json ToJson(const NodeRecord& n);
nlohmann::json ToJson(const EventRecord& e);
nlohmann::json ToJson(const NodePlan& p);
nlohmann::json ToJson(const Plan& p);

class Inventory {
 public:
  // `store` must outlive the inventory. Plans and listings read profiles
  // from disk, so an edited profile shows in its plan (with its new hash and
  // the files that changed); nodes are configured from applied snapshots
  // kept in `snapshots_dir`. `ansible` judges the playbooks that run on
  // ansible-playbook before a profile is planned, applied or baked.
  Inventory(Store& store, std::string profiles_dir, std::string playbooks_dir,
            std::string snapshots_dir, AnsibleTool ansible = {});

  Result<NodeRecord> Enroll(const EnrollRequest& request, const std::string& who);
  Result<NodeRecord> Change(const std::string& name, const NodeChange& change,
                            const std::string& who);
  // A machine that boots its own OS, adopted over SSH (node adopt): its host
  // key pinned, its facts (validated by the caller) kept, marked installed,
  // and `booted` (or `failed` when its hardware is not its profile's), with
  // an event naming who adopted it and the key's fingerprint.
  Result<NodeRecord> Adopt(const std::string& name, const std::string& host_key,
                           const nlohmann::json& facts, const std::string& who);
  // An installed node that has booted again, as its heartbeat found
  // (watch/heartbeat.h): its new facts (validated by the caller) kept, and
  // through `booting` to `booted` (or `failed` by the hardware check), the
  // way a netbooted node's phone-home takes it, with `why` as the event. Only
  // an installed node that is ready or failed: one being configured, in
  // maintenance or retired is left as it is (Conflict).
  Result<NodeRecord> Rebooted(const std::string& name, const nlohmann::json& facts,
                              const std::string& why, const std::string& who);
  // Lets the node's next boot wipe local disks its profile's volumes take
  // that hold something else (profiles/storage.h): those of `disks`
  // (/dev/disk/by-id names), or every one when `disks` is empty. An event
  // says who allowed it; that boot's hello spends it.
  Result<NodeRecord> AllowStorageWipe(const std::string& name,
                                      const std::vector<std::string>& disks,
                                      const std::string& who);
  // Retires the node (it keeps its row and history); `purge` deletes the row
  // (its events stay, by name).
  Status Retire(const std::string& name, bool purge, const std::string& who);

  // The profile as its files on disk say now, its playbooks on
  // ansible-playbook checked by Ansible (CheckProfileWithAnsible; the
  // verdict kept for the same content).
  Result<Profile> DiskProfile(const std::string& version) const;
  // Every profile on disk, as parsed (Ansible's verdict is DiskProfile's).
  // Read again only when a file under profiles_dir or playbooks_dir changed
  // (path, size or mtime, from a walk that stats them): GET /status lists
  // them on every batch of events each web page gets.
  std::map<std::string, Profile> ListProfiles(std::vector<std::string>& errors) const;

  const AnsibleTool& ansible() const { return ansible_; }

  // What the nodes of `version` are configured and booted with: the snapshot
  // that stands for it (the last one applied). A version that was never
  // applied is committed from disk on first use (a node enrolled with it).
  // From memory after the first call; thread-safe.
  Result<std::shared_ptr<const Profile>> Snapshot(const std::string& version,
                                                  const std::string& who = "provisiond");

  // `spec` is a version ("v0.2": its files on disk) or a version and a
  // committed snapshot ("v0.1@3fa2c1d0", a hash prefix of 8 or more: exactly
  // what was applied then, for a rollback).
  Result<Plan> PlanProfile(const std::string& spec);
  // Validates, commits the snapshot (outside the store's lock), then records
  // it, assigns and releases nodes, and appends events in one transaction.
  // Returns the plan it carried out; plan.changes is false when nothing had
  // to change.
  Result<Plan> ApplyProfile(const std::string& spec, const std::string& who);

  // Where the derived image of a profile with bake playbooks comes from
  // (the daemon sets it; bake/ is above this folder). Unset, or for a
  // profile without bake playbooks, nodes boot ImageRef(profile).
  using BakedImageFn = std::function<Result<ImageChoice>(const Profile&)>;
  void SetBakedImages(BakedImageFn fn) { baked_images_ = std::move(fn); }
  // The image `profile`'s nodes boot, and whether it must be built first.
  ImageChoice ChooseImage(const Profile& profile) const;

  SnapshotStore& snapshots() { return snapshots_; }

  Store& store() { return store_; }

  // Forgets which snapshot stands for each version (Snapshot() asks the
  // store again), for a store whose content was replaced (Store::CopyFrom).
  void ForgetSnapshotVersions();

 private:
  Plan ComputePlan(const Profile& profile, const ImageChoice& image, StoreTx& tx);
  // The profile `spec` names: from disk, or a committed snapshot.
  Result<std::shared_ptr<const Profile>> Resolve(const std::string& spec);
  // Per file, `target` against the snapshot that stands for its version
  // now (or else the one applied now); `against` names it.
  std::vector<FileChange> FilesAgainst(const Profile& target, std::string& against);
  // An installed node's boot, inside `tx`: its facts kept, no boot stage,
  // through `booting` to `booted`, or `failed` when its hardware is not its
  // profile's (Adopt, Rebooted).
  // (`profile`: the node's, read before the transaction with ProfileOfNode,
  // since a snapshot may come from the store; null: none.)
  Status BootedItsOwnOs(StoreTx& tx, NodeRecord& n, const Profile* profile,
                        const nlohmann::json& facts, const std::string& why,
                        const std::string& who);
  std::shared_ptr<const Profile> ProfileOfNode(const std::string& name);

  Store& store_;
  std::string profiles_dir_;
  std::string playbooks_dir_;
  AnsibleTool ansible_;
  // Ansible's verdicts by profile hash (it covers every file Ansible reads).
  mutable std::mutex checked_mu_;
  mutable std::map<std::string, Status> checked_;
  BakedImageFn baked_images_;
  SnapshotStore snapshots_;
  std::mutex snapshot_of_mu_;
  std::map<std::string, std::string> snapshot_of_;  // version -> sha256; guarded
  // ListProfiles' last reading, and the stamp of the files it came from.
  mutable std::mutex listed_mu_;
  mutable std::string listed_stamp_;
  mutable std::map<std::string, Profile> listed_;
  mutable std::vector<std::string> listed_errors_;
};

// The image a profile gives its nodes, as stored on the node ("lab" or
// "lab@<version>").
std::string ImageRef(const Profile& p);

}  // namespace prov
