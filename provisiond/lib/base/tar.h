// Archive writers: ustar for the per-node overlay (GET
// /boot/<mac>/overlay.tar), newc cpio for the per-node initrd part the kernel
// unpacks after the image's initrd (GET /boot/<mac>/ticket.img). Files only
// (their directories are implied unless listed), owned by root unless given.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"

namespace prov {

struct TarEntry {
  std::string path;  // absolute or relative; stored relative ("etc/hostname")
  std::string content;
  int mode = 0644;
  int uid = 0;
  int gid = 0;
  bool directory = false;
};

// The whole archive. Paths longer than ustar allows are refused.
Result<std::string> WriteTar(const std::vector<TarEntry>& entries, int64_t mtime_s);

// One entry's 512-byte ustar header for `size` bytes of content (ignores
// e.content), for archives written piece by piece: the header, the content,
// TarPadding(size), and kTarTrailer at the end.
Result<std::string> TarHeader(const TarEntry& e, uint64_t size, int64_t mtime_s);
inline size_t TarPadding(uint64_t size) {
  return (512 - size % 512) % 512;
}
inline constexpr size_t kTarTrailerSize = 1024;

// Reads a ustar archive (as WriteTar writes them: files and directories, no
// links): every entry with its path (relative, never "..", never absolute),
// mode and content. A damaged archive (bad checksum, truncated) is an error.
Result<std::vector<TarEntry>> ReadTar(std::string_view archive);

// The whole archive in the kernel's initramfs format (newc, uncompressed),
// with its trailer. Paths are stored relative.
std::string WriteCpio(const std::vector<TarEntry>& entries, int64_t mtime_s);

}  // namespace prov
