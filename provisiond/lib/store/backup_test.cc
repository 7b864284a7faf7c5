#include "store/backup.h"

#include <doctest/doctest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "base/file_util.h"
#include "store/store.h"
#include "store/testing/test_database.h"

namespace prov {
namespace {

namespace fs = std::filesystem;

struct BackupDir {
  fs::path path = fs::temp_directory_path() / ("provision-backup-" + std::to_string(getpid()));
  BackupDir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~BackupDir() { fs::remove_all(path); }
};

Status AddNodes(Store& store, int from, int count) {
  return store.Transact([&](StoreTx& tx) {
    for (int i = from; i < from + count; ++i) {
      NodeRecord n;
      n.hostname = "n" + std::to_string(i);
      char mac[18];
      snprintf(mac, sizeof mac, "52:54:00:%02x:%02x:%02x", (i >> 16) & 255, (i >> 8) & 255,
               i & 255);
      n.mac = mac;
      auto r = tx.InsertNode(n);
      if (!r.ok()) return r.status();
    }
    return Status::Ok();
  });
}

}  // namespace

TEST_CASE("backup: taken while nodes are added, restored whole; images and run files left out") {
  BackupDir d;
  // On PostgreSQL (store.postgresql) the inventories are two schemas there:
  // the backup is still a SQLite file, the restore replaces the rows.
  const std::string data = (d.path / "data").string();
  const std::string db =
      ::prov::testing::OnPostgres() ? ::prov::testing::TestDatabase() : data + "/provisiond.db";
  fs::create_directories(data + "/ssh");
  fs::create_directories(data + "/secrets");
  fs::create_directories(data + "/images/lab/v1");
  fs::create_directories(data + "/netboot");
  REQUIRE(WriteFileAtomic(data + "/tokens", "abc admin\n", 0600).ok());
  REQUIRE(WriteFileAtomic(data + "/ssh/id_ed25519", "PRIVATE KEY\n", 0600).ok());
  REQUIRE(WriteFileAtomic(data + "/secrets/munge.key", std::string("\0\1\2", 3), 0600).ok());
  REQUIRE(WriteFileAtomic(data + "/images/lab/v1/vmlinuz", "kernel").ok());
  REQUIRE(WriteFileAtomic(data + "/netboot/dnsmasq.conf", "port=0\n").ok());
  auto store = Store::Open(db);
  REQUIRE(store.ok());
  REQUIRE(AddNodes(**store, 0, 200).ok());

  // A writer goes on while the backup runs; the copy is one instant of it.
  std::atomic<bool> stop{false};
  std::atomic<int> added{0};
  std::thread writer([&] {
    for (int i = 200; !stop && i < 20000; i += 10) {
      if (!AddNodes(**store, i, 10).ok()) break;
      added += 10;
    }
  });
  auto info = WriteBackup(data, db, (d.path / "b.tar").string(), "9.9.9");
  stop = true;
  writer.join();
  REQUIRE_MESSAGE(info.ok(), info.status().message());
  CHECK(info->nodes >= 200);
  CHECK(info->nodes % 10 == 0);  // whole transactions only
  CHECK(info->files == 3);       // tokens, the key, the munge key
  CHECK((fs::status(d.path / "b.tar").permissions() & fs::perms::all) ==
        (fs::perms::owner_read | fs::perms::owner_write));
  CHECK_FALSE(fs::exists(d.path / "b.tar.partial"));

  auto verified = VerifyBackup((d.path / "b.tar").string());
  REQUIRE_MESSAGE(verified.ok(), verified.status().message());
  CHECK(verified->provisiond_version == "9.9.9");
  CHECK(verified->nodes == info->nodes);

  // Restore into a folder that already has a database: it moves aside.
  const std::string other = (d.path / "other").string();
  const std::string other_db =
      ::prov::testing::OnPostgres() ? ::prov::testing::TestDatabase() : other + "/provisiond.db";
  fs::create_directories(other);
  {
    auto old = Store::Open(other_db);
    REQUIRE(old.ok());
    REQUIRE(AddNodes(**old, 50000, 3).ok());
  }
  std::string moved;
  auto restored = RestoreBackup((d.path / "b.tar").string(), other, other_db, &moved);
  REQUIRE_MESSAGE(restored.ok(), restored.status().message());
  CHECK(restored->nodes == info->nodes);
  CHECK(restored->files == 3);
  CHECK(*ReadFile(other + "/secrets/munge.key") == std::string("\0\1\2", 3));
  CHECK(*ReadFile(other + "/ssh/id_ed25519") == "PRIVATE KEY\n");
  CHECK((fs::status(other + "/ssh/id_ed25519").permissions() & fs::perms::all) ==
        (fs::perms::owner_read | fs::perms::owner_write));
  CHECK_FALSE(fs::exists(other + "/images"));
  CHECK_FALSE(fs::exists(other + "/netboot"));
  REQUIRE_FALSE(moved.empty());
  CHECK(fs::exists(moved + "/provisiond.db"));  // the old inventory, kept
  auto again = Store::Open(other_db);
  REQUIRE(again.ok());
  CHECK((*again)->FindNode("n199").ok());
  CHECK_FALSE((*again)->FindNode("n50000").ok());
  CHECK(static_cast<int64_t>((*again)->ListNodes().size()) == info->nodes);
  // Ids made after the restore continue after the restored ones.
  REQUIRE(AddNodes(**again, 60000, 1).ok());
  CHECK((*again)->FindNode("n60000")->id > (*again)->FindNode("n199")->id);
}

TEST_CASE("backup: a damaged archive or a newer schema is refused before anything is written") {
  BackupDir d;
  const std::string data = (d.path / "data").string(), db = data + "/provisiond.db";
  fs::create_directories(data);
  {
    auto store = Store::Open(db);
    REQUIRE(store.ok());
    REQUIRE(AddNodes(**store, 0, 5).ok());
  }
  REQUIRE(WriteFileAtomic(data + "/tokens", "abc admin\n", 0600).ok());
  const std::string tar = (d.path / "b.tar").string();
  REQUIRE(WriteBackup(data, db, tar, "1").ok());
  std::string bytes = *ReadFile(tar);
  // Flip a byte of the tokens file's content (the last entry before the trailer).
  size_t at = bytes.rfind("abc admin");
  REQUIRE(at != std::string::npos);
  bytes[at] = 'x';
  REQUIRE(WriteFileAtomic(tar + ".bad", bytes).ok());
  auto bad = VerifyBackup(tar + ".bad");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("tokens does not match its SHA-256") != std::string::npos);
  const std::string target = (d.path / "target").string();
  CHECK_FALSE(RestoreBackup(tar + ".bad", target, target + "/provisiond.db", nullptr).ok());
  CHECK_FALSE(fs::exists(target));

