// Small file helpers. Files that other programs or nodes read are replaced
// atomically: written to a temporary file in the same directory, flushed, and
// renamed over the old one, so a reader never sees half a file.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "base/result.h"

struct evp_md_ctx_st;

namespace prov {

Result<std::string> ReadFile(const std::string& path);

// Writes all of `data` to `fd` (retrying short writes and EINTR); `path`
// names it in the error.
Status WriteAll(int fd, std::string_view data, const std::string& path);

// Writes `content` to `path` through a temporary file and rename(2).
Status WriteFileAtomic(const std::string& path, const std::string& content, int mode = 0644);

// mkdir -p; the directories it creates get `mode` exactly (not masked by the
// umask), so a directory for secrets is never readable by others, not even
// for a moment. Existing directories are left as they are.
Status MakeDirs(const std::string& path, int mode = 0755);

// Bytes as lowercase hex.
std::string HexEncode(std::string_view bytes);
// "AB:CD:..." (uppercase hex pairs joined by ':'), as certificate
// fingerprints are shown.
std::string ColonHex(std::string_view bytes);

// SHA-256 of `data` as lowercase hex.
std::string Sha256Hex(std::string_view data);

// Incremental SHA-256, for what is too large to hold in memory at once.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void Update(std::string_view data);
  // The digest as lowercase hex; the hasher is spent after it.
  std::string HexDigest();

 private:
  std::unique_ptr<evp_md_ctx_st, void (*)(evp_md_ctx_st*)> ctx_;
};

// SHA-256 of a file's content as lowercase hex, read in blocks.
Result<std::string> Sha256File(const std::string& path);

// `bytes` random bytes as lowercase hex, from getrandom(2).
std::string RandomHex(size_t bytes);
// `bytes` bytes from the kernel's CSPRNG (getrandom).
std::string RandomBytes(size_t bytes);

}  // namespace prov
