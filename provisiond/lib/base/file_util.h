// Small file helpers. Files that other programs or nodes read are replaced
// atomically: written to a temporary file in the same directory, flushed, and
// renamed over the old one, so a reader never sees half a file.
#pragma once

#include <string>

#include "base/result.h"

namespace prov {

Result<std::string> ReadFile(const std::string& path);

// Writes `content` to `path` through a temporary file and rename(2).
Status WriteFileAtomic(const std::string& path, const std::string& content, int mode = 0644);

// mkdir -p.
Status MakeDirs(const std::string& path, int mode = 0755);

// SHA-256 of `data` as lowercase hex.
std::string Sha256Hex(const std::string& data);

// `bytes` random bytes as lowercase hex, from getrandom(2).
std::string RandomHex(size_t bytes);

}  // namespace prov
