#include "image.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "format.h"

namespace prov::ctl {

using json = nlohmann::json;

std::string RenderImageTable(const json& reply) {
  Table t({"NAME", "VERSION", "CURRENT", "KERNEL", "INITRD", "ROOT", "CREATED"});
  for (const auto& i : Array(reply, "images"))
    t.AddRow({Str(i, "name"), Str(i, "version"), Bool(i, "current") ? "yes" : "-",
              FormatSize(Int(i, "kernel_size")), FormatSize(Int(i, "initrd_size")),
              Bool(i, "root") ? "yes" : "no", FormatTime(Int(i, "created"))});
  if (!t.size())
    return "no images (build one: provisionctl image build NAME, or import one: provisionctl "
           "image import NAME --kernel PATH --initrd PATH)\n";
  return t.Render();
}

std::string RenderImage(const json& image, const json& current) {
  const std::string name = Str(image, "name"), version = Str(image, "version");
  std::string ref = Str(image, "ref");
  if (ref.empty() && !name.empty()) ref = name + "@" + version;
  static const json none = json::object();
  const json& build = image.is_object() && image.contains("build") && image["build"].is_object()
                          ? image["build"]
                          : none;

  KeyValues kv;
  kv.Add("image", Dash(ref));
  bool is_current = current.is_object() && !version.empty() && Str(current, "version") == version;
  if (image.is_object() && image.contains("current") && image["current"].is_boolean())
    is_current = image["current"].get<bool>();
  if (is_current)
    kv.Add("current", "yes (" + Dash(name) + " stands for this version)");
  else if (std::string other = Str(current, "ref"); !other.empty() && other != ref)
    kv.Add("current", "no (" + Dash(name) + " stands for " + other + ")");
  else
    kv.Add("current", "no");
  std::string kernel = FormatSize(Int(image, "kernel_size"));
  if (std::string file = Str(build, "kernel"); !file.empty()) kernel += " (" + file + ")";
  kv.Add("kernel", kernel);
  kv.Add("initrd", FormatSize(Int(image, "initrd_size")));
  kv.Add("root",
         Bool(image, "root") ? "yes (served over NFS)" : "no (a kernel and an initrd only)");
  if (std::string sha = Str(build, "sha256"); !sha.empty()) kv.Add("sha256", sha);
  kv.Add("created", FormatTime(Int(image, "created")));
  if (Bool(image, "building"))
    kv.Add("building", "a build of " + Dash(name) +
                           " runs now (provisionctl events --follow shows its progress)");
  std::string out = kv.Render();

  const bool built = build.contains("manifest_sha256") || build.contains("suite");
  if (!built) {
    const json& source = build.contains("source") ? build["source"] : none;
    std::string from = Str(source, "kernel").empty() ? ""
                                                     : " from " + Str(source, "kernel") + " and " +
                                                           Dash(Str(source, "initrd"));
    return out + "build: none (imported" + from + ")\n";
  }
  KeyValues b;
  // A container image's provenance (the oci source), or the mirror's.
  const bool oci = build.contains("oci") && build["oci"].is_object();
  if (oci) {
    b.Add("oci image", Dash(Str(build["oci"], "reference")));
    b.Add("digest", Dash(Str(build["oci"], "digest")));
  } else {
    b.Add("suite", Dash(Str(build, "suite")));
    b.Add("mirror", Dash(Str(build, "mirror")));
  }
  const json& packages = Array(oci ? build["oci"] : build, "packages");
  b.Add(oci ? "on top" : "packages",
        packages.empty() ? "-"
                         : std::to_string(packages.size()) + ": " + Join(Strings(packages), ", "));
  b.Add("root tree",
        std::to_string(Int(build, "files")) + " files, " + FormatSize(Int(build, "bytes")));
  const auto seconds = build.find("build_seconds");
  b.Add("build time", seconds != build.end() && seconds->is_number()
                          ? FormatDuration(std::llround(seconds->get<double>() * 1000))
                          : "-");
  b.Add("manifest sha256", Dash(Str(build, "manifest_sha256")));
  return out + "build:\n" + b.Render("  ");
}

bool ImageVerified(const json& reply) {
  return Bool(reply, "ok") && Bool(reply, "kernel") && Bool(reply, "initrd");
}

std::string RenderImageVerify(const json& reply) {
  struct Check {
    const char* mark;  // "ok", "FAIL" or "-"
    const char* name;
    std::string detail;
  };
  const bool root = Bool(reply, "root");
  const bool nfs_checked = root && reply.is_object() && reply.contains("root_args");
  const char* nfs = !nfs_checked ? "-" : Bool(reply, "ok") ? "ok" : "FAIL";
  const std::vector<Check> checks = {
      {Bool(reply, "kernel") ? "ok" : "FAIL", "kernel",
       Bool(reply, "kernel") ? "present" : "missing or empty"},
      {Bool(reply, "initrd") ? "ok" : "FAIL", "initrd",
       Bool(reply, "initrd") ? "present" : "missing or empty"},
      {root ? "ok" : "-", "root", root ? "a root tree to serve" : "none (a kernel and an initrd)"},
      {nfs, "nfs", Dash(Str(reply, "nfs"))},
  };
  const std::string ref = Dash(Str(reply, "image"));
  std::string out;
  for (const auto& c : checks) {
    const std::string lead = Pad(c.mark, 4) + "  " + Pad(c.name, 6) + "  ";
    std::string detail = c.detail;
    // A reason of several lines (NFS's) continues under itself.
    for (size_t nl = detail.find('\n'); nl != std::string::npos; nl = detail.find('\n', nl + 1))
      detail.insert(nl + 1, std::string(lead.size(), ' '));
    out += lead + detail + "\n";
  }
  if (std::string args = Str(reply, "root_args"); !args.empty())
    out += "kernel root arguments: " + args + "\n";
  out += ImageVerified(reply) ? ref + " can be served\n" : ref + " failed verification\n";
  return out;
}

std::optional<ImageBuildEvent> ParseImageBuildEvent(const json& event) {
  const std::string kind = Str(event, "kind");
  if (kind != "image-build" && kind != "image-built" && kind != "image-build-failed")
    return std::nullopt;
  ImageBuildEvent e;
  e.kind = kind;
  e.time_ms = Int(event, "time");
  const std::string detail = Str(event, "detail");
  const size_t colon = detail.find(": ");
  e.image = detail.substr(0, colon);
  if (colon != std::string::npos) e.text = detail.substr(colon + 2);
  return e;
}

std::string RenderBuildProgress(const std::string& text, int64_t elapsed_ms) {
  char lead[32];
  snprintf(lead, sizeof lead, "[%5.1fs] ",
           static_cast<double>(std::max<int64_t>(elapsed_ms, 0)) / 1000);
  std::string body = text;
  for (size_t nl = body.find('\n'); nl != std::string::npos; nl = body.find('\n', nl + 1))
    body.insert(nl + 1, std::string(strlen(lead), ' '));
  while (!body.empty() && (body.back() == '\n' || body.back() == ' ')) body.pop_back();
  return lead + body + "\n";
}

}  // namespace prov::ctl
