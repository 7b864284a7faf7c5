#include "base/tar.h"

#include <algorithm>
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

Result<std::string> TarHeader(const TarEntry& e, uint64_t size, int64_t mtime_s) {
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
  Octal(h + 124, 12, e.directory ? 0 : size);
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
  return std::string(h, sizeof h);
}

Result<std::string> WriteTar(const std::vector<TarEntry>& entries, int64_t mtime_s) {
  std::string out;
  for (const auto& e : entries) {
    auto header = TarHeader(e, e.content.size(), mtime_s);
    if (!header.ok()) return header.status();
    out += *header;
    if (!e.directory) {
      out += e.content;
      out.append(TarPadding(e.content.size()), '\0');
    }
  }
  out.append(kTarTrailerSize, '\0');
  return out;
}

Result<std::vector<TarEntry>> ReadTar(std::string_view archive) {
  std::vector<TarEntry> entries;
  size_t at = 0;
  auto field = [](const char* f, size_t width) { return std::string(f, strnlen(f, width)); };
  auto octal = [&](const char* f, size_t width, uint64_t& out) {
    std::string v = field(f, width);
    while (!v.empty() && (v.back() == ' ')) v.pop_back();
    size_t i = v.find_first_not_of(' ');
    v = i == std::string::npos ? "" : v.substr(i);
    if (v.empty() || v.find_first_not_of("01234567") != std::string::npos || v.size() > 11)
      return false;
    out = std::stoull(v, nullptr, 8);
    return true;
  };
  for (;;) {
    if (archive.size() - at < 512) return Status::Invalid("tar archive is truncated (no trailer)");
    const char* h = archive.data() + at;
    if (std::all_of(h, h + 512, [](char c) { return c == 0; })) break;  // the trailer
    const std::string where = "tar entry at byte " + std::to_string(at);
    uint64_t sum = 0, size = 0, mode = 0;
    if (!octal(h + 148, 8, sum)) return Status::Invalid(where + ": bad checksum field");
    unsigned actual = 0;
    for (int i = 0; i < 512; ++i)
      actual += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(h[i]);
    if (actual != sum) return Status::Invalid(where + ": checksum mismatch (damaged archive)");
    if (!octal(h + 124, 12, size) || !octal(h + 100, 8, mode))
      return Status::Invalid(where + ": bad size or mode");
    TarEntry e;
    std::string name = field(h, 100), prefix = field(h + 345, 155);
    e.path = prefix.empty() ? name : prefix + "/" + name;
    e.mode = static_cast<int>(mode & 07777);
    const char type = h[156];
    e.directory = type == '5';
    if (!e.directory && type != '0' && type != '\0')
      return Status::Invalid(where + " (" + e.path + "): only files and folders are read");
    if (e.directory && !e.path.empty() && e.path.back() == '/') e.path.pop_back();
    if (e.path.empty() || e.path[0] == '/' ||
        ("/" + e.path + "/").find("/../") != std::string::npos)
      return Status::Invalid(where + ": path '" + e.path + "' is not a plain relative path");
    at += 512;
    if (!e.directory) {
      if (archive.size() - at < size + TarPadding(size))
        return Status::Invalid(where + " (" + e.path + "): truncated");
      e.content.assign(archive.data() + at, size);
      at += size + TarPadding(size);
    }
    entries.push_back(std::move(e));
  }
  return entries;
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
