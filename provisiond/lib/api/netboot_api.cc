#include "api/netboot_api.h"

#include <algorithm>

#include "base/file_util.h"
#include "dhcp/preflight.h"
#include "store/timeline.h"

namespace prov {
namespace {

using json = nlohmann::json;
using Access = Router::Access;

json ImageJson(const ImageVersion& v) {
  return {{"name", v.name},
          {"version", v.version},
          {"ref", v.ref()},
          {"kernel_size", v.kernel_size},
          {"initrd_size", v.initrd_size},
          {"root", !v.root.empty()},
          {"created", v.created_ms}};
}

HttpResponse Why(NetbootContext& ctx, const HttpRequest& r) {
  auto node = ctx.inventory.store().FindNode(r.Param("node"));
  if (!node.ok()) return HttpResponse::FromStatus(node.status());
  auto events = ctx.inventory.store().ListEvents(0, node->id, 100000);
  BootTimeline t = ComputeBootTimeline(*node, events);
  json steps = json::array();
  int64_t start = t.steps.empty() ? 0 : t.steps.front().time_ms;
  for (const auto& s : t.steps)
    steps.push_back({{"stage", s.stage},
                     {"time", s.time_ms},
                     {"after_ms", s.time_ms - start},
                     {"detail", s.detail}});
  json out = {{"node", node->name()},
              {"mac", node->mac},
              {"state", std::string(ToString(node->state))},
              {"steps", steps},
              {"errors", t.errors},
              {"last_stage", t.last_stage},
              {"next_stage", t.next_stage},
              {"summary", t.summary}};
  if (!node->image_version.empty()) {
    auto image = ctx.images.Resolve(node->image_version);
    out["image"] =
        image.ok() ? image->ref() : node->image_version + " (" + image.status().message() + ")";
    if (image.ok()) {
      std::string cmd = ctx.boot.KernelCommandLine(*node, *image);
      size_t tok = cmd.find("provision.token=");
      if (tok != std::string::npos) cmd.replace(tok + 16, node->token.size(), "***");
      out["kernel_cmdline"] = cmd;
    }
  }
  return HttpResponse::Json(200, out);
}

HttpResponse Power(NetbootContext& ctx, const HttpRequest& r) {
  auto body = ParseJsonObject(r.body, {"action"});
  if (!body.ok()) return HttpResponse::FromStatus(body.status());
  if (!body->contains("action") || !(*body)["action"].is_string())
    return HttpResponse::Error(400, "field 'action' is required: on, off or cycle");
  const std::string action = (*body)["action"];
  auto node = ctx.inventory.store().FindNode(r.Param("node"));
  if (!node.ok()) return HttpResponse::FromStatus(node.status());
  auto power = json::parse(node->power, nullptr, false);
  auto result = PowerAction(ctx.power, power, action, node->hostname, node->mac);
  EventRecord e{
      0,        0,
      node->id, node->name(),
      "power",  action + ": " + (result.ok() ? *result : "failed: " + result.status().message()),
      r.who};
  ctx.inventory.store().AppendEvent(e);
  if (!result.ok()) return HttpResponse::FromStatus(result.status());
  return HttpResponse::Json(200, {{"node", node->name()}, {"action", action}, {"result", *result}});
}

HttpResponse Import(NetbootContext& ctx, const HttpRequest& r) {
  auto body = ParseJsonObject(r.body, {"kernel", "initrd"});
  if (!body.ok()) return HttpResponse::FromStatus(body.status());
  for (const char* f : {"kernel", "initrd"})
    if (!body->contains(f) || !(*body)[f].is_string())
      return HttpResponse::Error(
          400, std::string("field '") + f + "' is required: a path on the control node");
  auto v = ctx.images.Import(r.Param("name"), (*body)["kernel"], (*body)["initrd"]);
  if (!v.ok()) return HttpResponse::FromStatus(v.status());
  EventRecord e{0, 0, 0, "", "image", "imported " + v->ref(), r.who};
  ctx.inventory.store().AppendEvent(e);
  return HttpResponse::Json(201, ImageJson(*v));
}

HttpResponse Preflight(NetbootContext& ctx) {
  if (ctx.config.interface.empty())
    return HttpResponse::Error(409,
                               "no 'interface' is configured: provisiond serves no boot network");
  PreflightOptions opt;
  for (const auto& [state, n] : ctx.inventory.store().CountByState())
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

// The node's own token, from "Authorization: Bearer <token>".
std::string BearerToken(const HttpRequest& r) {
  std::string auth = r.Header("authorization");
  return auth.rfind("Bearer ", 0) == 0 ? auth.substr(7) : "";
}

HttpResponse Hello(NetbootContext& ctx, const HttpRequest& r) {
  if (Status d = CheckJsonDepth(r.body); !d.ok()) return HttpResponse::FromStatus(d);
  auto facts = json::parse(r.body, nullptr, false);
  if (facts.is_discarded() || !facts.is_object())
    return HttpResponse::Error(400, "the hello body must be a JSON object of facts");
  auto node = ctx.phonehome.Hello(r.Param("node"), BearerToken(r), facts, r.remote);
  if (!node.ok()) return HttpResponse::FromStatus(node.status());
  if (node->state == NodeState::kBooted && ctx.on_booted) ctx.on_booted(*node);
  return HttpResponse::Json(200, {{"node", node->name()},
                                  {"state", std::string(ToString(node->state))},
                                  {"reason", node->reason}});
}

HttpResponse Report(NetbootContext& ctx, const HttpRequest& r) {
  auto body = ParseJsonObject(r.body, {"token", "stage", "error"});
  if (!body.ok()) return HttpResponse::FromStatus(body.status());
  auto str = [&](const char* k) {
    return body->contains(k) && (*body)[k].is_string() ? (*body)[k].get<std::string>() : "";
  };
  std::string token = str("token");
  if (token.empty()) token = BearerToken(r);
  Status s = ctx.phonehome.Report(r.Param("node"), token, str("stage"),
                                  str("error").substr(0, 2000), r.remote);
  if (!s.ok()) return HttpResponse::FromStatus(s);
  return HttpResponse::Json(200, {{"recorded", true}});
}

}  // namespace

void AddNetbootApiRoutes(Router& router, NetbootContext& ctx) {
  const std::string v1 = "/api/v1";
  router.Add("GET", v1 + "/nodes/{node}/why", Access::kRead,
             [&ctx](const HttpRequest& r) { return Why(ctx, r); });
  router.Add("POST", v1 + "/nodes/{node}/power", Access::kWrite,
             [&ctx](const HttpRequest& r) { return Power(ctx, r); });
  router.Add("GET", v1 + "/images", Access::kRead, [&ctx](const HttpRequest&) {
    json list = json::array();
    for (const auto& v : ctx.images.List()) {
      json j = ImageJson(v);
      auto current = ctx.images.Resolve(v.name);
      j["current"] = current.ok() && current->version == v.version;
      list.push_back(j);
    }
    return HttpResponse::Json(200, {{"images", list}});
  });
  router.Add("POST", v1 + "/images/{name}/build", Access::kWrite, [&ctx](const HttpRequest& r) {
    Status s = ctx.image_service.StartBuild(r.Param("name"), r.who);
    if (!s.ok()) return HttpResponse::FromStatus(s);
    return HttpResponse::Json(
        202,
        {{"image", r.Param("name")},
         {"building", true},
         {"progress", "GET /api/v1/events (kinds image-build, image-built, image-build-failed)"}});
  });
  router.Add("GET", v1 + "/images/{ref}", Access::kRead, [&ctx](const HttpRequest& r) {
    auto v = ctx.images.Resolve(r.Param("ref"));
    if (!v.ok()) return HttpResponse::FromStatus(v.status());
    json j = ImageJson(*v);
    auto meta = ReadFile(v->dir + "/image.json");
    if (meta.ok()) j["build"] = json::parse(*meta, nullptr, false);
    auto current = ctx.images.Resolve(v->name);
    j["current"] = current.ok() && current->version == v->version;
    auto running = ctx.image_service.Running();
    j["building"] = std::find(running.begin(), running.end(), v->name) != running.end();
    return HttpResponse::Json(200, j);
  });
  router.Add("POST", v1 + "/images/{ref}/verify", Access::kWrite, [&ctx](const HttpRequest& r) {
    auto v = ctx.images.Resolve(r.Param("ref"));
    if (!v.ok()) return HttpResponse::FromStatus(v.status());
    json out = {{"image", v->ref()},
                {"kernel", v->kernel_size > 0},
                {"initrd", v->initrd_size > 0},
                {"root", !v->root.empty()}};
    if (!ctx.nfs || v->root.empty()) {
      out["nfs"] = v->root.empty() ? "no root to export"
                                   : "no NFS server (no interface, or nfs.server: none)";
      out["ok"] = v->kernel_size > 0 && v->initrd_size > 0;
      return HttpResponse::Json(200, out);
    }
    Status s = ctx.nfs->Verify(*v, true);
    out["nfs"] = s.ok() ? "os-release read back over NFS" : s.message();
    out["root_args"] = ctx.nfs->RootArgs(*v);
    out["ok"] = s.ok() && v->kernel_size > 0 && v->initrd_size > 0;
    return HttpResponse::Json(200, out);
  });
  router.Add("DELETE", v1 + "/images/{ref}", Access::kWrite, [&ctx](const HttpRequest& r) {
    Status s = ctx.image_service.Remove(r.Param("ref"), r.who);
    if (!s.ok()) return HttpResponse::FromStatus(s);
    return HttpResponse::Json(200, {{"removed", r.Param("ref")}});
  });
  router.Add("POST", v1 + "/images/{name}/import", Access::kWrite,
             [&ctx](const HttpRequest& r) { return Import(ctx, r); });
  // Nodes authenticate these with their own token, not an API token.
  router.Add("POST", v1 + "/nodes/{node}/hello", Access::kRead,
             [&ctx](const HttpRequest& r) { return Hello(ctx, r); });
  router.Add("POST", v1 + "/nodes/{node}/report", Access::kRead,
             [&ctx](const HttpRequest& r) { return Report(ctx, r); });
  router.Add("GET", v1 + "/preflight", Access::kRead,
             [&ctx](const HttpRequest&) { return Preflight(ctx); });
}

}  // namespace prov
