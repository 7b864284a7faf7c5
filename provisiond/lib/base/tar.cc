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

std::string WriteCpio(const std::vector<TarEntry>& entries, int64_t mtime_s) {
  std::string out;
  auto pad4 = [&out] { out.append((4 - out.size() % 4) % 4, '\0'); };
  auto add = [&](const std::string& name, unsigned mode, int uid, int gid, const std::string& data,
                 unsigned ino) {
    char header[111];
    std::snprintf(header, sizeof header,
                  "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X", ino, mode,
                  static_cast<unsigned>(uid), static_cast<unsigned>(gid), 1u,
                  static_cast<unsigned>(mtime_s), static_cast<unsigned>(data.size()), 0u, 0u, 0u,
                  0u, static_cast<unsigned>(name.size() + 1), 0u);
    out.append(header, 110);
    out += name;
    out += '\0';
    pad4();
    out += data;
    pad4();
  };
  unsigned ino = 1;
  for (const auto& e : entries) {
    std::string name = e.path;
    while (!name.empty() && name.front() == '/') name.erase(0, 1);
    const unsigned type = e.directory ? 0040000u : 0100000u;
    add(name, type | (static_cast<unsigned>(e.mode) & 07777u), e.uid, e.gid,
        e.directory ? "" : e.content, ino++);
  }
  add("TRAILER!!!", 0, 0, 0, "", 0);
  return out;
}

}  // namespace prov
