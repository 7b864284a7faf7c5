#include "api/web.h"

#include <sys/stat.h>

namespace prov {
namespace {

std::string ContentType(const std::string& name) {
  auto ends = [&](const char* ext) {
    std::string e(ext);
    return name.size() > e.size() && name.compare(name.size() - e.size(), e.size(), e) == 0;
  };
  if (ends(".html")) return "text/html; charset=utf-8";
  if (ends(".js")) return "text/javascript; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  if (ends(".svg")) return "image/svg+xml";
  if (ends(".png")) return "image/png";
  if (ends(".json")) return "application/json";
  return "application/octet-stream";
}

HttpResponse ServeWebFile(const HttpRequest& r, const std::string& dir, const std::string& name) {
  bool plain = !name.empty() && name[0] != '.' && name.find('/') == std::string::npos &&
               name.find("..") == std::string::npos;
  if (!plain) return HttpResponse::Error(404, "no such page");
  const std::string path = dir + "/" + name;
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return HttpResponse::Error(404, "no such page: " + name);
  // Built with append: GCC 12 at -O3 warns (-Wrestrict, a false positive) on
  // "\"" + std::string.
  std::string etag = "\"";
  etag.append(std::to_string(st.st_mtim.tv_sec)).append("-").append(std::to_string(st.st_size));
  etag.push_back('"');
  return ServeFile(r, path, static_cast<uint64_t>(st.st_size), etag, ContentType(name));
}

}  // namespace

HttpResponse WebIndex(const ApiContext& ctx, const HttpRequest& r) {
  return ServeWebFile(r, ctx.web_dir, "index.html");
}

HttpResponse WebFile(const ApiContext& ctx, const HttpRequest& r) {
  return ServeWebFile(r, ctx.web_dir, r.Param("file"));
}

}  // namespace prov
