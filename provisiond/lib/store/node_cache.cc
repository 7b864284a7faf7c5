#include "store/node_cache.h"

#include <algorithm>
#include <mutex>

#include "store/store.h"

namespace prov {

NodeCache::NodeCache() : list_(std::make_shared<NodeListSnapshot>()) {}

void NodeCache::Reset(std::vector<NodeRecord> nodes) {
  std::unique_lock lock(mu_);
  by_id_.clear();
  by_name_.clear();
  by_ip_.clear();
  for (auto& n : nodes) {
    auto ptr = std::make_shared<const NodeRecord>(std::move(n));
    by_id_[ptr->id] = ptr;
    IndexLocked(ptr);
  }
  ++version_;
}

void NodeCache::IndexLocked(const NodePtr& node) {
  by_name_[node->mac] = node->id;
  if (!node->hostname.empty()) by_name_[node->hostname] = node->id;
  if (!node->ip.empty()) by_ip_[node->ip].insert(node->id);
}

void NodeCache::UnindexLocked(const NodePtr& node) {
  auto drop = [&](const std::string& key) {
    auto it = by_name_.find(key);
    if (it != by_name_.end() && it->second == node->id) by_name_.erase(it);
  };
  drop(node->mac);
  if (!node->hostname.empty()) drop(node->hostname);
  if (auto it = by_ip_.find(node->ip); it != by_ip_.end()) {
    it->second.erase(node->id);
    if (it->second.empty()) by_ip_.erase(it);
  }
}

void NodeCache::Put(int64_t id, const std::optional<NodeRecord>& node) {
  std::unique_lock lock(mu_);
  auto it = by_id_.find(id);
  if (it != by_id_.end()) {
    UnindexLocked(it->second);
    by_id_.erase(it);
  }
  if (node) {
    auto ptr = std::make_shared<const NodeRecord>(*node);
    by_id_[id] = ptr;
    IndexLocked(ptr);
  }
  ++version_;
}

NodePtr NodeCache::Find(const std::string& name) const {
  std::shared_lock lock(mu_);
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return nullptr;
  auto n = by_id_.find(it->second);
  return n == by_id_.end() ? nullptr : n->second;
}

NodePtr NodeCache::ById(int64_t id) const {
  std::shared_lock lock(mu_);
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : it->second;
}

NodePtr NodeCache::ByIp(const std::string& ip) const {
  std::shared_lock lock(mu_);
  auto ids = by_ip_.find(ip);
  if (ids == by_ip_.end()) return nullptr;
  for (int64_t id : ids->second) {  // lowest id first
    auto n = by_id_.find(id);
    if (n != by_id_.end() && n->second->state != NodeState::kRetired) return n->second;
  }
  return nullptr;
}

std::shared_ptr<const NodeListSnapshot> NodeCache::List() const {
  std::lock_guard list_lock(list_mu_);
  auto list = std::make_shared<NodeListSnapshot>();
  {
    std::shared_lock lock(mu_);
    if (list_->version == version_) return list_;
    list->version = version_;
    list->nodes.reserve(by_id_.size());
    for (const auto& [id, node] : by_id_) list->nodes.push_back(node);
  }
  // Named nodes by hostname, then discovered ones by MAC (what the SQL
  // ORDER BY hostname IS NULL, hostname, mac gave).
  std::sort(list->nodes.begin(), list->nodes.end(), [](const NodePtr& a, const NodePtr& b) {
    if (a->hostname.empty() != b->hostname.empty()) return b->hostname.empty();
    if (a->hostname != b->hostname) return a->hostname < b->hostname;
    return a->mac < b->mac;
  });
  list_ = std::move(list);
  return list_;
}

int64_t NodeCache::version() const {
  std::shared_lock lock(mu_);
  return version_;
}

size_t NodeCache::size() const {
  std::shared_lock lock(mu_);
  return by_id_.size();
}

bool NodeMatches(const NodeRecord& node, const NodeFilter& filter) {
  if (filter.state && node.state != *filter.state) return false;
  if (filter.profile_version && node.profile_version != *filter.profile_version) return false;
  return true;
}

}  // namespace prov
