#include "profiles/inventory.h"

#include <sys/stat.h>

#include <filesystem>
#include <set>

#include "base/strings.h"
#include "power/power.h"
#include "profiles/hardware_check.h"

namespace prov {

const char* ToString(PlanAction action) {
  switch (action) {
    case PlanAction::kAssign:
      return "assign";
    case PlanAction::kUnchanged:
      return "unchanged";
    case PlanAction::kRelease:
      return "release";
    case PlanAction::kMissing:
      return "missing";
  }
  return "unchanged";
}

const char* ToString(ImageAction action) {
  switch (action) {
    case ImageAction::kNone:
      return "";
    case ImageAction::kReused:
      return "reused";
    case ImageAction::kRebuild:
      return "rebuild";
    case ImageAction::kUnavailable:
      return "unavailable";
  }
  return "";
}

nlohmann::json ToJson(const ImageChoice& c) {
  return {{"ref", c.ref}, {"base", c.base}, {"action", ToString(c.action)}, {"changes", c.changes}};
}

ImageChoice Inventory::ChooseImage(const Profile& profile) const {
  ImageChoice c;
  c.ref = ImageRef(profile);
  if (profile.bake.empty() || !baked_images_) return c;
  auto baked = baked_images_(profile);
  if (baked.ok()) return *baked;
  // No version to name yet: nodes get the derived name alone, which does not
  // resolve (boot says so) until the base is built and the profile applied.
  c.ref = profile.image_name + ".baked";
  c.action = ImageAction::kUnavailable;
  c.changes.push_back(baked.status().message());
  return c;
}

std::string ImageRef(const Profile& p) {
  return p.image_version.empty() ? p.image_name : p.image_name + "@" + p.image_version;
}

nlohmann::json ToJson(const NodeRecord& n) {
  nlohmann::json facts = nlohmann::json::parse(n.facts, nullptr, false);
  if (facts.is_discarded()) facts = nlohmann::json::object();
  return {{"id", n.id},
          {"hostname", n.hostname},
          {"mac", n.mac},
          {"ip", n.ip},
          {"state", std::string(ToString(n.state))},
          {"reason", n.reason},
          {"profile", n.profile_version},
          {"image", n.image_version},
          {"stage", n.stage ? std::string(ToString(*n.stage)) : std::string()},
          {"uefi_loader", n.uefi_loader},
          {"installed", n.installed},
          {"storage_wipe",
           [&] {
             auto w = nlohmann::json::parse(n.storage_wipe, nullptr, false);
             return w.is_array() ? w : nlohmann::json::array();
           }()},
          {"power",
           [&] {
             auto p = nlohmann::json::parse(n.power, nullptr, false);
             return p.is_discarded() ? nlohmann::json::object() : p;
           }()},
          {"power_plan",
           [&] {
             auto p = nlohmann::json::parse(n.power, nullptr, false);
             return p.is_discarded() ? std::string() : DescribePowerPlan(p);
           }()},
          {"facts", facts},
          {"health",
           [&] {
             auto h = nlohmann::json::parse(n.health, nullptr, false);
             return h.is_discarded() ? nlohmann::json(nullptr) : h;
           }()},
          {"host_key", n.host_key},
          {"last_seen", n.last_seen_ms},
          {"created", n.created_ms},
          {"updated", n.updated_ms}};
}

nlohmann::json ToJson(const EventRecord& e) {
  return {{"id", e.id},     {"time", e.time_ms},  {"node", e.node},
          {"kind", e.kind}, {"detail", e.detail}, {"who", e.who}};
}

nlohmann::json ToJson(const NodePlan& p) {
  return {{"node", p.node},
          {"mac", p.mac},
          {"state", p.state},
          {"action", ToString(p.action)},
          {"from_profile", p.from_profile},
          {"from_image", p.from_image},
          {"to_image", p.to_image},
          {"reboot", p.reboot},
          {"playbooks", p.playbooks},
          {"reasons", p.reasons}};
}

nlohmann::json ToJson(const Plan& p) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& n : p.nodes) nodes.push_back(ToJson(n));
  nlohmann::json files = nlohmann::json::array();
  for (const auto& f : p.files) files.push_back(ToJson(f));
  return {{"version", p.version},
          {"sha256", p.sha256},
          {"current_version", p.current_version},
          {"current_sha256", p.current_sha256},
          {"changes", p.changes},
          {"image", ToJson(p.image)},
          {"nodes", nodes},
          {"files_against", p.files_against},
          {"files", files}};
}

