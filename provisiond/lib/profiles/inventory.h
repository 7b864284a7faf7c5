// The inventory's domain operations: enrolling, changing and retiring nodes,
// planning and applying profiles. Each operation validates everything first,
// then writes in one store transaction (state, rows and events together).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "profiles/profile.h"
#include "store/store.h"

namespace prov {

struct EnrollRequest {
  std::string hostname;
  std::string mac;
  std::string ip;
  std::string profile;  // empty: the applied profile, if it covers the node
  nlohmann::json power = nlohmann::json::object();
};

struct NodeChange {
  std::optional<std::string> hostname;
  std::optional<std::string> ip;
  std::optional<std::string> profile;  // "" releases the node from its profile
  std::optional<NodeState> state;      // operator states only
  std::optional<std::string> reason;
  std::optional<std::string> host_key;
  std::optional<nlohmann::json> power;  // {} removes the driver
};

// What applying a profile does to one node.
struct NodePlan {
  std::string node;
  std::string mac;
  std::string state;
  // assign: gets the profile; unchanged: has it already; release: not
  // covered any more; missing: covered by name but not enrolled.
  std::string action;
  std::string from_profile;
  std::string from_image;
  std::string to_image;
  bool reboot = false;                 // its image changes
  std::vector<std::string> playbooks;  // to run once it is booted
  std::vector<std::string> reasons;    // why, in words
};

struct Plan {
  std::string version;
  std::string sha256;
  std::string current_version;  // applied now ("" if none)
  std::string current_sha256;
  bool changes = false;  // false: applying it again changes nothing
  std::vector<NodePlan> nodes;
};

nlohmann::json ToJson(const NodeRecord& n);
nlohmann::json ToJson(const EventRecord& e);
nlohmann::json ToJson(const NodePlan& p);
nlohmann::json ToJson(const Plan& p);

class Inventory {
 public:
  // `store` must outlive the inventory. Profiles are read from disk on each
  // use, so an edited profile is seen (and its new hash shows in the plan).
  Inventory(Store& store, std::string profiles_dir, std::string playbooks_dir);

  Result<NodeRecord> Enroll(const EnrollRequest& request, const std::string& who);
  Result<NodeRecord> Change(const std::string& name, const NodeChange& change,
                            const std::string& who);
  // Retires the node (it keeps its row and history); `purge` deletes the row
  // (its events stay, by name).
  Status Retire(const std::string& name, bool purge, const std::string& who);

  Result<Profile> GetProfile(const std::string& version) const;
  std::map<std::string, Profile> ListProfiles(std::vector<std::string>& errors) const;
  Result<Plan> PlanProfile(const std::string& version);
  // Validates, records the version with its hash, assigns and releases nodes,
  // and appends events, all in one transaction. Returns the plan it carried
  // out; plan.changes is false when nothing had to change.
  Result<Plan> ApplyProfile(const std::string& version, const std::string& who);

  Store& store() { return store_; }

 private:
  Plan ComputePlan(const Profile& profile, StoreTx& tx);

  Store& store_;
  std::string profiles_dir_;
  std::string playbooks_dir_;
};

// The image a profile gives its nodes, as stored on the node ("lab" or
// "lab@<version>").
std::string ImageRef(const Profile& p);

}  // namespace prov
