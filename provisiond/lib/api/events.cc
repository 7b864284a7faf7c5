#include "api/events.h"

#include <algorithm>
#include <chrono>

#include "profiles/inventory.h"

namespace prov {
namespace {

using json = nlohmann::json;

Result<int64_t> IntQuery(const HttpRequest& r, const char* name, int64_t fallback, int64_t min,
                         int64_t max) {
  std::string v = r.Query(name);
  if (v.empty()) return fallback;
  if (v.find_first_not_of("0123456789") != std::string::npos || v.size() > 15)
    return Status::Invalid(std::string("query parameter '") + name + "' must be a number");
  int64_t n = std::stoll(v);
  if (n < min || n > max)
    return Status::Invalid(std::string("query parameter '") + name + "' must be between " +
                           std::to_string(min) + " and " + std::to_string(max));
  return n;
}

}  // namespace

HttpResponse ListEvents(const ApiContext& ctx, const HttpRequest& r) {
  Inventory& inv = *ctx.inventory;
  auto after = IntQuery(r, "after", 0, 0, INT64_MAX / 2);
  auto limit = IntQuery(r, "limit", 1000, 1, 100000);
  auto wait = IntQuery(r, "wait", 0, 0, 3600);
  for (const Status* s : {&after.status(), &limit.status(), &wait.status()})
    if (!s->ok()) return HttpResponse::FromStatus(*s);
  int64_t node_id = 0;
  if (std::string node = r.Query("node"); !node.empty()) {
    auto n = inv.store().FindNode(node);
    if (!n.ok()) return HttpResponse::FromStatus(n.status());
    node_id = n->id;
  }
  // last=N: the newest N events (oldest first), for "show me what happened".
  auto last = IntQuery(r, "last", 0, 0, 100000);
  if (!last.ok()) return HttpResponse::FromStatus(last.status());
  // The cursor up to which events have been scanned: with a node filter, the
  // events of other nodes are skipped by advancing it, so a long-poll never
  // spins on them.
  int64_t scanned = inv.store().LastEventId();
  auto events = *last > 0 ? inv.store().LastEvents(node_id, *last)
                          : inv.store().ListEvents(*after, node_id, *limit);
  if (events.empty() && *wait > 0 && *last == 0) {
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::milliseconds(std::min(*wait * 1000, ctx.max_event_wait_ms));
    while (events.empty() && std::chrono::steady_clock::now() < deadline) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      // false: provisiond is stopping; answer with what there is.
      bool more = inv.store().WaitForEvents(std::max(*after, scanned), left.count());
      int64_t now_last = inv.store().LastEventId();
      events = inv.store().ListEvents(std::max(*after, scanned), node_id, *limit);
      scanned = now_last;
      if (!more) break;
    }
  }
  json list = json::array();
  for (const auto& e : events) list.push_back(ToJson(e));
  int64_t next = events.empty() ? std::max(*after, node_id ? scanned : *after) : events.back().id;
  return HttpResponse::Json(200, {{"events", list}, {"next", next}});
}

}  // namespace prov
