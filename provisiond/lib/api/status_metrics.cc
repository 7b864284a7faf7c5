#include "api/status_metrics.h"

#include <chrono>

#include "base/strings.h"
#include "console/console_listener.h"
#include "dhcp/preflight.h"
#include "ha/lease.h"
#include "images/image_service.h"
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
// What each control node lacks of the image versions in use (a node's root,
// a profile's image): a standby that took over without them could not serve
// those nodes. Read from control_nodes (ha/control_nodes.h).
struct ControlNodeImages {
  ControlNodeReport report;
  std::vector<std::pair<std::string, std::string>> lacks;  // ref, who uses it
};

Result<std::vector<ControlNodeImages>> ControlNodesImages(const ApiContext& ctx) {
  auto nodes = ctx.lease->ControlNodes();
  if (!nodes.ok()) return nodes.status();
  const std::map<std::string, std::string> used =
      ctx.image_service ? ctx.image_service->InUse() : std::map<std::string, std::string>{};
  std::vector<std::string> refs;
  for (const auto& [ref, why] : used) refs.push_back(ref);
  std::vector<ControlNodeImages> out;
  const std::string me = ctx.lease->settings().holder;
  for (auto& n : *nodes) {
    // This control node's own store as it is now, not as last reported.
    if (n.name == me && ctx.images) DescribeImages(*ctx.images, n);
    ControlNodeImages c{std::move(n), {}};
    for (const std::string& ref : Lacking(c.report, refs)) c.lacks.emplace_back(ref, used.at(ref));
    out.push_back(std::move(c));
  }
  return out;
}

// The control nodes for GET /status: their reports change every
// control.report_ms, and the web page asks on every live update.
json ControlNodesJson(const ApiContext& ctx) {
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  ApiContext::ControlNodesCache& cache = *ctx.control_nodes;
  std::lock_guard lock(cache.mu);  // one request works it out, the others wait for it
  if (cache.at_ms >= 0 && now - cache.at_ms < 1000) return cache.nodes;
  json nodes = json::array();
  if (auto all = ControlNodesImages(ctx); all.ok()) {
    for (const auto& c : *all) {
      json lacks = json::array();
      for (const auto& [ref, why] : c.lacks) lacks.push_back({{"image", ref}, {"used", why}});
      nodes.push_back({{"name", c.report.name},
                       {"role", c.report.role},
                       {"reported_ms_ago", c.report.age_ms},
                       {"images", c.report.images.size()},
                       {"copying", c.report.copying},
                       {"lacks", lacks},
                       {"alike", c.report.alike}});
    }
  }
  cache.at_ms = now;
  cache.nodes = nodes;
  return nodes;
}

json ControlOf(const ApiContext& ctx) {
  if (!ctx.lease) return {{"mode", "single"}, {"database", "sqlite"}};
  const LeaseState t = ctx.lease->tenure();
  json nodes = ControlNodesJson(ctx);
  return {{"mode", "active"},    {"database", "postgresql"}, {"node", t.holder},
          {"since", t.since_ms}, {"epoch", t.epoch},         {"lease_expires", t.expires_ms},
          {"nodes", nodes}};
}

// Preflight's part with several control nodes: this one holds every image
// version in use, and so does every other (a standby that lacks one could not
// serve it after a takeover).
std::vector<PreflightCheck> ControlNodeChecks(const ApiContext& ctx) {
  std::vector<PreflightCheck> out;
  auto all = ControlNodesImages(ctx);
  if (!all.ok()) {
    out.push_back({"control nodes' images", false, false, all.status().message()});
    return out;
  }
  const std::string me = ctx.lease->tenure().holder;
  std::vector<std::string> others_lack;
  PreflightCheck here{"images on this control node", true, false, ""};
  for (const auto& c : *all) {
    std::vector<std::string> said;
    for (const auto& [ref, why] : c.lacks) said.push_back(ref + " (" + why + ")");
    if (c.report.name == me) {
      here.ok = c.lacks.empty();
      here.detail = here.ok ? "every image version in use is here"
                            : "this control node (" + me + ") lacks " + Join(said, ", ");
    } else if (!c.lacks.empty()) {
      others_lack.push_back(c.report.name + " lacks " + Join(said, ", ") +
                            (c.report.copying.empty() ? "" : "; copying " + c.report.copying));
    }
  }
  out.push_back(here);
  out.push_back({"images on the other control nodes", others_lack.empty(), false,
                 others_lack.empty() ? "every control node holds every image version in use"
                                     : Join(others_lack, "; ")});
  // What a takeover needs alike (docs/ha.md "Setting it up"), of the control
  // nodes that reported within the last minute.
  if (ctx.control_alike) {
    const auto mine = ctx.control_alike();
    std::vector<std::string> unlike;
    for (const auto& c : *all)
      if (c.report.name != me && c.report.age_ms <= kControlNodeDownMs)
        if (auto d = Unlike(mine, c.report.alike); !d.empty())
          unlike.push_back(c.report.name + "'s " + Join(d, ", ") + " differ from " + me + "'s");
    out.push_back({"control nodes alike", unlike.empty(), false,
                   unlike.empty()
                       ? "every control node has this one's control key, profiles, "
                         "playbooks and secrets"
                       : Join(unlike, "; ") +
                             " (copy <data_dir>/ssh and <data_dir>/secrets; keep profiles_dir and "
                             "playbooks_dir alike)"});
  }
  return out;
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
  if (!ctx.preflight && !ctx.lease)
    return HttpResponse::Error(409,
                               "no 'interface' is configured: provisiond serves no boot network");
  json checks = json::array();
  bool ok = true;
  auto add = [&](const PreflightCheck& c) {
    checks.push_back({{"name", c.name}, {"ok", c.ok}, {"fatal", c.fatal}, {"detail", c.detail}});
    ok &= c.ok;
  };
  if (ctx.lease)
    for (const auto& c : ControlNodeChecks(ctx)) add(c);
  if (!ctx.preflight) return HttpResponse::Json(200, {{"ok", ok}, {"checks", checks}});
  PreflightOptions opt;
  for (const auto& [state, n] : ctx.inventory->store().CountByState())
    if (state != NodeState::kDiscovered && state != NodeState::kRetired)
      opt.enrolled_nodes += static_cast<int>(n);
  opt.own_address = ctx.own_address;
  opt.check_ports = false;  // our own dnsmasq holds them now
  // dnsmasq is ours and running, so the dhcp ports being taken is expected.
  for (const auto& c : ctx.preflight(opt)) add(c);
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
