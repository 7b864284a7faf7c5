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

// The whole archive in the kernel's initramfs format (newc, uncompressed),
// with its trailer. Paths are stored relative.
std::string WriteCpio(const std::vector<TarEntry>& entries, int64_t mtime_s);

}  // namespace prov
