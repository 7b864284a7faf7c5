#include "api/events.h"

#include <algorithm>
#include <chrono>

#include "profiles/inventory.h"

namespace prov {
namespace {

using json = nlohmann::json;

}  // namespace

HttpResponse ListEvents(const ApiContext& ctx, const HttpRequest& r) {
  Inventory& inv = *ctx.inventory;
  auto after = r.QueryInt("after", 0, 0, INT64_MAX / 2);
  auto limit = r.QueryInt("limit", 1000, 1, 100000);
  auto wait = r.QueryInt("wait", 0, 0, 3600);
  for (const Status* s : {&after.status(), &limit.status(), &wait.status()})
    if (!s->ok()) return HttpResponse::FromStatus(*s);
  int64_t node_id = 0;
  if (std::string node = r.Query("node"); !node.empty()) {
    auto n = inv.store().FindNode(node);
    if (!n.ok()) return HttpResponse::FromStatus(n.status());
    node_id = n->id;
  }
  // last=N: the newest N events (oldest first), for "show me what happened".
  auto last = r.QueryInt("last", 0, 0, 100000);
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

nlohmann::json ToJson(const ConsoleLine& line) {
  return {{"id", line.id},
          {"boot", line.boot},
          {"time", line.time_ms},
          {"source", line.source},
          {"text", line.text}};
}

HttpResponse NodeConsole(const ApiContext& ctx, const HttpRequest& r) {
  auto node = ctx.inventory->store().FindNode(r.Param("node"));
  if (!node.ok()) return HttpResponse::FromStatus(node.status());
  auto boot = r.QueryInt("boot", 0, 0, INT64_MAX / 2);
  auto after = r.QueryInt("after", 0, 0, INT64_MAX / 2);
  auto limit = r.QueryInt("limit", 5000, 1, 100000);
  auto wait = r.QueryInt("wait", 0, 0, 3600);
  for (const Status* s : {&boot.status(), &after.status(), &limit.status(), &wait.status()})
    if (!s->ok()) return HttpResponse::FromStatus(*s);
  nlohmann::json out = {{"node", node->name()}, {"enabled", ctx.console_log != nullptr}};
  if (!ctx.console_log) {
    out.update({{"boot", 0},
                {"boots", nlohmann::json::array()},
                {"lines", nlohmann::json::array()},
                {"next", *after}});
    return HttpResponse::Json(200, out);
  }
  ConsoleLog& log = *ctx.console_log;
  auto lines = log.Lines(node->id, *boot, *after, *limit);
  if (lines.empty() && *wait > 0) {
    // Lines of any node wake the wait; it reads again and waits on if none
    // are this node's.
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::milliseconds(std::min(*wait * 1000, ctx.max_event_wait_ms));
    int64_t seen = std::max(*after, log.LastId());
    while (lines.empty() && std::chrono::steady_clock::now() < deadline) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      bool more = log.Wait(seen, left.count());
      seen = log.LastId();
      lines = log.Lines(node->id, *boot, *after, *limit);
      if (!more) break;
    }
  }
  auto boots = log.Boots(node->id);
  nlohmann::json list = nlohmann::json::array();
  for (const auto& l : lines) list.push_back(ToJson(l));
  out["boot"] = !lines.empty() ? lines.back().boot
                : *boot != 0   ? *boot
                               : (boots.empty() ? 0 : boots.back());
  out["boots"] = boots;
  out["lines"] = std::move(list);
  out["next"] = lines.empty() ? *after : lines.back().id;
  return HttpResponse::Json(200, out);
}

}  // namespace prov
