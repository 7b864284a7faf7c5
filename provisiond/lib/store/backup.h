// Backups of provisiond's state, and the lock that keeps one provisiond (or
// one restore) on a data folder at a time.
//
// A backup is one ustar archive (mode 0600: it holds every secret): a
// MANIFEST.json with each file's size and SHA-256, the inventory as SQLite's
// online backup makes it (a consistent copy while provisiond runs and
// writes), and the files of the data folder that cannot be made again:
// tokens, the TLS certificate, the control key, the secrets store, the
// profile snapshots. Left out: built images (made again from their
// manifests), and what provisiond writes at every start (dnsmasq's and the
// NFS server's configs, the ansible folder, the URL files).
#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"

namespace prov {

struct BackupInfo {
  std::string provisiond_version;  // of the provisiond that wrote it
  int schema = 0;                  // the inventory's schema version in it
  int64_t nodes = 0;
  int64_t files = 0;  // besides the database
  uint64_t bytes = 0;
  int64_t created_ms = 0;
};

// Writes the backup of `data_dir` (its database at `database`) to
// `out_path`, through a temporary file and a rename. provisiond may run.
Result<BackupInfo> WriteBackup(const std::string& data_dir, const std::string& database,
                               const std::string& out_path, const std::string& version);

// Reads a backup and checks every file against its manifest, writing
// nothing; refuses a backup whose schema this provisiond does not know.
Result<BackupInfo> VerifyBackup(const std::string& archive_path);

// Restores a verified backup into `data_dir` (the database to `database`).
// What it replaces is moved, not deleted, to <data_dir>/before-restore-<ms>
// (named in `moved_to`). Then the inventory is opened, migrated to this
// provisiond's schema if older, and counted. The caller holds the data
// folder's lock.
Result<BackupInfo> RestoreBackup(const std::string& archive_path, const std::string& data_dir,
                                 const std::string& database, std::string* moved_to);

// Takes <data_dir>/provisiond.lock (flock, exclusive): held by a running
// provisiond for its lifetime and by a restore. Fails, naming the process
// that holds it, when another still has it after `wait_ms` (0: at once). A
// daemon started again right after a crash waits: the lock goes only when
// the last thread of the old one has closed its files, which can be after
// its process shows as gone (a zombie leader).
Result<UniqueFd> LockDataDir(const std::string& data_dir, int wait_ms = 0);

}  // namespace prov
