#include "configure/node_vars.h"

namespace prov {

using json = nlohmann::json;

std::shared_ptr<const json> NodeVarsBuilder::Facts(const NodeRecord& node) {
  {
    std::lock_guard lock(mu_);
    auto it = parsed_.find(node.id);
    if (it != parsed_.end() && it->second.text == node.facts) return it->second.facts;
  }
  // Facts come from the node: text that is not a JSON object reads as none.
  json f = json::parse(node.facts, nullptr, false);
  if (f.is_discarded() || !f.is_object()) f = json::object();
  auto shared = std::make_shared<const json>(std::move(f));
  std::lock_guard lock(mu_);
  ++parses_;
  parsed_[node.id] = Parsed{node.facts, shared};
  return shared;
}

json NodeVarsBuilder::For(const NodeRecord& node, const std::vector<NodeRecord>& group) {
  json all = json::array();
  json hostvars = json::object();
  auto add = [&](const NodeRecord& n) {
    all.push_back(n.name());
    hostvars[n.name()] = {
        {"ansible_host", n.ip}, {"provisiond_mac", n.mac}, {"provisiond_facts", *Facts(n)}};
  };
  for (const auto& n : group) add(n);
  if (!hostvars.contains(node.name())) add(node);
  json groups = {{"all", all}, {"ungrouped", json::array()}};
  if (!node.profile_version.empty()) groups[node.profile_version] = all;
  return {{"inventory_hostname", node.name()},
          {"inventory_hostname_short", node.name().substr(0, node.name().find('.'))},
          {"ansible_host", node.ip},
          {"groups", groups},
          {"hostvars", hostvars},
          {"provisiond_facts", *Facts(node)},
          {"provisiond_mac", node.mac},
          {"provisiond_profile", node.profile_version},
          {"provisiond_control_key", control_key_}};
}

int64_t NodeVarsBuilder::parses() const {
  std::lock_guard lock(mu_);
  return parses_;
}

}  // namespace prov
