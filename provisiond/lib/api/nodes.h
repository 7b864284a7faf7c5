// /api/v1/nodes: list (filtered by state, profile, hostlist; in pages),
// enroll, show, change, and retire or purge.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "api/context.h"
#include "store/node_cache.h"

namespace prov {

// The node list's JSON, node by node, each kept until its node changes (the
// store's node cache gives a changed node a new record): a list of 10,000
// serializes only the nodes that changed since the last one. The daemon
// gives the API context one; without it every node is serialized.
class NodeListCache {
 public:
  std::string Json(const NodePtr& node);

 private:
  std::mutex mu_;
  std::unordered_map<int64_t, std::pair<NodePtr, std::string>> by_id_;
};

// GET /api/v1/nodes[?state=&profile=&hostlist=][&limit=N&after=NAME]: the
// nodes, sorted by hostname (discovered ones by MAC, last). With limit, at
// most N of them, from the one after the node named `after` on; "next" is
// the name to ask for the page after it (absent on the last page), "total"
// how many match in all.
HttpResponse ListNodes(const ApiContext& context, const HttpRequest& request);
HttpResponse EnrollNode(const ApiContext& context, const HttpRequest& request);
HttpResponse ShowNode(const ApiContext& context, const HttpRequest& request);
HttpResponse ChangeNode(const ApiContext& context, const HttpRequest& request);
HttpResponse RetireNode(const ApiContext& context, const HttpRequest& request);
// POST /nodes/{node}/storage/wipe {"disks": [by-id names]}: its next boot
// may wipe those disks (all its volumes take when none are named).
HttpResponse AllowStorageWipe(const ApiContext& context, const HttpRequest& request);
// POST /nodes/{node}/adopt: a machine that boots its own OS, reached over SSH
// at its address with provisiond's control key. Without {"host_key"}: the
// key it shows now and its fingerprint, nothing stored. With the key the
// operator confirmed: its facts collected (provision-facts, sent and run
// over SSH), the key pinned, the node installed and booted, then configured.
HttpResponse AdoptNode(const ApiContext& context, const HttpRequest& request);

}  // namespace prov
