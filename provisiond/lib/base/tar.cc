#include "base/tar.h"

#include <cstdio>
#include <cstring>

namespace prov {
namespace {

void Octal(char* field, size_t width, uint64_t value) {
  // width includes the terminating NUL.
  snprintf(field, width, "%0*llo", static_cast<int>(width - 1),
           static_cast<unsigned long long>(value));
}

}  // namespace

Result<std::string> WriteTar(const std::vector<TarEntry>& entries, int64_t mtime_s) {
  std::string out;
  for (const auto& e : entries) {
    std::string path = e.path;
    while (!path.empty() && path[0] == '/') path.erase(0, 1);
    if (e.directory && (path.empty() || path.back() != '/')) path += '/';
    if (path.empty() || path.find("..") != std::string::npos)
      return Status::Invalid("tar entry '" + e.path + "' is not a plain path");
    std::string prefix, name = path;
    if (name.size() > 100) {
      size_t cut = path.rfind('/', 155);
      if (cut == std::string::npos || path.size() - cut - 1 > 100)
        return Status::Invalid("tar entry '" + e.path + "' is too long for ustar");
      prefix = path.substr(0, cut);
      name = path.substr(cut + 1);
    }
    char h[512];
    memset(h, 0, sizeof h);
    memcpy(h, name.data(), name.size());
    Octal(h + 100, 8, static_cast<uint64_t>(e.mode));
    Octal(h + 108, 8, static_cast<uint64_t>(e.uid));
    Octal(h + 116, 8, static_cast<uint64_t>(e.gid));
    Octal(h + 124, 12, e.directory ? 0 : e.content.size());
    Octal(h + 136, 12, static_cast<uint64_t>(mtime_s));
    memset(h + 148, ' ', 8);  // checksum is computed with spaces here
    h[156] = e.directory ? '5' : '0';
    memcpy(h + 257, "ustar", 6);  // "ustar\0"
    memcpy(h + 263, "00", 2);
    memcpy(h + 265, "root", 4);
    memcpy(h + 297, "root", 4);
    memcpy(h + 345, prefix.data(), prefix.size());
    unsigned sum = 0;
    for (unsigned char c : h) sum += c;
    snprintf(h + 148, 8, "%06o", sum);  // six digits, NUL, then the space already there
    h[155] = ' ';
    out.append(h, sizeof h);
    if (!e.directory) {
      out += e.content;
      out.append((512 - e.content.size() % 512) % 512, '\0');
    }
  }
  out.append(1024, '\0');
  return out;
}

}  // namespace prov
