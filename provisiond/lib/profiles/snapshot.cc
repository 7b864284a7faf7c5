#include "profiles/snapshot.h"

#include <filesystem>
#include <regex>

#include "base/file_util.h"

namespace prov {
namespace {

namespace fs = std::filesystem;

const std::regex kSha256("^[0-9a-f]{64}$");

}  // namespace

Result<std::shared_ptr<const Profile>> SnapshotStore::Commit(const Profile& profile) {
  const std::string final_dir = dir_ + "/" + profile.sha256;
  std::error_code ec;
  if (!fs::exists(final_dir, ec)) {
    Status s = MakeDirs(dir_, 0700);
    if (!s.ok()) return s;
    const std::string tmp = dir_ + "/.tmp-" + profile.sha256 + "-" + RandomHex(4);
    auto cleanup = [&] { fs::remove_all(tmp, ec); };
    for (const auto& f : profile.files) {
      auto content = ReadFile(f.source);
      if (!content.ok()) {
        cleanup();
        return content.status();
      }
      if (Sha256Hex(*content) != f.sha256) {
        cleanup();
        return Status::Conflict(f.source + " changed while profile " + profile.version +
                                " was being applied; apply it again");
      }
      const std::string dest = tmp + "/" + f.path;
      s = MakeDirs(fs::path(dest).parent_path().string(), 0700);
      if (s.ok()) s = WriteFileAtomic(dest, *content, 0600);
      if (!s.ok()) {
        cleanup();
        return s;
      }
    }
    if (rename(tmp.c_str(), final_dir.c_str()) != 0) {
      // Another apply of the same content won the race: its copy is the same.
      cleanup();
      if (!fs::exists(final_dir, ec))
        return Status::Internal("cannot commit snapshot " + final_dir + ": " + strerror(errno));
    }
  }
  return Get(profile.sha256);
}

Result<std::shared_ptr<const Profile>> SnapshotStore::Get(const std::string& sha256) {
  if (!std::regex_match(sha256, kSha256))
    return Status::Invalid("'" + sha256 + "' is not a profile snapshot hash");
  {
    std::lock_guard lock(mu_);
    auto it = cache_.find(sha256);
    if (it != cache_.end()) return it->second;
  }
  // Parsed outside the lock: a slow disk never holds up callers of other
  // snapshots; two first readers parse twice and keep one.
  auto parsed = Parse(sha256);
  if (!parsed.ok()) return parsed.status();
  std::lock_guard lock(mu_);
  return cache_.emplace(sha256, *parsed).first->second;
}

Result<std::shared_ptr<const Profile>> SnapshotStore::Parse(const std::string& sha256) {
  const std::string root = dir_ + "/" + sha256;
  auto text = ReadFile(root + "/profile.yaml");
  if (!text.ok())
    return Status::NotFound("no snapshot " + sha256.substr(0, 12) + " in " + dir_ +
                            " (it was never applied here)");
  // The version is whatever the snapshot says; it was checked against its
  // directory when it was committed.
  auto profile = ParseProfile(*text, root + "/profile.yaml", "", root + "/playbooks");
  if (!profile.ok())
    return Status::Internal("snapshot " + sha256.substr(0, 12) +
                            " does not load: " + profile.status().message());
  if (profile->sha256 != sha256)
    return Status::Internal("snapshot " + root + " does not match its hash (content " +
                            profile->sha256.substr(0, 12) +
                            "): it was changed after it was "
                            "committed");
  return std::make_shared<const Profile>(std::move(*profile));
}

}  // namespace prov
