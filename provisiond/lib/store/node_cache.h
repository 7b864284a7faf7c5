// The nodes table in memory: every row, loaded when the store opens and
// changed only by committed transactions (Store::Transact hands it what the
// transaction wrote, under the store's lock, in commit order). Lookups by
// hostname, MAC, id or address and the node list read it under a shared
// lock of its own: a boot request never waits for SQLite or for another
// request's commit to find its node.
//
// Records are immutable once cached; a change replaces the node's pointer,
// so a holder of an old pointer keeps a consistent (older) node, and a
// changed pointer is how readers (the node list's serialization cache) know
// a node changed.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace prov {

struct NodeRecord;
struct NodeFilter;

using NodePtr = std::shared_ptr<const NodeRecord>;

// The node list in the order provisionctl and the web page show it (named
// nodes by hostname, then discovered ones by MAC), as it was at `version`.
struct NodeListSnapshot {
  int64_t version = 0;
  std::vector<NodePtr> nodes;
};

class NodeCache {
 public:
  NodeCache();
  // Replaces everything (the store opened, or its content was replaced).
  void Reset(std::vector<NodeRecord> nodes);
  // A committed change: `node` is the row as written now, or nullopt when
  // the row with `id` was deleted.
  void Put(int64_t id, const std::optional<NodeRecord>& node);

  NodePtr Find(const std::string& hostname_or_mac) const;
  NodePtr ById(int64_t id) const;
  // The node (not retired) that holds `ip`; the lowest id if several do.
  NodePtr ByIp(const std::string& ip) const;
  // Every node, sorted; rebuilt once per version when asked.
  std::shared_ptr<const NodeListSnapshot> List() const;
  // Moves with every change.
  int64_t version() const;
  size_t size() const;

 private:
  void IndexLocked(const NodePtr& node);
  void UnindexLocked(const NodePtr& node);

  mutable std::shared_mutex mu_;
  int64_t version_ = 0;
  std::map<int64_t, NodePtr> by_id_;
  std::unordered_map<std::string, int64_t> by_name_;  // hostname and MAC -> id
  // ip -> the ids holding it, lowest first: many nodes may share one (a
  // retired node's, or every simulated node on loopback), and a change to
  // one of them must not walk the others.
  std::unordered_map<std::string, std::set<int64_t>> by_ip_;
  // The sorted list for version_, made on demand (guarded by list_mu_).
  mutable std::mutex list_mu_;
  mutable std::shared_ptr<const NodeListSnapshot> list_;
};

// Whether `node` passes `filter` (state, profile version).
bool NodeMatches(const NodeRecord& node, const NodeFilter& filter);

}  // namespace prov
