#include "api/images.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "base/file_util.h"
#include "images/image_archive.h"
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

HttpResponse PruneImages(const ApiContext& ctx, const HttpRequest& r) {
  auto removed = ctx.image_service->PruneDerived(r.who);
  if (!removed.ok()) return HttpResponse::FromStatus(removed.status());
  return HttpResponse::Json(200, {{"removed", *removed}, {"count", removed->size()}});
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

namespace {

// What an import may read: the caller names paths on the control node, and
// whatever is imported is served to anyone on the boot network. So only a
// regular file that is a Linux kernel (the x86 boot header "HdrS" at 0x202,
// or the arm64 Image magic at 0x38) or an initramfs (newc cpio, or gzip,
// zstd, xz, lz4, bzip2 or lzma data) is taken; nothing of its content is
// ever repeated in an error.
Status CheckBootFile(const std::string& path, bool kernel) {
  const std::string what = kernel ? "kernel" : "initrd";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    return Status::Invalid("the " + what + " '" + path + "' is not a regular file");
  std::ifstream in(path, std::ios::binary);
  std::string head(1024, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  auto at = [&](size_t offset, std::string_view magic) {
    return head.size() >= offset + magic.size() && head.compare(offset, magic.size(), magic) == 0;
  };
  if (kernel) {
    if (at(0x202, "HdrS") || at(0x38, std::string_view("ARM\x64", 4))) return Status::Ok();
    return Status::Invalid("the kernel '" + path +
                           "' is not a Linux kernel (no x86 boot header, no arm64 Image magic)");
  }
  for (std::string_view magic : {std::string_view("0707"), std::string_view("\x1f\x8b", 2),
                                 std::string_view("\x28\xb5\x2f\xfd", 4),
                                 std::string_view("\xfd"
                                                  "7zXZ",
                                                  5),
                                 std::string_view("\x02\x21\x4c\x18", 4), std::string_view("BZh"),
                                 std::string_view("\x5d\x00\x00", 3)})
    if (at(0, magic)) return Status::Ok();
  return Status::Invalid("the initrd '" + path +
                         "' is not an initramfs (neither a cpio archive nor compressed data)");
}

// `name` (relative to `dir`, or absolute) as a path inside `dir` once links
// and ".." are resolved: an import reads only what the operator put there.
Result<std::string> UnderImportDir(const std::string& dir, const std::string& name) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path root = fs::weakly_canonical(dir, ec);
  fs::path path =
      fs::weakly_canonical(fs::path(name).is_absolute() ? fs::path(name) : root / name, ec);
  std::string prefix = root.string() + "/";
  if (ec || path.string().rfind(prefix, 0) != 0)
    return Status::Error(Code::kForbidden, "'" + name + "' is not under import_dir " + dir +
                                               ": image imports read only files there (copy the "
                                               "kernel and initrd into it)");
  return path.string();
}

}  // namespace

HttpResponse ImportImage(const ApiContext& ctx, const HttpRequest& r) {
  auto body = ParseJsonObject(r.body, {"kernel", "initrd"});
  if (!body.ok()) return HttpResponse::FromStatus(body.status());
  for (const char* f : {"kernel", "initrd"})
    if (!body->contains(f) || !(*body)[f].is_string())
      return HttpResponse::Error(
          400, std::string("field '") + f + "' is required: a file under import_dir");
  std::string paths[2];
  for (int i = 0; i < 2; ++i) {
    const char* f = i == 0 ? "kernel" : "initrd";
    auto path = UnderImportDir(ctx.import_dir, (*body)[f]);
    if (!path.ok()) return HttpResponse::FromStatus(path.status());
    if (Status s = CheckBootFile(*path, i == 0); !s.ok()) return HttpResponse::FromStatus(s);
    paths[i] = *path;
  }
  auto v = ctx.images->Import(r.Param("name"), paths[0], paths[1]);
  if (!v.ok()) return HttpResponse::FromStatus(v.status());
  EventRecord e{.kind = "image", .detail = "imported " + v->ref(), .who = r.who};
  ctx.inventory->store().RecordEvent(e);
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

HttpResponse ImageArchiveFile(const ApiContext& ctx, const HttpRequest& r) {
  if (ctx.image_archive_dir.empty())
    return HttpResponse::Error(409,
                               "one control node: image archives are for the standbys of a "
                               "PostgreSQL inventory (docs/ha.md)");
  auto v = ctx.images->Resolve(r.Param("ref"));
  if (!v.ok()) return HttpResponse::FromStatus(v.status());
  // The root's erofs image goes with the version: the standbys serve that
  // very file, so the nodes' NFS file handles stay good across a takeover.
  if (ctx.nfs) {
    if (Status s = ctx.nfs->PrepareRoot(*v); !s.ok()) return HttpResponse::FromStatus(s);
  }
  auto archive = MakeImageArchive(*v, ctx.image_archive_dir);
  if (!archive.ok()) return HttpResponse::FromStatus(archive.status());
  HttpResponse out =
      ServeFile(r, archive->path, archive->size, archive->sha256, "application/x-tar");
  out.headers.emplace_back("X-Archive-SHA256", archive->sha256);
  return out;
}

}  // namespace prov
