// The variables a node's playbooks see, as Ansible's inventory would give
// them: inventory_hostname, ansible_host, groups (all, and the profile's
// group), hostvars of every node of the group with its recorded facts, and
// provisiond's own (provisiond_facts, provisiond_mac, provisiond_profile,
// provisiond_control_key), and the facts Ansible's setup would gather that
// roles use (ansible_facts and ansible_* as top-level vars: distribution,
// os_family, architecture, hostname, memory, CPUs, default_ipv4), derived
// from what the node reported when it phoned home (AnsibleFacts). Facts are
// stored as JSON text; each node's text is parsed once and kept until it
// changes, so configuring a group of N nodes parses N facts, not N².
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "store/store.h"

namespace prov {

// The setup facts (names without "ansible_") of a node from its recorded
// facts and record: a fact the node did not report is left out, so
// `ansible_distribution is defined` tells the truth.
nlohmann::json AnsibleFacts(const NodeRecord& node, const nlohmann::json& facts);

class NodeVarsBuilder {
 public:
  explicit NodeVarsBuilder(std::string control_key) : control_key_(std::move(control_key)) {}

  // `group` is the node's cluster (the nodes of its profile); the node is
  // added to it when missing. Thread-safe.
  nlohmann::json For(const NodeRecord& node, const std::vector<NodeRecord>& group);

  // Facts parsed so far (each node's once per change of its facts).
  int64_t parses() const;

 private:
  struct Parsed {
    std::string text;  // facts, name, ip and mac: what `facts` and `ansible` are made of
    std::shared_ptr<const nlohmann::json> facts;
    std::shared_ptr<const nlohmann::json> ansible;  // AnsibleFacts
  };
  std::shared_ptr<const Parsed> Facts(const NodeRecord& node);

  const std::string control_key_;
  mutable std::mutex mu_;
  std::map<int64_t, std::shared_ptr<const Parsed>> parsed_;  // by node id; guarded by mu_
  int64_t parses_ = 0;                                       // guarded by mu_
};

}  // namespace prov
