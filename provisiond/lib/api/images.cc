#include "api/images.h"

#include <algorithm>

#include "base/file_util.h"
#include "images/image_catalog.h"
#include "images/image_service.h"
#include "images/nfs.h"
#include "profiles/inventory.h"

namespace prov {
namespace {

using json = nlohmann::json;

json ImageJson(const ImageVersion& v) {
  return {{"name", v.name},
          {"version", v.version},
          {"ref", v.ref()},
          {"kernel_size", v.kernel_size},
          {"initrd_size", v.initrd_size},
          {"root", !v.root.empty()},
          {"created", v.created_ms}};
}

}  // namespace

HttpResponse ListImages(const ApiContext& ctx, const HttpRequest&) {
  json list = json::array();
  for (const auto& v : ctx.images->List()) {
    json j = ImageJson(v);
    auto current = ctx.images->Resolve(v.name);
    j["current"] = current.ok() && current->version == v.version;
    list.push_back(j);
  }
  return HttpResponse::Json(200, {{"images", list}});
}

HttpResponse ShowImage(const ApiContext& ctx, const HttpRequest& r) {
  auto v = ctx.images->Resolve(r.Param("ref"));
  if (!v.ok()) return HttpResponse::FromStatus(v.status());
  json j = ImageJson(*v);
  auto meta = ReadFile(v->dir + "/image.json");
  if (meta.ok()) j["build"] = json::parse(*meta, nullptr, false);
  auto current = ctx.images->Resolve(v->name);
  j["current"] = current.ok() && current->version == v->version;
  auto running = ctx.image_service->Running();
  j["building"] = std::find(running.begin(), running.end(), v->name) != running.end();
  return HttpResponse::Json(200, j);
}

HttpResponse RemoveImage(const ApiContext& ctx, const HttpRequest& r) {
  Status s = ctx.image_service->Remove(r.Param("ref"), r.who);
  if (!s.ok()) return HttpResponse::FromStatus(s);
  return HttpResponse::Json(200, {{"removed", r.Param("ref")}});
}

HttpResponse StartImageBuild(const ApiContext& ctx, const HttpRequest& r) {
  Status s = ctx.image_service->StartBuild(r.Param("name"), r.who);
  if (!s.ok()) return HttpResponse::FromStatus(s);
  return HttpResponse::Json(
      202,
      {{"image", r.Param("name")},
       {"building", true},
       {"progress", "GET /api/v1/events (kinds image-build, image-built, image-build-failed)"}});
}

HttpResponse ImportImage(const ApiContext& ctx, const HttpRequest& r) {
  auto body = ParseJsonObject(r.body, {"kernel", "initrd"});
  if (!body.ok()) return HttpResponse::FromStatus(body.status());
  for (const char* f : {"kernel", "initrd"})
    if (!body->contains(f) || !(*body)[f].is_string())
      return HttpResponse::Error(
          400, std::string("field '") + f + "' is required: a path on the control node");
  auto v = ctx.images->Import(r.Param("name"), (*body)["kernel"], (*body)["initrd"]);
  if (!v.ok()) return HttpResponse::FromStatus(v.status());
  EventRecord e{0, 0, 0, "", "image", "imported " + v->ref(), r.who};
  ctx.inventory->store().AppendEvent(e);
  return HttpResponse::Json(201, ImageJson(*v));
}

HttpResponse VerifyImage(const ApiContext& ctx, const HttpRequest& r) {
  auto v = ctx.images->Resolve(r.Param("ref"));
  if (!v.ok()) return HttpResponse::FromStatus(v.status());
  json out = {{"image", v->ref()},
              {"kernel", v->kernel_size > 0},
              {"initrd", v->initrd_size > 0},
              {"root", !v->root.empty()}};
  if (!ctx.nfs || v->root.empty()) {
    out["nfs"] =
        v->root.empty() ? "no root to export" : "no NFS server (no interface, or nfs.server: none)";
    out["ok"] = v->kernel_size > 0 && v->initrd_size > 0;
    return HttpResponse::Json(200, out);
  }
  Status s = ctx.nfs->Verify(*v, true);
  out["nfs"] = s.ok() ? "os-release read back over NFS" : s.message();
  out["root_args"] = ctx.nfs->RootArgs(*v);
  out["ok"] = s.ok() && v->kernel_size > 0 && v->initrd_size > 0;
  return HttpResponse::Json(200, out);
}

}  // namespace prov
