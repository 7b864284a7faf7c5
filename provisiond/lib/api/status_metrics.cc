#include "api/status_metrics.h"

#include "console/console_listener.h"
#include "dhcp/preflight.h"
#include "ha/lease.h"
#include "profiles/inventory.h"
#include "store/state_history.h"

namespace prov {

using json = nlohmann::json;

// Events read for the counts over time: a 10,000-node boot storm writes
// about 150,000; a window with more is whole only from where reading stopped.
constexpr int64_t kStateEventsRead = 200000;

namespace {

// Which control node answers, and since when it is the active one: the
// lease's tenure with PostgreSQL; with SQLite the one control node there is.
json ControlOf(const ApiContext& ctx) {
  if (!ctx.lease) return {{"mode", "single"}, {"database", "sqlite"}};
  const LeaseState t = ctx.lease->tenure();
  return {{"mode", "active"},    {"database", "postgresql"}, {"node", t.holder},
          {"since", t.since_ms}, {"epoch", t.epoch},         {"lease_expires", t.expires_ms}};
}

}  // namespace

HttpResponse GetStatus(const ApiContext& ctx, const HttpRequest& request) {
  Inventory& inv = *ctx.inventory;
  json counts = json::object();
  int64_t total = 0;
  for (const auto& [state, n] : inv.store().CountByState()) {
    counts[std::string(ToString(state))] = n;
    total += n;
  }
  json applied = nullptr;
  if (auto cur = inv.store().CurrentProfile())
    applied = {{"version", cur->version},
               {"sha256", cur->sha256},
               {"time", cur->time_ms},
               {"who", cur->who}};
  std::vector<std::string> errors;
  auto profiles = inv.ListProfiles(errors);
  json versions = json::array();
  for (const auto& [v, p] : profiles) versions.push_back(v);
  return HttpResponse::Json(200,
                            {{"service", "provisiond"},
                             {"version", ctx.version},
                             {"nodes", total},
                             {"states", counts},
                             {"applied_profile", applied},
                             {"profiles", versions},
                             {"profile_errors", errors},
                             {"last_event", inv.store().LastEventId()},
                             {"control", ControlOf(ctx)},
                             {"caller", {{"name", request.who}, {"role", ToString(request.role)}}},
                             {"https", {{"url", ctx.tls_url}, {"sha256", ctx.tls_fingerprint}}}});
}

HttpResponse GetPreflight(const ApiContext& ctx, const HttpRequest&) {
  if (!ctx.preflight)
    return HttpResponse::Error(409,
                               "no 'interface' is configured: provisiond serves no boot network");
  PreflightOptions opt;
  for (const auto& [state, n] : ctx.inventory->store().CountByState())
    if (state != NodeState::kDiscovered && state != NodeState::kRetired)
      opt.enrolled_nodes += static_cast<int>(n);
  opt.own_address = ctx.own_address;
  opt.check_ports = false;  // our own dnsmasq holds them now
  json checks = json::array();
  bool ok = true;
  for (const auto& c : ctx.preflight(opt)) {
    // dnsmasq is ours and running, so the dhcp ports being taken is expected.
    checks.push_back({{"name", c.name}, {"ok", c.ok}, {"fatal", c.fatal}, {"detail", c.detail}});
    ok &= c.ok;
  }
  return HttpResponse::Json(200, {{"ok", ok}, {"checks", checks}});
}

HttpResponse GetMetrics(const ApiContext& ctx, const HttpRequest&) {
  Store& store = ctx.inventory->store();
  std::string out =
      "# HELP provisiond_nodes Nodes in the inventory by state.\n"
      "# TYPE provisiond_nodes gauge\n";
  for (const auto& [state, n] : store.CountByState())
    out += "provisiond_nodes{state=\"" + std::string(ToString(state)) + "\"} " + std::to_string(n) +
           "\n";
  out +=
      "# HELP provisiond_events_total Events recorded.\n"
      "# TYPE provisiond_events_total counter\n"
      "provisiond_events_total " +
      std::to_string(store.LastEventId()) + "\n";
  out += store.MetricsText();
  if (ctx.console) out += ctx.console->MetricsText();
  if (ctx.lease) {
    // The lease's epoch counts its holders: every one after the first took
    // over from another control node.
    const LeaseState t = ctx.lease->tenure();
    out +=
        "# HELP provisiond_control_failovers_total Takeovers of the control lease by another "
        "control node, cluster-wide.\n"
        "# TYPE provisiond_control_failovers_total counter\n"
        "provisiond_control_failovers_total " +
        std::to_string(std::max<int64_t>(t.epoch - 1, 0)) +
        "\n# HELP provisiond_control_active_since_seconds When this control node became "
        "the active one (unix time).\n"
        "# TYPE provisiond_control_active_since_seconds gauge\n"
        "provisiond_control_active_since_seconds " +
        std::to_string(t.since_ms / 1000) + "\n";
  }
  if (ctx.route_metrics) out += ctx.route_metrics->Prometheus();
  return HttpResponse::Text(200, std::move(out), "text/plain; version=0.0.4");
}

HttpResponse StateCountsOverTime(const ApiContext& ctx, const HttpRequest& r) {
  auto hours = r.QueryInt("hours", 6, 1, 336);
  if (!hours.ok()) return HttpResponse::FromStatus(hours.status());
  auto points = r.QueryInt("points", 120, 1, 720);
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
