// Applied profiles are immutable snapshots. Applying a profile commits
// everything it is made of (profile.yaml, every playbook it names, every
// template and file those reach) as one directory named by its content hash:
//
//   <dir>/<sha256>/profile.yaml
//   <dir>/<sha256>/playbooks/<path as under the playbooks directory>
//
// Nodes are configured from the snapshot their profile version was applied
// as, never from the files on disk: an edit changes nothing until the next
// apply, and applying an older snapshot again (rollback) restores exactly
// what it held. A snapshot is parsed once, then served from memory.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "base/result.h"
#include "profiles/profile.h"

namespace prov {

class SnapshotStore {
 public:
  // `dir` is created (0700: profiles may name secrets' files) on first use.
  explicit SnapshotStore(std::string dir) : dir_(std::move(dir)) {}

  // Commits `profile` as loaded from disk: each of its files is copied into
  // a temporary directory and checked against the hash it was loaded with
  // (a file edited meanwhile fails the commit), then the directory is renamed
  // to its hash. Committing the same content again is a no-op. Returns the
  // snapshot, parsed from its own copy.
  Result<std::shared_ptr<const Profile>> Commit(const Profile& profile);

  // The committed snapshot with this hash, parsed once and kept. Its files
  // are checked against the hash when it is first read.
  Result<std::shared_ptr<const Profile>> Get(const std::string& sha256);

  const std::string& dir() const { return dir_; }

 private:
  Result<std::shared_ptr<const Profile>> Parse(const std::string& sha256);

  const std::string dir_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<const Profile>> cache_;  // guarded by mu_
};

}  // namespace prov
