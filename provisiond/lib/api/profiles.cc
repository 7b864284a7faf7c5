#include "api/profiles.h"

#include "bake/derived_image.h"
#include "configure/secrets.h"
#include "ha/lease.h"
#include "images/image_service.h"
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

namespace {

// With several control nodes, a profile's image must be on every one that is
// up before a node is pointed at it: after a takeover, the new active serves
// the node's root. A control node silent for a minute is down (status says
// so) and holds nothing up.

Status ImageOnEveryControlNode(const ApiContext& ctx, const std::string& version) {
  if (!ctx.lease || !ctx.images) return Status::Ok();
  auto profile = ctx.inventory->DiskProfile(version);
  if (!profile.ok()) return Status::Ok();  // the apply says why
  auto image = ctx.images->Resolve(ctx.inventory->ChooseImage(*profile).ref);
  if (!image.ok()) return Status::Ok();  // the apply says why
  auto nodes = ctx.lease->ControlNodes();
  if (!nodes.ok()) return nodes.status();
  const std::string me = ctx.lease->settings().holder;  // resolved here: it is here
  for (const auto& n : *nodes) {
    if (n.name == me || n.age_ms > kControlNodeDownMs || Lacking(n, {image->ref()}).empty())
      continue;
    return Status::Conflict(
        "image " + image->ref() + " is not on control node " + n.name + " yet" +
        (n.copying.empty() ? "" : " (copying " + n.copying + ")") +
        ": after a takeover it could not serve the nodes' root. Apply again once it is "
        "there (provisionctl status shows each control node's copies)");
  }
  return Status::Ok();
}

}  // namespace

HttpResponse ApplyProfile(const ApiContext& ctx, const HttpRequest& r) {
  if (!r.body.empty()) {
    auto body = ParseJsonObject(r.body, {});
    if (!body.ok()) return HttpResponse::FromStatus(body.status());
  }
  if (Status s = ImageOnEveryControlNode(ctx, r.Param("version")); !s.ok())
    return HttpResponse::FromStatus(s);
  auto p = ctx.inventory->ApplyProfile(r.Param("version"), r.who);
  if (!p.ok()) return HttpResponse::FromStatus(p.status());
  json answer = ToJson(*p);
  if (ctx.after_apply) answer["configure"] = ctx.after_apply(*p, r.who);
  return HttpResponse::Json(200, answer);
}

HttpResponse BakeProfile(const ApiContext& ctx, const HttpRequest& r) {
  if (!ctx.images || !ctx.image_service)
    return HttpResponse::Error(503, "this provisiond has no image store");
  auto disk = ctx.inventory->DiskProfile(r.Param("version"));
  if (!disk.ok()) return HttpResponse::FromStatus(disk.status());
  // What is baked is what apply will commit: the snapshot of these files.
  auto profile = ctx.inventory->snapshots().Commit(*disk);
  if (!profile.ok()) return HttpResponse::FromStatus(profile.status());
  auto plan = PlanDerivedImage(**profile, *ctx.images);
  if (!plan.ok()) return HttpResponse::FromStatus(plan.status());
  json answer = {{"image", plan->ref()}, {"base", plan->base}, {"built", plan->built}};
  if (plan->built) return HttpResponse::Json(200, answer);
  ImageCatalog* catalog = ctx.images;
  ImageService* service = ctx.image_service;
  Status s = ctx.image_service->StartJob(
      plan->name, "started baking " + plan->ref() + " for profile " + (*profile)->version,
      [profile = *profile, catalog, service, ansible = ctx.inventory->ansible(), who = r.who](
          const ImageBuildOptions& opt, const BuildProgress& progress) {
        auto built = BuildDerivedImage(*profile, *catalog, opt, ansible, progress);
        // The retention setting: derived images nothing uses any more go.
        if (built.ok()) {
          auto pruned = service->PruneDerived(who);
          if (pruned.ok() && !pruned->empty())
            progress("removed " + std::to_string(pruned->size()) + " unused derived image(s)");
        }
        return built;
      },
      r.who);
  if (!s.ok()) return HttpResponse::FromStatus(s);
  answer["changes"] = plan->changes;
  answer["started"] = true;
  return HttpResponse::Json(202, answer);
}

namespace {

HttpResponse NoStore() {
  return HttpResponse::Error(503, "this provisiond has no secrets store");
}

void SecretEvent(const ApiContext& ctx, const std::string& what, const std::string& who) {
  EventRecord e{.kind = "secret", .detail = what, .who = who};
  ctx.inventory->store().RecordEvent(e);
}

}  // namespace

HttpResponse ListSecrets(const ApiContext& ctx, const HttpRequest&) {
  if (!ctx.secrets) return NoStore();
  // Declared by the loadable profiles, whether made yet or not.
  std::map<std::string, json> out;
  std::vector<std::string> errors;
  for (const auto& [version, profile] : ctx.inventory->ListProfiles(errors))
    for (const auto& d : profile.secrets) {
      json& s = out[d.name];
      s["name"] = d.name;
      s["generate"] = d.generate;
      s["declared_by"].push_back(version);
    }
  for (const auto& info : ctx.secrets->List()) {
    json& s = out[info.name];
    s["name"] = info.name;
    s["bytes"] = info.bytes;
    s["modified"] = info.modified_ms;
    s["public_half"] = info.has_public;
  }
  json list = json::array();
  for (auto& [name, s] : out) {
    s["stored"] = s.contains("bytes");
    if (!s.contains("declared_by")) s["declared_by"] = json::array();
    list.push_back(std::move(s));
  }
  return HttpResponse::Json(200, {{"secrets", list}, {"count", list.size()}});
}

HttpResponse SetSecret(const ApiContext& ctx, const HttpRequest& r) {
  if (!ctx.secrets) return NoStore();
  auto body = ParseJsonObject(r.body, {"value"});
  if (!body.ok()) return HttpResponse::FromStatus(body.status());
  if (!body->contains("value") || !(*body)["value"].is_string())
    return HttpResponse::Error(400, "field 'value' is required: the secret, as a string");
  const std::string name = r.Param("name");
  Status s = ctx.secrets->Set(name, (*body)["value"].get<std::string>());
  if (!s.ok()) return HttpResponse::FromStatus(s);
  SecretEvent(ctx, "set " + name, r.who);
  return HttpResponse::Json(200, {{"name", name}, {"stored", true}});
}

HttpResponse RemoveSecret(const ApiContext& ctx, const HttpRequest& r) {
  if (!ctx.secrets) return NoStore();
  const std::string name = r.Param("name");
  Status s = ctx.secrets->Remove(name);
  if (!s.ok()) return HttpResponse::FromStatus(s);
  SecretEvent(ctx, "removed " + name, r.who);
  return HttpResponse::Json(200, {{"name", name}, {"removed", true}});
}

}  // namespace prov
