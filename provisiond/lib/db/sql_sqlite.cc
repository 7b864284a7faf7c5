// db/sql.h over SQLite: the embedded default, one file per database.
#include <sqlite3.h>

#include <utility>

#include "db/sql_backend.h"

namespace prov::sql {
namespace {

class SqliteCursor final : public Cursor {
 public:
  SqliteCursor(sqlite3* db, sqlite3_stmt* s) : db_(db), s_(s) {}
  ~SqliteCursor() override { sqlite3_finalize(s_); }
  SqliteCursor(const SqliteCursor&) = delete;
  SqliteCursor& operator=(const SqliteCursor&) = delete;

  void Bind(int index, int64_t value) override { sqlite3_bind_int64(s_, index, value); }
  void Bind(int index, std::string_view value) override {
    // Text even for an empty view without storage (SQLite binds NULL for a
    // null pointer): BindNull is for NULL.
    sqlite3_bind_text(s_, index, value.data() ? value.data() : "", static_cast<int>(value.size()),
                      SQLITE_TRANSIENT);
  }
  void BindNull(int index) override { sqlite3_bind_null(s_, index); }

  Result<bool> Step(std::string_view what) override {
    const int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    return StepError(what);
  }
  void Reset() override {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  int64_t Int(int column) const override { return sqlite3_column_int64(s_, column); }
  std::string Text(int column) const override {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s_, column));
    return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(s_, column)))
             : std::string();
  }
  bool IsNull(int column) const override { return sqlite3_column_type(s_, column) == SQLITE_NULL; }

 private:
  Status StepError(std::string_view what) const {
    std::string msg;
    if (what.empty()) {
      const char* sql = sqlite3_sql(s_);
      msg = "step of \"" + (sql ? std::string(sql).substr(0, 60) : "") + "\"";
    } else {
      msg = what;
    }
    msg += std::string(": ") + sqlite3_errmsg(db_);
    // A row that exists already is the caller's conflict (a taken name), not
    // a failure of the database.
    const int code = sqlite3_extended_errcode(db_);
    if (code == SQLITE_CONSTRAINT_UNIQUE || code == SQLITE_CONSTRAINT_PRIMARYKEY)
      return Status::Conflict(msg);
    return Status::Internal(msg);
  }
  sqlite3* db_;
  sqlite3_stmt* s_;
};

class SqliteConnection final : public Connection {
 public:
  SqliteConnection(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  // Statements are finalized by their owners first (they hold no reference
  // that keeps the handle open); sqlite3_close refuses while one is left.
  ~SqliteConnection() override { sqlite3_close(db_); }
  SqliteConnection(const SqliteConnection&) = delete;
  SqliteConnection& operator=(const SqliteConnection&) = delete;

  sqlite3* handle() const { return db_; }

  Status Exec(const std::string& sql, std::string_view what) override {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) == SQLITE_OK) return Status::Ok();
    std::string msg =
        (what.empty() ? path_ : std::string(what)) + ": " + (err ? err : sqlite3_errmsg(db_));
    sqlite3_free(err);
    return Status::Internal(msg);
  }

  Result<std::unique_ptr<Cursor>> Prepare(std::string_view sql, bool persistent) override {
    // PERSISTENT: SQLite keeps a statement meant to live as long as the
    // connection out of the lookaside memory meant for short-lived ones.
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                           persistent ? SQLITE_PREPARE_PERSISTENT : 0, &s, nullptr) != SQLITE_OK ||
        !s) {
      sqlite3_finalize(s);
      return Status::Internal(path_ + ": cannot prepare \"" + std::string(sql.substr(0, 60)) +
                              (sql.size() > 60 ? "...\"" : "\"") + ": " + sqlite3_errmsg(db_));
    }
    return std::unique_ptr<Cursor>(new SqliteCursor(db_, s));
  }

  int64_t Changes() override { return sqlite3_changes64(db_); }
  int64_t TotalChanges() override { return sqlite3_total_changes64(db_); }

  Result<int64_t> SchemaVersion(std::string_view what) override {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, "PRAGMA user_version", -1, &s, nullptr) != SQLITE_OK ||
        sqlite3_step(s) != SQLITE_ROW) {
      std::string msg =
          std::string(what) + ": cannot read its schema version: " + sqlite3_errmsg(db_);
      sqlite3_finalize(s);
      return Status::Internal(msg);
    }
    const int64_t v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
  }
  std::string SetSchemaVersionSql(std::string_view, int64_t version) override {
    return "PRAGMA user_version = " + std::to_string(version) + ";";
  }
  std::string BeginMigrationSql() override { return "BEGIN IMMEDIATE;"; }

  void SetBusyTimeout(int ms) override { sqlite3_busy_timeout(db_, ms); }

  void SetWalHook(std::function<void(int pages)> hook) override {
    wal_hook_ = std::make_unique<std::function<void(int)>>(std::move(hook));
    // Before the hook: wal_autocheckpoint is a WAL hook of SQLite's own, and
    // 0 takes it away.
    sqlite3_wal_autocheckpoint(db_, 0);
    sqlite3_wal_hook(
        db_,
        [](void* fn, sqlite3*, const char*, int pages) {
          (*static_cast<std::function<void(int)>*>(fn))(pages);
          return SQLITE_OK;
        },
        wal_hook_.get());
  }

  Status Checkpoint() override {
    const int rc =
        sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
    if (rc == SQLITE_OK || rc == SQLITE_BUSY) return Status::Ok();
    return Status::Internal(path_ + ": " + sqlite3_errmsg(db_));
  }

 private:
  sqlite3* db_;
  std::string path_;
  // On the heap: SQLite holds its address.
  std::unique_ptr<std::function<void(int)>> wal_hook_;
};

}  // namespace

Result<std::unique_ptr<Connection>> OpenSqlite(const std::string& path, bool create) {
  const int flags = SQLITE_OPEN_FULLMUTEX |
                    (create ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READWRITE);
  sqlite3* db = nullptr;
  if (const int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr); rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return Status::Error(Code::kUnavailable, "cannot open " + path + ": " + msg);
  }
  return std::unique_ptr<Connection>(new SqliteConnection(db, path));
}

Status SqliteBackup(Connection& from, Connection& to, const std::string& what) {
  sqlite3* src = static_cast<SqliteConnection&>(from).handle();
  sqlite3* dst = static_cast<SqliteConnection&>(to).handle();
  sqlite3_backup* b = sqlite3_backup_init(dst, "main", src, "main");
  if (!b) return Status::Internal("cannot copy " + what + ": " + sqlite3_errmsg(dst));
  const int rc = sqlite3_backup_step(b, -1);
  sqlite3_backup_finish(b);
  if (rc != SQLITE_DONE) return Status::Internal("cannot copy " + what + ": " + sqlite3_errstr(rc));
  return Status::Ok();
}

}  // namespace prov::sql