Inventory::Inventory(Store& store, std::string profiles_dir, std::string playbooks_dir,
                     std::string snapshots_dir, AnsibleTool ansible)
    : store_(store),
      profiles_dir_(std::move(profiles_dir)),
      playbooks_dir_(std::move(playbooks_dir)),
      ansible_(std::move(ansible)),
      snapshots_(std::move(snapshots_dir)) {}

Result<Profile> Inventory::DiskProfile(const std::string& version) const {
  auto profile = LoadProfile(profiles_dir_, version, playbooks_dir_, ansible_.roles_path);
  if (!profile.ok()) return profile;
  {
    std::lock_guard lock(checked_mu_);
    auto it = checked_.find(profile->sha256);
    if (it != checked_.end()) {
      if (!it->second.ok()) return it->second;
      return profile;
    }
  }
  // Outside the lock: the check takes seconds; two first callers check twice.
  Status verdict = CheckProfileWithAnsible(*profile, ansible_);
  // Without the tool nothing ran (cheap, and the reasons say it was not
  // checked): no verdict to keep; installing Ansible changes it.
  std::error_code ec;
  if (std::filesystem::exists(ansible_.program, ec) &&
      (verdict.ok() || verdict.code() == Code::kInvalid)) {
    std::lock_guard lock(checked_mu_);
    checked_.emplace(profile->sha256, verdict);
  }
  if (!verdict.ok()) return verdict;
  return profile;
}

Result<std::shared_ptr<const Profile>> Inventory::Snapshot(const std::string& version,
                                                           const std::string& who) {
  {
    std::lock_guard lock(snapshot_of_mu_);
    auto it = snapshot_of_.find(version);
    if (it != snapshot_of_.end()) return snapshots_.Get(it->second);
  }
  std::optional<std::string> sha = store_.SnapshotOf(version);
  if (!sha) {
    auto disk = DiskProfile(version);
    if (!disk.ok()) return disk.status();
    auto committed = snapshots_.Commit(*disk);
    if (!committed.ok()) return committed.status();
    Status s = store_.Transact([&](StoreTx& tx) -> Status {
      // Someone may have applied it meanwhile: theirs stands.
      if (tx.SnapshotOf(version)) return Status::Ok();
      return tx.RecordSnapshot((*committed)->sha256, version, who);
    });
    if (!s.ok()) return s;
    sha = store_.SnapshotOf(version);
    if (!sha) return Status::Internal("snapshot of " + version + " not recorded");
  }
  auto snapshot = snapshots_.Get(*sha);
  if (!snapshot.ok() && snapshot.status().code() == Code::kNotFound) {
    // Applied on another control node (a PostgreSQL inventory): committed
    // here from this control node's profiles when they hold the very same
    // content, the files each control node keeps alike (docs/ha.md).
    auto disk = DiskProfile(version);
    if (disk.ok() && disk->sha256 == *sha) snapshot = snapshots_.Commit(*disk);
  }
  if (!snapshot.ok()) return snapshot.status();
  std::lock_guard lock(snapshot_of_mu_);
  snapshot_of_[version] = *sha;
  return snapshot;
}

void Inventory::ForgetSnapshotVersions() {
  std::lock_guard lock(snapshot_of_mu_);
  snapshot_of_.clear();
}

