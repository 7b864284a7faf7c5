#include "api/status_metrics.h"

#include "console/console_listener.h"
#include "dhcp/preflight.h"
#include "profiles/inventory.h"

namespace prov {

using json = nlohmann::json;

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
                             {"caller", {{"name", request.who}, {"role", request.role}}},
                             {"https", {{"url", ctx.tls_url}, {"sha256", ctx.tls_fingerprint}}}});
}

HttpResponse GetPreflight(const ApiContext& ctx, const HttpRequest&) {
  if (ctx.config.interface.empty())
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
  for (const auto& c : RunPreflight(ctx.config, opt)) {
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
  if (ctx.route_metrics) out += ctx.route_metrics->Prometheus();
  return HttpResponse::Text(200, std::move(out), "text/plain; version=0.0.4");
}

}  // namespace prov
