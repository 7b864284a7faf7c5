#include "store/backup.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "base/file_util.h"
#include "base/tar.h"
#include "db/sql.h"
#include "store/migrations.h"
#include "store/store.h"

namespace prov {
namespace {

namespace fs = std::filesystem;

constexpr const char* kManifest = "MANIFEST.json";
constexpr const char* kDatabaseEntry = "provisiond.db";
constexpr const char* kFormat = "provisiond-backup";

// Top-level names of the data folder a backup leaves out: the database
// (copied through SQLite instead), what provisiond writes again at every
// start, built images, and earlier restores' leftovers.
bool LeftOut(const std::string& top) {
  static const std::set<std::string> names = {"provisiond.db",
                                              "provisiond.db-wal",
                                              "provisiond.db-shm",
                                              "provisiond.lock",
                                              "provisiond.url",
                                              "provisiond.api-url",
                                              "images",
                                              "netboot",
                                              "nfs",
                                              "ansible",
                                              "import"};
  return names.count(top) || top.starts_with("before-restore-");
}

// The inventory at one instant into the new SQLite file `copy` while writers
// go on: SQLite's online backup of a SQLite `database`; a PostgreSQL one row
// by row, in one snapshot, into a SQLite schema of the same version (a backup
// is a SQLite file either way, restorable on either).
Status CopyDatabase(const std::string& database, const std::string& copy, int& schema,
                    int64_t& nodes) {
  const bool postgres = sql::IsPostgresUri(database);
  if (!postgres && !fs::exists(database)) return Status::NotFound("no database at " + database);
  auto src = sql::Database::Open(database, sql::Database::Mode::kReadWrite);
  if (!src.ok()) return Status::Internal(src.status().message());
  src->SetBusyTimeout(5000);
  UniqueFd created(::open(copy.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!created.valid()) return Status::Internal("cannot create " + copy + ": " + strerror(errno));
  auto dst = sql::Database::Open(copy, sql::Database::Mode::kReadWrite);
  if (!dst.ok()) return Status::Internal(dst.status().message());
  if (postgres) {
    auto version = src->SchemaVersion();
    if (!version.ok()) return version.status();
    if (Status st = sql::ApplyMigrations(*dst, Migrations(), static_cast<int>(*version),
                                         "the backup's database");
        !st.ok())
      return st;
  }
  if (Status st = sql::CopyDatabase(*src, *dst); !st.ok()) return st;
  // The copy is a rollback-journal database of its own, checked whole.
  if (Status st = dst->Exec("PRAGMA journal_mode = DELETE"); !st.ok()) return st;
  auto check = dst->Prepare("PRAGMA integrity_check");
  if (!check.ok()) return check.status();
  auto row = check->Step();
  if (!row.ok()) return row.status();
  if (!*row || check->Text(0) != "ok")
    return Status::Internal("the copy of " + database + " fails SQLite's integrity check");
  auto version = dst->SchemaVersion();
  if (!version.ok()) return version.status();
  schema = static_cast<int>(*version);
  auto count = dst->QueryInt("SELECT count(*) FROM nodes");
  nodes = count.ok() ? *count : 0;
  return Status::Ok();
}

struct FileEntry {
  std::string path;  // relative to the data folder
  std::string content;
  int mode = 0600;
  bool directory = false;
};

Status CollectFiles(const std::string& data_dir, std::vector<FileEntry>& out) {
  std::error_code ec;
  fs::recursive_directory_iterator it(data_dir, ec), end;
  if (ec) return Status::Internal("cannot read " + data_dir + ": " + ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec) return Status::Internal("cannot read " + data_dir + ": " + ec.message());
    const fs::path rel = it->path().lexically_relative(data_dir);
    if (it.depth() == 0 && LeftOut(rel.string())) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    const auto st = it->symlink_status();
    FileEntry e;
    e.path = rel.string();
    e.mode = static_cast<int>(st.permissions() & fs::perms::all);
    if (fs::is_directory(st)) {
      e.directory = true;
    } else if (fs::is_regular_file(st)) {
      auto content = ReadFile(it->path().string());
      if (!content.ok()) return content.status();
      e.content = std::move(*content);
    } else {
      continue;  // links, sockets: nothing provisiond keeps
    }
    out.push_back(std::move(e));
  }
  return Status::Ok();
}

// Appends the file at `from` to the archive as `name`, in blocks.
Status AppendFile(int fd, const std::string& out, const std::string& name, const std::string& from,
                  uint64_t size, int64_t mtime_s) {
  auto header = TarHeader({name, "", 0600}, size, mtime_s);
  if (!header.ok()) return header.status();
  Status s = WriteAll(fd, *header, out);
  UniqueFd in(::open(from.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in.valid()) return Status::Internal("cannot read " + from + ": " + strerror(errno));
  std::string block(1 << 20, '\0');
  uint64_t left = size;
  while (s.ok() && left > 0) {
    ssize_t n = ::read(in.get(), block.data(), std::min<uint64_t>(block.size(), left));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::Internal("cannot read " + from + ": " + strerror(errno));
    s = WriteAll(fd, std::string_view(block.data(), static_cast<size_t>(n)), out);
    left -= static_cast<uint64_t>(n);
  }
  if (!s.ok()) return s;
  return WriteAll(fd, std::string(TarPadding(size), '\0'), out);
}

BackupInfo InfoOf(const nlohmann::json& m) {
  BackupInfo info;
  info.provisiond_version = m.value("provisiond", "");
  info.schema = m.value("schema", 0);
  info.nodes = m.value("nodes", int64_t{0});
  info.created_ms = m.value("created_ms", int64_t{0});
  return info;
}

// The archive's entries, each file checked against the manifest.
Result<std::pair<nlohmann::json, std::vector<TarEntry>>> ReadChecked(const std::string& path) {
  auto archive = ReadFile(path);
  if (!archive.ok()) return archive.status();
  auto entries = ReadTar(*archive);
  if (!entries.ok()) return Status::Invalid(path + ": " + entries.status().message());
  if (entries->empty() || (*entries)[0].path != kManifest)
    return Status::Invalid(path + ": not a provisiond backup (no " + kManifest + " first)");
  nlohmann::json manifest = nlohmann::json::parse((*entries)[0].content, nullptr, false);
  if (!manifest.is_object() || manifest.value("format", "") != kFormat ||
      !manifest.contains("files") || !manifest["files"].is_array())
    return Status::Invalid(path + ": " + kManifest + " is not a provisiond backup manifest");
  std::map<std::string, std::string> sums;
  for (const auto& f : manifest["files"])
    if (f.is_object()) sums[f.value("path", "")] = f.value("sha256", "");
  bool database = false;
  for (size_t i = 1; i < entries->size(); ++i) {
    const TarEntry& e = (*entries)[i];
    if (e.directory) continue;
    auto it = sums.find(e.path);
    if (it == sums.end()) return Status::Invalid(path + ": " + e.path + " is not in the manifest");
    if (Sha256Hex(e.content) != it->second)
      return Status::Invalid(path + ": " + e.path + " does not match its SHA-256 in the manifest");
    sums.erase(it);
    database |= e.path == kDatabaseEntry;
  }
  if (!sums.empty())
    return Status::Invalid(path + ": " + sums.begin()->first + " is in the manifest but missing");
  if (!database) return Status::Invalid(path + ": holds no database");
  const int schema = manifest.value("schema", 0), known = static_cast<int>(Migrations().size());
  if (schema > known)
    return Status::Invalid(path + ": its inventory has schema version " + std::to_string(schema) +
                           " (written by provisiond " + manifest.value("provisiond", "?") +
                           "), newer than this provisiond knows (" + std::to_string(known) +
                           "): restore it with that version or a newer one");
  return std::make_pair(std::move(manifest), std::move(*entries));
}

}  // namespace

Result<BackupInfo> WriteBackup(const std::string& data_dir, const std::string& database,
                               const std::string& out_path, const std::string& version) {
  BackupInfo info;
  info.provisiond_version = version;
  info.created_ms = NowMs();
  const std::string partial = out_path + ".partial", db_copy = out_path + ".db-copy";
  fs::remove(db_copy);
  struct Cleanup {
    std::string a, b;
    ~Cleanup() {
      std::error_code ec;
      fs::remove(a, ec);
      fs::remove(b, ec);
    }
  } cleanup{partial, db_copy};
  Status s = CopyDatabase(database, db_copy, info.schema, info.nodes);
  if (!s.ok()) return s;
  auto db_sum = Sha256File(db_copy);
  if (!db_sum.ok()) return db_sum.status();
  const uint64_t db_size = fs::file_size(db_copy);

  std::vector<FileEntry> files;
  s = CollectFiles(data_dir, files);
  if (!s.ok()) return s;
  nlohmann::json list = nlohmann::json::array();
  list.push_back({{"path", kDatabaseEntry}, {"size", db_size}, {"sha256", *db_sum}});
  for (const auto& f : files) {
    if (f.directory) continue;
    list.push_back(
        {{"path", f.path}, {"size", f.content.size()}, {"sha256", Sha256Hex(f.content)}});
    ++info.files;
  }
  nlohmann::json manifest = {{"format", kFormat},     {"format_version", 1},
                             {"provisiond", version}, {"schema", info.schema},
                             {"nodes", info.nodes},   {"created_ms", info.created_ms},
                             {"data_dir", data_dir},  {"files", list}};

  UniqueFd out(::open(partial.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!out.valid()) return Status::Internal("cannot create " + partial + ": " + strerror(errno));
  const int64_t mtime = info.created_ms / 1000;
  auto head = WriteTar({{kManifest, manifest.dump(2) + "\n", 0600}}, mtime);
  if (!head.ok()) return head.status();
  s = WriteAll(out.get(), std::string_view(*head).substr(0, head->size() - kTarTrailerSize),
               partial);
  if (s.ok()) s = AppendFile(out.get(), partial, kDatabaseEntry, db_copy, db_size, mtime);
  for (const auto& f : files) {
    if (!s.ok()) break;
    auto header = TarHeader({f.path, "", f.mode, 0, 0, f.directory}, f.content.size(), mtime);
    if (!header.ok()) return header.status();
    s = WriteAll(out.get(), *header, partial);
    if (s.ok() && !f.directory)
      s = WriteAll(out.get(), f.content + std::string(TarPadding(f.content.size()), '\0'), partial);
  }
  if (s.ok()) s = WriteAll(out.get(), std::string(kTarTrailerSize, '\0'), partial);
  if (!s.ok()) return s;
  if (::fsync(out.get()) != 0) return Status::Internal("cannot sync " + partial);
  info.bytes = static_cast<uint64_t>(::lseek(out.get(), 0, SEEK_END));
  if (::rename(partial.c_str(), out_path.c_str()) != 0)
    return Status::Internal("cannot rename " + partial + " to " + out_path + ": " +
                            strerror(errno));
  return info;
}

Result<BackupInfo> VerifyBackup(const std::string& archive_path) {
  auto read = ReadChecked(archive_path);
  if (!read.ok()) return read.status();
  BackupInfo info = InfoOf(read->first);
  for (const auto& e : read->second)
    if (!e.directory && e.path != kManifest && e.path != kDatabaseEntry) ++info.files;
  info.bytes = fs::file_size(archive_path);
  return info;
}

Result<BackupInfo> RestoreBackup(const std::string& archive_path, const std::string& data_dir,
                                 const std::string& database_path, std::string* moved_to) {
  auto read = ReadChecked(archive_path);
  if (!read.ok()) return read.status();
  BackupInfo info = InfoOf(read->first);
  Status s = MakeDirs(data_dir, 0711);
  if (!s.ok()) return s;

  // Everything the restore replaces moves aside first: nothing is lost.
  const std::string aside = data_dir + "/before-restore-" + std::to_string(NowMs());
  std::set<std::string> tops;
  for (const auto& e : read->second)
    if (e.path != kManifest) tops.insert(e.path.substr(0, e.path.find('/')));
  // A PostgreSQL inventory is copied aside (into a SQLite file, as a backup
  // holds it) and then replaced, from a SQLite file the restore writes first.
  const bool postgres = sql::IsPostgresUri(database_path);
  const std::string restored =
      postgres ? data_dir + "/restoring-" + std::to_string(NowMs()) + ".db" : database_path;
  std::vector<std::string> db_files;
  if (!postgres) db_files = {database_path, database_path + "-wal", database_path + "-shm"};
  bool moved = false;
  auto move_aside = [&](const std::string& from, const std::string& name) -> Status {
    if (!fs::exists(fs::symlink_status(from))) return Status::Ok();
    if (!moved) {
      Status made = MakeDirs(aside, 0700);
      if (!made.ok()) return made;
      moved = true;
    }
    std::error_code ec;
    fs::rename(from, aside + "/" + name, ec);
    if (ec) return Status::Internal("cannot move " + from + " aside: " + ec.message());
    return Status::Ok();
  };
  for (const auto& f : db_files) {
    s = move_aside(f, fs::path(f).filename().string());
    if (!s.ok()) return s;
  }
  if (postgres) {
    s = MakeDirs(aside, 0700);
    if (!s.ok()) return s;
    moved = true;
    int schema = 0;
    int64_t nodes = 0;
    s = CopyDatabase(database_path, aside + "/" + kDatabaseEntry, schema, nodes);
    if (!s.ok()) return Status::Internal("cannot copy the inventory aside: " + s.message());
  }
  for (const auto& top : tops) {
    if (top == kDatabaseEntry) continue;
    s = move_aside(data_dir + "/" + top, top);
    if (!s.ok()) return s;
  }
  if (moved_to) *moved_to = moved ? aside : "";

  for (const auto& e : read->second) {
    if (e.path == kManifest) continue;
    const bool database = e.path == kDatabaseEntry;
    const std::string to = database ? restored : data_dir + "/" + e.path;
    if (e.directory) {
      s = MakeDirs(to, e.mode);
      if (s.ok()) ::chmod(to.c_str(), static_cast<mode_t>(e.mode));
    } else {
      s = MakeDirs(fs::path(to).parent_path().string(), 0700);
      if (s.ok()) s = WriteFileAtomic(to, e.content, database ? 0600 : e.mode);
    }
    if (!s.ok()) return s;
    if (!e.directory && !database) ++info.files;
  }
  info.bytes = fs::file_size(archive_path);

  // Opening migrates an older schema and proves the database whole.
  auto store = Store::Open(restored);
  if (!store.ok()) return store.status();
  if (postgres) {
    // Every row of the PostgreSQL inventory replaced, in one transaction.
    auto live = Store::Open(database_path);
    if (!live.ok()) return live.status();
    s = (*live)->CopyFrom(**store);
    store->reset();
    std::error_code ec;
    fs::remove(restored, ec);
    if (!s.ok()) return s;
    store = std::move(live);
  }
  info.nodes = static_cast<int64_t>((*store)->ListNodes().size());
  info.schema = (*store)->schema_version();
  return info;
}

Result<UniqueFd> LockDataDir(const std::string& data_dir, int wait_ms) {
  const std::string path = data_dir + "/provisiond.lock";
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd.valid()) return Status::Internal("cannot open " + path + ": " + strerror(errno));
  int locked = ::flock(fd.get(), LOCK_EX | LOCK_NB);
  for (int waited = 0; locked != 0 && errno == EWOULDBLOCK && waited < wait_ms; waited += 100) {
    if (waited == 0)
      spdlog::info("{} is locked by another process: waiting up to {} s", path, wait_ms / 1000);
    ::usleep(100 * 1000);
    locked = ::flock(fd.get(), LOCK_EX | LOCK_NB);
  }
  if (locked != 0) {
    auto holder = ReadFile(path);
    std::string pid = holder.ok() ? holder->substr(0, holder->find('\n')) : "";
    return Status::Conflict("another provisiond (or a restore) is using " + data_dir +
                            (pid.empty() ? "" : " (process " + pid + ")") + "; stop it first");
  }
  // Who holds it, for the message above.
  if (::ftruncate(fd.get(), 0) == 0) {
    const std::string pid = std::to_string(::getpid()) + "\n";
    (void)!::pwrite(fd.get(), pid.data(), pid.size(), 0);
  }
  return fd;
}

}  // namespace prov