Result<std::shared_ptr<const Profile>> Inventory::Resolve(const std::string& spec) {
  auto at = spec.find('@');
  if (at == std::string::npos) {
    auto disk = DiskProfile(spec);
    if (!disk.ok()) return disk.status();
    return std::make_shared<const Profile>(std::move(*disk));
  }
  const std::string version = spec.substr(0, at), prefix = spec.substr(at + 1);
  if (prefix.size() < 8 || prefix.find_first_not_of("0123456789abcdef") != std::string::npos)
    return Status::Invalid("'" + spec + "': after '@' give 8 or more hex digits of a snapshot's " +
                           "hash (provisionctl profile list shows them)");
  std::vector<std::string> found;
  for (const auto& row : store_.Snapshots())
    if (row.version == version && row.sha256.rfind(prefix, 0) == 0) found.push_back(row.sha256);
  if (found.empty())
    return Status::NotFound("no applied snapshot of " + version + " has a hash starting with " +
                            prefix);
  if (found.size() > 1)
    return Status::Invalid("'" + prefix + "' matches " + std::to_string(found.size()) +
                           " snapshots of " + version + ": give more of the hash");
  return snapshots_.Get(found.front());
}

std::vector<FileChange> Inventory::FilesAgainst(const Profile& target, std::string& against) {
  std::optional<std::string> sha = store_.SnapshotOf(target.version);
  if (!sha)
    if (auto current = store_.CurrentProfile()) sha = current->sha256;
  if (!sha) return {};
  auto from = snapshots_.Get(*sha);
  if (!from.ok()) return {};  // applied before snapshots existed: nothing to compare
  against = *sha;
  return DiffProfileFiles((*from)->files, target.files);
}

namespace {
namespace fs = std::filesystem;

// Every file and directory under `dirs`, with its size and mtime: what
// changes when a profile or a playbook is edited, added or removed.
std::string TreeStamp(const std::vector<std::string>& dirs) {
  std::string stamp;
  for (const auto& dir : dirs) {
    std::error_code ec;
    for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      struct stat st {};
      if (stat(it->path().c_str(), &st) != 0) continue;
      stamp += it->path().string();
      stamp += ' ' + std::to_string(st.st_size) + ' ' + std::to_string(st.st_mtim.tv_sec) + '.' +
               std::to_string(st.st_mtim.tv_nsec) + '\n';
    }
    if (ec) stamp += dir + " unreadable\n";
  }
  return stamp;
}
}  // namespace

std::map<std::string, Profile> Inventory::ListProfiles(std::vector<std::string>& errors) const {
  std::string stamp = TreeStamp({profiles_dir_, playbooks_dir_});
  std::lock_guard lock(listed_mu_);
  if (stamp != listed_stamp_) {
    listed_errors_.clear();
    listed_ = LoadAllProfiles(profiles_dir_, playbooks_dir_, listed_errors_, ansible_.roles_path);
    listed_stamp_ = std::move(stamp);
  }
  errors.insert(errors.end(), listed_errors_.begin(), listed_errors_.end());
  return listed_;
}

