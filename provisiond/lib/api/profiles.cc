#include "api/profiles.h"

#include "profiles/inventory.h"

namespace prov {

using json = nlohmann::json;

HttpResponse ListProfiles(const ApiContext& ctx, const HttpRequest&) {
  Inventory& inv = *ctx.inventory;
  std::vector<std::string> errors;
  auto profiles = inv.ListProfiles(errors);
  auto current = inv.store().CurrentProfile();
  json list = json::array();
  for (const auto& [v, p] : profiles) {
    bool applied = current && current->version == v;
    list.push_back({{"version", v},
                    {"description", p.description},
                    {"sha256", p.sha256},
                    {"image", ImageRef(p)},
                    {"nodes", p.nodes.hostlist.empty() ? p.nodes.pattern : p.nodes.hostlist},
                    {"applied", applied},
                    {"applied_sha256_matches", applied && current->sha256 == p.sha256}});
  }
  json history = json::array();
  for (const auto& a : inv.store().AppliedProfiles())
    history.push_back(
        {{"version", a.version}, {"sha256", a.sha256}, {"time", a.time_ms}, {"who", a.who}});
  return HttpResponse::Json(200, {{"profiles", list}, {"errors", errors}, {"history", history}});
}

HttpResponse ShowProfile(const ApiContext& ctx, const HttpRequest& r) {
  auto p = ctx.inventory->DiskProfile(r.Param("version"));
  if (!p.ok()) return HttpResponse::FromStatus(p.status());
  return HttpResponse::Json(200, ToJson(*p));
}

HttpResponse ShowPlan(const ApiContext& ctx, const HttpRequest& r) {
  auto p = ctx.inventory->PlanProfile(r.Param("version"));
  if (!p.ok()) return HttpResponse::FromStatus(p.status());
  return HttpResponse::Json(200, ToJson(*p));
}

HttpResponse ApplyProfile(const ApiContext& ctx, const HttpRequest& r) {
  if (!r.body.empty()) {
    auto body = ParseJsonObject(r.body, {});
    if (!body.ok()) return HttpResponse::FromStatus(body.status());
  }
  auto p = ctx.inventory->ApplyProfile(r.Param("version"), r.who);
  if (!p.ok()) return HttpResponse::FromStatus(p.status());
  json answer = ToJson(*p);
  if (ctx.after_apply) answer["configure"] = ctx.after_apply(*p, r.who);
  return HttpResponse::Json(200, answer);
}

}  // namespace prov