  // A database from a newer provisiond.
  sqlite3* raw = nullptr;
  REQUIRE(sqlite3_open(db.c_str(), &raw) == SQLITE_OK);
  sqlite3_exec(raw, "PRAGMA user_version = 999", nullptr, nullptr, nullptr);
  sqlite3_close(raw);
  REQUIRE(WriteBackup(data, db, tar, "99.0").ok());
  auto newer = VerifyBackup(tar);
  REQUIRE_FALSE(newer.ok());
  CHECK(newer.status().message().find("schema version 999") != std::string::npos);
  CHECK(newer.status().message().find("provisiond 99.0") != std::string::npos);
}

TEST_CASE("backup: the data folder's lock admits one holder") {
  BackupDir d;
  auto first = LockDataDir(d.path.string());
  REQUIRE(first.ok());
  // flock locks belong to the open file: a second open in this process conflicts too.
  auto second = LockDataDir(d.path.string());
  REQUIRE_FALSE(second.ok());
  CHECK(second.status().message().find("process " + std::to_string(getpid())) != std::string::npos);
  first->reset();
  CHECK(LockDataDir(d.path.string()).ok());
}

TEST_CASE("backup: a start waits a bounded time for the lock's last holder to let go") {
  BackupDir d;
  auto first = LockDataDir(d.path.string());
  REQUIRE(first.ok());
  std::thread release([&] { first->reset(); });  // the old process's last thread, exiting
  auto waited = LockDataDir(d.path.string(), 30000);
  release.join();
  CHECK_MESSAGE(waited.ok(), waited.status().message());
  // Still held after the wait: refused, naming the holder.
  auto again = LockDataDir(d.path.string(), 200);
  REQUIRE_FALSE(again.ok());
  CHECK(again.status().message().find("process " + std::to_string(getpid())) != std::string::npos);
}

}  // namespace prov