Result<NodeRecord> Inventory::Enroll(const EnrollRequest& request, const std::string& who) {
  Status s = ValidateHostname(request.hostname);
  if (!s.ok()) return s;
  if (!request.ip.empty()) {
    s = ValidateNodeIp(request.ip);
    if (!s.ok()) return s;
  }
  auto mac = NormalizeMac(request.mac);
  if (!mac.ok()) return mac.status();
  s = ValidatePowerConfig(request.power);
  if (!s.ok()) return s;
  if (!request.uefi_loader.empty()) {
    s = ValidateUefiLoader(request.uefi_loader);
    if (!s.ok()) return s;
  }
  std::shared_ptr<const Profile> profile;
  if (!request.profile.empty()) {
    auto p = Snapshot(request.profile, who);
    if (!p.ok()) return p.status();
    profile = std::move(*p);
  } else if (auto current = store_.CurrentProfile()) {
    auto p = Snapshot(current->version, who);
    if (p.ok() && (*p)->Covers(request.hostname, *mac)) profile = std::move(*p);
  }

  NodeRecord result;
  s = store_.Transact([&](StoreTx& tx) -> Status {
    auto existing = tx.FindNode(*mac);
    NodeRecord node;
    bool was_discovered = false;
    if (existing.ok()) {
      // A discovered node (seen on the network, unknown) is enrolled in place;
      // a retired node may be enrolled again.
      node = *existing;
      if (node.state != NodeState::kDiscovered && node.state != NodeState::kRetired)
        return Status::Conflict("a node with MAC " + *mac + " is enrolled already as '" +
                                node.name() + "'");
      was_discovered = node.state == NodeState::kDiscovered;
    }
    node.hostname = request.hostname;
    node.mac = *mac;
    if (!request.power.is_null() && !request.power.empty()) node.power = request.power.dump();
    if (!request.ip.empty()) node.ip = request.ip;
    node.uefi_loader = request.uefi_loader;
    if (profile) {
      node.profile_version = profile->version;
      node.image_version = ChooseImage(*profile).ref;
    }
    if (existing.ok()) {
      Status t =
          tx.Transition(node, NodeState::kEnrolled,
                        was_discovered ? "enrolled a discovered node" : "enrolled again", who);
      if (!t.ok()) return t;
    } else {
      node.state = NodeState::kEnrolled;
      auto inserted = tx.InsertNode(node);
      if (!inserted.ok()) return inserted.status();
      node = *inserted;
      EventRecord e{.node_id = node.id,
                    .node = node.name(),
                    .kind = "enrolled",
                    .detail = "mac " + node.mac + (node.ip.empty() ? "" : ", ip " + node.ip),
                    .who = who};
      Status a = tx.AppendEvent(e);
      if (!a.ok()) return a;
    }
    if (profile) {
      EventRecord e{
          .node_id = node.id,
          .node = node.name(),
          .kind = "profile",
          .detail = "assigned profile " + profile->version + " (image " + node.image_version + ")",
          .who = who};
      Status a = tx.AppendEvent(e);
      if (!a.ok()) return a;
    }
    result = node;
    return Status::Ok();
  });
  if (!s.ok()) return s;
  return result;
}

std::shared_ptr<const Profile> Inventory::ProfileOfNode(const std::string& name) {
  auto n = store_.FindNode(name);
  if (!n.ok() || n->profile_version.empty()) return nullptr;
  auto p = Snapshot(n->profile_version);
  return p.ok() ? *p : nullptr;
}

Status Inventory::BootedItsOwnOs(StoreTx& tx, NodeRecord& n, const Profile* profile,
                                 const nlohmann::json& facts, const std::string& why,
                                 const std::string& who) {
  if (profile && profile->version != n.profile_version) profile = nullptr;  // changed meanwhile
  Status hardware = profile ? CheckHardware(*profile, facts) : Status::Ok();
  n.facts = facts.dump();
  n.stage.reset();  // no boot stages: it boots itself
  n.ticket.clear();
  n.configured.clear();
  n.last_seen_ms = NowMs();
  if (n.state != NodeState::kBooting) {
    Status t = tx.Transition(n, NodeState::kBooting, why, who);
    if (!t.ok()) return t;
  }
  return hardware.ok()
             ? tx.Transition(n, NodeState::kBooted, "its own OS is up", who)
             : tx.Transition(n, NodeState::kFailed, "hardware: " + hardware.message(), who);
}

Result<NodeRecord> Inventory::Adopt(const std::string& name, const std::string& host_key,
                                    const nlohmann::json& facts, const std::string& who) {
  if (Status k = ValidateHostKey(host_key); !k.ok()) return k;
  // Its profile before the transaction: a snapshot may be read from the store.
  std::shared_ptr<const Profile> profile = ProfileOfNode(name);
  NodeRecord result;
  Status s = store_.Transact([&](StoreTx& tx) -> Status {
    auto n = tx.FindNode(name);
    if (!n.ok()) return n.status();
    if (n->state == NodeState::kRetired || n->state == NodeState::kDiscovered ||
        n->state == NodeState::kConfiguring || n->state == NodeState::kMaintenance)
      return Status::Conflict(n->name() + " is " + std::string(ToString(n->state)) +
                              ": it cannot be adopted now");
    n->installed = true;
    n->installed_baked.clear();  // (again) a machine nothing was applied to yet
    n->host_key = host_key;
    EventRecord e{.node_id = n->id,
                  .node = n->name(),
                  .kind = "adopted",
                  .detail = "installed machine adopted over SSH at " + n->ip + ", host key " +
                            HostKeyFingerprint(host_key) + " pinned",
                  .who = who};
    Status t = BootedItsOwnOs(tx, *n, profile.get(), facts, "adopted over SSH", who);
    if (!t.ok()) return t;
    t = tx.AppendEvent(e);
    if (!t.ok()) return t;
    result = *n;
    return Status::Ok();
  });
  if (!s.ok()) return s;
  return result;
}

