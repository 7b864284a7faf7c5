// Small file helpers. Files that other programs or nodes read are replaced
// atomically: written to a temporary file in the same directory, flushed, and
// renamed over the old one, so a reader never sees half a file.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

// The files a parser needs, read from disk before it parses, so that parsing
// does no I/O. A parser asks the set (IsFile, Text, Digest, Tree, ...); what
// the set has no answer for yet is answered as absent and noted as wanted.
// ReadWanted() then reads what was wanted, and ReadThenParse runs the parser
// again until it wants nothing new: what one file names (an include, a role,
// a vars file) is known only once that file is parsed. Paths are compared
// lexically normalized. A set made by InMemory() never reads the disk: what
// it was not given is absent (tests, snapshots).
class FileSet {
 public:
  // Files larger than this are not read as text (their digest still is).
  static constexpr size_t kMaxText = 16 << 20;

  FileSet() = default;
  // Path to content; their parent folders exist too.
  static FileSet InMemory(const std::map<std::string, std::string>& files);
  // Adds (or replaces) a file and its parent folders, as the disk had it.
  void AddFile(const std::string& path, std::string text);

  bool IsFile(const std::string& path);
  bool IsDirectory(const std::string& path);
  bool Exists(const std::string& path);
  // The content of a regular file; nullptr when it is not one or cannot be
  // read, with why in `*error`.
  const std::string* Text(const std::string& path, std::string* error = nullptr);
  // SHA-256 of a regular file's content as lowercase hex; nullptr as Text.
  const std::string* Digest(const std::string& path, std::string* error = nullptr);
  // The regular files under a folder, recursively (full paths, sorted);
  // empty when it is not a folder.
  const std::vector<std::string>& Tree(const std::string& dir);

  // Reads what was asked for and not known since the last call; false when
  // nothing was (the last parse saw everything it asked for).
  bool ReadWanted();
  // How many times ReadWanted read something.
  int rounds() const { return rounds_; }

 private:
  enum class Kind { kUnknown, kAbsent, kFile, kDirectory };
  struct Entry {
    Kind kind = Kind::kUnknown;
    bool want_text = false, want_digest = false, want_tree = false;
    std::optional<std::string> text, digest;
    std::optional<std::vector<std::string>> tree;
    std::string error;  // why the text or digest could not be had
  };
  Entry& Ask(const std::string& path);
  void Read(const std::string& path, Entry& e);

  std::map<std::string, Entry> entries_;
  bool in_memory_ = false;
  bool wanted_ = false;
  int rounds_ = 0;
};

// Runs `parse(files)` (a function of the set alone) until it wants no file
// the set does not hold, reading those between runs; returns the last run's
// result. Nesting is bounded by the parsers, and these rounds by kMaxRounds.
template <class Parse>
auto ReadThenParse(FileSet& files, Parse&& parse) {
  constexpr int kMaxRounds = 64;
  auto result = parse(files);
  for (int round = 1; round < kMaxRounds && files.ReadWanted(); ++round) result = parse(files);
  return result;
}

}  // namespace prov
