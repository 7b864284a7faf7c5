// The variables a node's playbooks see, as Ansible's inventory would give
// them: inventory_hostname, ansible_host, groups (all, and the profile's
// group), hostvars of every node of the group with its recorded facts, and
// provisiond's own (provisiond_facts, provisiond_mac, provisiond_profile,
// provisiond_control_key). Facts are stored as JSON text; each node's text is
// parsed once and kept until it changes, so configuring a group of N nodes
// parses N facts, not N².
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "store/store.h"

namespace prov {

class NodeVarsBuilder {
 public:
  explicit NodeVarsBuilder(std::string control_key) : control_key_(std::move(control_key)) {}

  // `group` is the node's cluster (the nodes of its profile); the node is
  // added to it when missing. Thread-safe.
  nlohmann::json For(const NodeRecord& node, const std::vector<NodeRecord>& group);

  // Facts parsed so far (each node's once per change of its facts).
  int64_t parses() const;

 private:
  std::shared_ptr<const nlohmann::json> Facts(const NodeRecord& node);

  struct Parsed {
    std::string text;
    std::shared_ptr<const nlohmann::json> facts;
  };
  const std::string control_key_;
  mutable std::mutex mu_;
  std::map<int64_t, Parsed> parsed_;  // by node id; guarded by mu_
  int64_t parses_ = 0;                // guarded by mu_
};

}  // namespace prov