Result<NodeRecord> Inventory::Rebooted(const std::string& name, const nlohmann::json& facts,
                                       const std::string& why, const std::string& who) {
  std::shared_ptr<const Profile> profile = ProfileOfNode(name);
  NodeRecord result;
  Status s = store_.Transact([&](StoreTx& tx) -> Status {
    auto n = tx.FindNode(name);
    if (!n.ok()) return n.status();
    if (!n->installed) return Status::Conflict(n->name() + " netboots: its boots are its own");
    if (n->state != NodeState::kReady && n->state != NodeState::kFailed)
      return Status::Conflict(n->name() + " is " + std::string(ToString(n->state)) +
                              ": left as it is");
    Status t = BootedItsOwnOs(tx, *n, profile.get(), facts, why, who);
    if (!t.ok()) return t;
    result = *n;
    return Status::Ok();
  });
  if (!s.ok()) return s;
  return result;
}

Result<NodeRecord> Inventory::AllowStorageWipe(const std::string& name,
                                               const std::vector<std::string>& disks,
                                               const std::string& who) {
  nlohmann::json wipe = nlohmann::json::array();
  for (const auto& d : disks) {
    std::string id = d.rfind("/dev/disk/by-id/", 0) == 0 ? d.substr(16) : d;
    if (id.empty() || id.size() > 200 ||
        id.find_first_not_of(
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:+@-") !=
            std::string::npos)
      return Status::Invalid("disk '" + d.substr(0, 200) +
                             "' is not a /dev/disk/by-id name (node show lists the node's disks)");
    wipe.push_back("/dev/disk/by-id/" + id);
  }
  if (wipe.empty()) wipe.push_back("*");
  std::shared_ptr<const Profile> read_profile = ProfileOfNode(name);
  NodeRecord result;
  Status s = store_.Transact([&](StoreTx& tx) -> Status {
    auto n = tx.FindNode(name);
    if (!n.ok()) return n.status();
    const Profile* profile =
        read_profile && read_profile->version == n->profile_version ? read_profile.get() : nullptr;
    if (!profile || profile->storage.empty())
      return Status::Conflict(n->name() + "'s profile" +
                              (n->profile_version.empty() ? " (none)" : " " + n->profile_version) +
                              " has no storage volumes: there is nothing of provisiond's to put on "
                              "its disks");
    n->storage_wipe = wipe.dump();
    Status u = tx.UpdateNode(*n);
    if (!u.ok()) return u;
    result = *n;
    std::string what = wipe[0] == "*"
                           ? std::string("every disk its volumes take")
                           : Join(std::vector<std::string>(wipe.begin(), wipe.end()), ", ");
    EventRecord e{.node_id = n->id,
                  .node = n->name(),
                  .kind = "storage",
                  .detail = "wipe allowed at its next boot: " + what +
                            " (what they hold is erased if it is not the volume)",
                  .who = who};
    return tx.AppendEvent(e);
  });
  if (!s.ok()) return s;
  return result;
}

Result<NodeRecord> Inventory::Change(const std::string& name, const NodeChange& change,
                                     const std::string& who) {
  if (change.hostname) {
    Status s = ValidateHostname(*change.hostname);
    if (!s.ok()) return s;
  }
  if (change.ip && !change.ip->empty()) {
    Status s = ValidateNodeIp(*change.ip);
    if (!s.ok()) return s;
  }
  if (change.host_key && !change.host_key->empty()) {
    Status s = ValidateHostKey(*change.host_key);
    if (!s.ok()) return s;
  }
  if (change.power) {
    Status s = ValidatePowerConfig(*change.power);
    if (!s.ok()) return s;
  }
  if (change.uefi_loader && !change.uefi_loader->empty()) {
    Status s = ValidateUefiLoader(*change.uefi_loader);
    if (!s.ok()) return s;
  }
  if (change.state && !IsOperatorState(*change.state))
    return Status::Conflict("state '" + std::string(ToString(*change.state)) +
                            "' is set by provisiond from what it observes; an operator may set "
                            "enrolled, maintenance or retired");
  std::shared_ptr<const Profile> profile;
  if (change.profile && !change.profile->empty()) {
    auto p = Snapshot(*change.profile, who);
    if (!p.ok()) return p.status();
    profile = std::move(*p);
  }
  NodeRecord result;
  Status s = store_.Transact([&](StoreTx& tx) -> Status {
    auto found = tx.FindNode(name);
    if (!found.ok()) return found.status();
    NodeRecord node = *found;
    std::vector<std::string> what;
    if (change.hostname && *change.hostname != node.hostname) {
      what.push_back("hostname " + (node.hostname.empty() ? "(none)" : node.hostname) + " -> " +
                     *change.hostname);
      node.hostname = *change.hostname;
    }
    if (change.ip && *change.ip != node.ip) {
      what.push_back("ip " + (node.ip.empty() ? "(none)" : node.ip) + " -> " + *change.ip);
      node.ip = *change.ip;
    }
    if (change.host_key && *change.host_key != node.host_key) {
      what.push_back("host key replaced");
      node.host_key = *change.host_key;
    }
    if (change.power) {
      std::string power = change.power->is_null() ? "{}" : change.power->dump();
      if (power != node.power) {
        what.push_back("power driver " + (power == "{}" ? std::string("removed") : power));
        node.power = power;
      }
    }
    if (change.uefi_loader && *change.uefi_loader != node.uefi_loader) {
      what.push_back("UEFI loader " +
                     (node.uefi_loader.empty() ? "(profile's)" : node.uefi_loader) + " -> " +
                     (change.uefi_loader->empty() ? "(profile's)" : *change.uefi_loader));
      node.uefi_loader = *change.uefi_loader;
    }
    if (change.profile) {
      std::string to = profile ? profile->version : "";
      if (to != node.profile_version) {
        what.push_back("profile " +
                       (node.profile_version.empty() ? "(none)" : node.profile_version) + " -> " +
                       (to.empty() ? "(none)" : to));
        node.profile_version = to;
        node.image_version = profile ? ChooseImage(*profile).ref : "";
      }
    }
    if (!what.empty()) {
      Status u = tx.UpdateNode(node);
      if (!u.ok()) return u;
      std::string detail;
      for (const auto& w : what) detail += (detail.empty() ? "" : ", ") + w;
      EventRecord e{
          .node_id = node.id, .node = node.name(), .kind = "changed", .detail = detail, .who = who};
      Status a = tx.AppendEvent(e);
      if (!a.ok()) return a;
    }
    if (change.state && *change.state != node.state) {
      Status t = tx.Transition(node, *change.state, change.reason.value_or("set by operator"), who);
      if (!t.ok()) return t;
    }
    result = node;
    return Status::Ok();
  });
  if (!s.ok()) return s;
  return result;
}

Status Inventory::Retire(const std::string& name, bool purge, const std::string& who) {
  return store_.Transact([&](StoreTx& tx) -> Status {
    auto found = tx.FindNode(name);
    if (!found.ok()) return found.status();
    NodeRecord node = *found;
    if (purge) {
      EventRecord e{.node = node.name(),
                    .kind = "purged",
                    .detail = "removed from the inventory (mac " + node.mac + ")",
                    .who = who};
      Status d = tx.DeleteNode(node.id);
      if (!d.ok()) return d;
      return tx.AppendEvent(e);
    }
    if (node.state == NodeState::kRetired) return Status::Ok();
    return tx.Transition(node, NodeState::kRetired, "retired by operator", who);
  });
}

Plan Inventory::ComputePlan(const Profile& profile, const ImageChoice& choice, StoreTx& tx) {
  Plan plan;
  plan.version = profile.version;
  plan.sha256 = profile.sha256;
  if (auto current = tx.CurrentProfile()) {
    plan.current_version = current->version;
    plan.current_sha256 = current->sha256;
  }
  std::vector<std::string> playbooks;
  for (const auto& pb : profile.playbooks) playbooks.push_back(pb.file);
  plan.image = choice;
  const std::string& image = choice.ref;
  std::set<std::string> seen;
  for (const auto& node : tx.ListNodes()) {
    if (node.state == NodeState::kDiscovered || node.state == NodeState::kRetired) continue;
    bool covered = profile.Covers(node.hostname, node.mac);
    NodePlan np;
    np.node = node.name();
    np.mac = node.mac;
    np.state = std::string(ToString(node.state));
    np.from_profile = node.profile_version;
    np.from_image = node.image_version;
    if (covered) {
      seen.insert(node.hostname);
      np.to_image = image;
      if (node.profile_version == profile.version && node.image_version == image &&
          plan.current_sha256 == profile.sha256) {
        np.action = PlanAction::kUnchanged;
        np.reasons.push_back("already on " + profile.version);
      } else {
        np.action = PlanAction::kAssign;
        np.reasons.push_back(node.profile_version.empty()
                                 ? "gets profile " + profile.version
                                 : "profile " + node.profile_version + " -> " + profile.version);
        if (node.profile_version == profile.version)
          np.reasons.back() = "profile " + profile.version + " changed (content hash " +
                              profile.sha256.substr(0, 12) + ")";
        np.reboot = node.image_version != image;
        if (np.reboot)
          np.reasons.push_back("image " +
                               (node.image_version.empty() ? "(none)" : node.image_version) +
                               " -> " + image + ": reboot");
        if (choice.action == ImageAction::kRebuild) np.reasons.push_back("image rebuilt first");
        np.playbooks = playbooks;
        if (!playbooks.empty())
          np.reasons.push_back("then " + std::to_string(playbooks.size()) + " playbook(s)");
      }
    } else if (!node.profile_version.empty()) {
      np.action = PlanAction::kRelease;
      np.reasons.push_back("not covered by " + profile.version + ": leaves profile " +
                           node.profile_version);
    } else {
      continue;  // not ours before, not ours now
    }
    plan.nodes.push_back(std::move(np));
  }
  for (const auto& name : profile.nodes.hostnames) {
    if (seen.count(name)) continue;
    NodePlan np;
    np.node = name;
    np.action = PlanAction::kMissing;
    np.state = "absent";
    np.reasons.push_back("covered by " + profile.version + " but not enrolled");
    plan.nodes.push_back(std::move(np));
  }
  bool node_changes = false;
  for (const auto& n : plan.nodes)
    if (n.action == PlanAction::kAssign || n.action == PlanAction::kRelease) node_changes = true;
  plan.changes = node_changes || plan.current_version != profile.version ||
                 plan.current_sha256 != profile.sha256;
  return plan;
}

namespace {

// The profile's volumes against the disks of each node it covers whose
// facts are known: every node a rule does not fit, at once.
Status CheckStorageOnNodes(const Profile& profile, StoreTx& tx) {
  if (profile.storage.empty()) return Status::Ok();
  std::vector<std::string> misfits;
  for (const auto& node : tx.ListNodes()) {
    // An installed machine's disks are its owner's: it keeps what it writes
    // on its own root, and the volumes are for netbooted nodes.
    if (node.state == NodeState::kDiscovered || node.state == NodeState::kRetired ||
        node.installed || !profile.Covers(node.hostname, node.mac))
      continue;
    auto facts = nlohmann::json::parse(node.facts, nullptr, false);
    if (facts.is_discarded()) continue;
    Status fits = CheckStorageFits(profile, facts);
    if (!fits.ok()) misfits.push_back("node " + node.name() + ": " + fits.message());
  }
  if (misfits.empty()) return Status::Ok();
  return Status::Invalid("profile " + profile.version + ": its storage does not fit " +
                         std::to_string(misfits.size()) + " node(s):\n" + Join(misfits, "\n"));
}

}  // namespace

Result<Plan> Inventory::PlanProfile(const std::string& spec) {
  auto profile = Resolve(spec);
  if (!profile.ok()) return profile.status();
  const ImageChoice image = ChooseImage(**profile);
  Plan plan;
  Status fits;
  store_.Read([&](StoreTx& tx) {
    fits = CheckStorageOnNodes(**profile, tx);
    plan = ComputePlan(**profile, image, tx);
  });
  if (!fits.ok()) return fits;
  plan.files = FilesAgainst(**profile, plan.files_against);
  return plan;
}

Result<Plan> Inventory::ApplyProfile(const std::string& spec, const std::string& who) {
  auto resolved = Resolve(spec);
  if (!resolved.ok()) return resolved.status();
  // The disk reads and parsing happen here, before the transaction: boot
  // requests never wait on them.
  auto committed = snapshots_.Commit(**resolved);
  if (!committed.ok()) return committed.status();
  const std::shared_ptr<const Profile>& profile = *committed;
  // A derived image that can be built must be, before a node is pointed at
  // it. Where its base is not built yet (as a profile may be applied before
  // its image is built), nodes get the derived name alone, which boots once
  // the base is built and the profile applied again.
  const ImageChoice image = ChooseImage(*profile);
  if (image.action == ImageAction::kRebuild) {
    return Status::Conflict("profile " + profile->version + " bakes its image and " + image.ref +
                            " is not built yet (" + Join(image.changes, "; ") +
                            "): 'provisionctl profile apply' builds it first (POST "
                            "/api/v1/profiles/" +
                            profile->version + "/bake)");
  }
  Plan plan;
  std::string against;
  std::vector<FileChange> files = FilesAgainst(*profile, against);
  Status s = store_.Transact([&](StoreTx& tx) -> Status {
    if (Status fits = CheckStorageOnNodes(*profile, tx); !fits.ok()) return fits;
    plan = ComputePlan(*profile, image, tx);
    if (!plan.changes) return Status::Ok();
    Status r = tx.RecordSnapshot(profile->sha256, profile->version, who);
    if (!r.ok()) return r;
    if (plan.current_version != profile->version || plan.current_sha256 != profile->sha256) {
      AppliedProfile applied{0, profile->version, profile->sha256, 0, who};
      Status a = tx.InsertAppliedProfile(applied);
      if (!a.ok()) return a;
      EventRecord e{
          .kind = "profile-applied",
          .detail = "profile " + profile->version + " (sha256 " + profile->sha256.substr(0, 12) +
                    ")" +
                    (plan.current_version.empty() ? "" : ", replacing " + plan.current_version),
          .who = who};
      a = tx.AppendEvent(e);
      if (!a.ok()) return a;
    }
    for (const auto& np : plan.nodes) {
      if (np.action != PlanAction::kAssign && np.action != PlanAction::kRelease) continue;
      auto found = tx.FindNode(np.mac);
      if (!found.ok()) return found.status();
      NodeRecord node = *found;
      const bool assign = np.action == PlanAction::kAssign;
      node.profile_version = assign ? profile->version : "";
      node.image_version = assign ? np.to_image : "";
      Status u = tx.UpdateNode(node);
      if (!u.ok()) return u;
      std::string detail;
      for (const auto& r : np.reasons) detail += (detail.empty() ? "" : "; ") + r;
      EventRecord e{.node_id = node.id,
                    .node = node.name(),
                    .kind = assign ? "profile" : "released",
                    .detail = detail,
                    .who = who};
      u = tx.AppendEvent(e);
      if (!u.ok()) return u;
    }
    return Status::Ok();
  });
  if (!s.ok()) return s;
  if (plan.changes) {
    std::lock_guard lock(snapshot_of_mu_);
    snapshot_of_[profile->version] = profile->sha256;
  }
  plan.files = std::move(files);
  plan.files_against = against;
  return plan;
}

}  // namespace prov
