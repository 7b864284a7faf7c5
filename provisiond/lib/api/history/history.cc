#include "api/history/history.h"

#include <string>

#include "profiles/inventory.h"
#include "store/boot_history.h"
#include "store/state_history.h"

namespace prov {
namespace {

using json = nlohmann::json;

// A node's events read for its boots: enough for many boots with the runs
// and health checks between them; a node with more shows the boots within.
constexpr int64_t kBootEventsRead = 20000;
// Events read for the counts over time: a 10,000-node boot storm writes
// about 150,000; a window with more is whole only from where reading stopped.
constexpr int64_t kStateEventsRead = 200000;

Result<int64_t> HistoryQueryNumber(const HttpRequest& r, const char* name, int64_t fallback,
                                   int64_t min, int64_t max) {
  std::string v = r.Query(name);
  if (v.empty()) return fallback;
  int64_t n =
      v.find_first_not_of("0123456789") == std::string::npos && v.size() <= 15 ? std::stoll(v) : -1;
  if (n < min || n > max)
    return Status::Invalid(std::string("query parameter '") + name + "' must be a number from " +
                           std::to_string(min) + " to " + std::to_string(max));
  return n;
}

}  // namespace

HttpResponse NodeBoots(const ApiContext& ctx, const HttpRequest& r) {
  auto count = HistoryQueryNumber(r, "count", 2, 1, 10);
  if (!count.ok()) return HttpResponse::FromStatus(count.status());
  Store& store = ctx.inventory->store();
  auto node = store.FindNode(r.Param("node"));
  if (!node.ok()) return HttpResponse::FromStatus(node.status());
  std::vector<EventRecord> events = store.LastEvents(node->id, kBootEventsRead);
  const bool more = static_cast<int64_t>(events.size()) == kBootEventsRead;
  json boots = json::array();
  for (const BootTimeline& t : RecentBoots(*node, std::move(events), static_cast<size_t>(*count))) {
    json steps = json::array();
    const int64_t start = t.steps.front().time_ms;
    int64_t previous = start;
    for (const auto& s : t.steps) {
      steps.push_back({{"stage", s.stage},
                       {"time", s.time_ms},
                       {"after_ms", s.time_ms - start},
                       {"took_ms", s.time_ms - previous},
                       {"detail", s.detail}});
      previous = s.time_ms;
    }
    boots.push_back({{"start", start},
                     {"steps", steps},
                     {"errors", t.errors},
                     {"last_stage", t.last_stage},
                     {"next_stage", t.next_stage},
                     {"complete", t.last_stage == "hello"}});
  }
  return HttpResponse::Json(200, {{"node", node->name()},
                                  {"state", std::string(ToString(node->state))},
                                  {"stages", BootStageOrder()},
                                  {"boots", boots},
                                  {"events_read_all", !more}});
}

HttpResponse StateCountsOverTime(const ApiContext& ctx, const HttpRequest& r) {
  auto hours = HistoryQueryNumber(r, "hours", 6, 1, 336);
  if (!hours.ok()) return HttpResponse::FromStatus(hours.status());
  auto points = HistoryQueryNumber(r, "points", 120, 1, 720);
  if (!points.ok()) return HttpResponse::FromStatus(points.status());
  const int64_t since = NowMs() - *hours * 3600 * 1000;
  StateHistory h =
      ReadStateHistory(ctx.inventory->store(), since, static_cast<int>(*points), kStateEventsRead);
  json states = json::object();
  json order = json::array();  // the life cycle's order, for the legend
  for (NodeState s : AllNodeStates()) {
    states[std::string(ToString(s))] = h.series.counts.at(s);
    order.push_back(std::string(ToString(s)));
  }
  return HttpResponse::Json(200, {{"since", h.series.since_ms},
                                  {"step_ms", h.series.step_ms},
                                  {"until", h.series.until_ms},
                                  {"order", order},
                                  {"states", states},
                                  {"complete_since", h.complete_since_ms},
                                  {"events_read", h.events_read},
                                  {"last_event", h.last_event}});
}

}  // namespace prov
