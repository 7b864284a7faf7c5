#include "base/sqlite.h"

#include <sqlite3.h>

#include <utility>

namespace prov::sql {

Result<Database> Database::Open(const std::string& path, Mode mode) {
  const int flags = SQLITE_OPEN_FULLMUTEX |
                    (mode == Mode::kReadWriteCreate ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
                                                    : SQLITE_OPEN_READWRITE);
  sqlite3* db = nullptr;
  if (const int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr); rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return Status::Error(Code::kUnavailable, "cannot open " + path + ": " + msg);
  }
  return Database(db, path);
}

Database::Database(Database&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)),
      path_(std::move(other.path_)),
      wal_hook_(std::move(other.wal_hook_)) {}

Database& Database::operator=(Database&& other) noexcept {
  if (this != &other) {
    sqlite3_close(db_);
    db_ = std::exchange(other.db_, nullptr);
    path_ = std::move(other.path_);
    wal_hook_ = std::move(other.wal_hook_);
  }
  return *this;
}

Database::~Database() {
  // Statements are finalized by their owners first (they hold no reference
  // that keeps the handle open); sqlite3_close refuses while one is left.
  sqlite3_close(db_);
}

Status Database::Exec(const std::string& sql, std::string_view what) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) == SQLITE_OK) return Status::Ok();
  std::string msg =
      (what.empty() ? path_ : std::string(what)) + ": " + (err ? err : sqlite3_errmsg(db_));
  sqlite3_free(err);
  return Status::Internal(msg);
}

Result<Statement> Database::Prepare(std::string_view sql) {
  return PrepareWith(sql, 0);
}

Result<Statement> Database::PreparePersistent(std::string_view sql) {
  return PrepareWith(sql, SQLITE_PREPARE_PERSISTENT);
}

Result<Statement> Database::PrepareWith(std::string_view sql, unsigned flags) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()), flags, &s, nullptr) !=
          SQLITE_OK ||
      !s) {
    sqlite3_finalize(s);
    return Status::Internal(path_ + ": cannot prepare \"" + std::string(sql.substr(0, 60)) +
                            (sql.size() > 60 ? "...\"" : "\"") + ": " + sqlite3_errmsg(db_));
  }
  return Statement(db_, s);
}

Result<int64_t> Database::QueryInt(std::string_view sql) {
  auto s = Prepare(sql);
  if (!s.ok()) return s.status();
  auto row = s->Step();
  if (!row.ok()) return row.status();
  if (!*row) return Status::Internal(path_ + ": \"" + std::string(sql) + "\" returned no row");
  return s->Int(0);
}

int64_t Database::LastInsertId() const {
  return sqlite3_last_insert_rowid(db_);
}

int64_t Database::Changes() const {
  return sqlite3_changes64(db_);
}

int64_t Database::TotalChanges() const {
  return sqlite3_total_changes64(db_);
}

void Database::SetBusyTimeout(int ms) {
  sqlite3_busy_timeout(db_, ms);
}

void Database::SetWalHook(std::function<void(int pages)> hook) {
  wal_hook_ = std::make_unique<std::function<void(int)>>(std::move(hook));
  // Before the hook: wal_autocheckpoint is a WAL hook of SQLite's own, and 0
  // takes it away.
  sqlite3_wal_autocheckpoint(db_, 0);
  sqlite3_wal_hook(
      db_,
      [](void* fn, sqlite3*, const char*, int pages) {
        (*static_cast<std::function<void(int)>*>(fn))(pages);
        return SQLITE_OK;
      },
      wal_hook_.get());
}

Status Database::Checkpoint() {
  const int rc =
      sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
  if (rc == SQLITE_OK || rc == SQLITE_BUSY) return Status::Ok();
  return Status::Internal(path_ + ": " + sqlite3_errmsg(db_));
}

Statement::Statement(Statement&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), s_(std::exchange(other.s_, nullptr)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(s_);
    db_ = std::exchange(other.db_, nullptr);
    s_ = std::exchange(other.s_, nullptr);
  }
  return *this;
}

Statement::~Statement() {
  sqlite3_finalize(s_);
}

Statement& Statement::Bind(int index, int64_t value) {
  sqlite3_bind_int64(s_, index, value);
  return *this;
}

Statement& Statement::Bind(int index, std::string_view value) {
  // Text even for an empty view without storage (SQLite binds NULL for a
  // null pointer): BindNull is for NULL.
  sqlite3_bind_text(s_, index, value.data() ? value.data() : "", static_cast<int>(value.size()),
                    SQLITE_TRANSIENT);
  return *this;
}

Statement& Statement::BindNull(int index) {
  sqlite3_bind_null(s_, index);
  return *this;
}

Status Statement::StepError(std::string_view what) const {
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

Result<bool> Statement::Step(std::string_view what) {
  const int rc = sqlite3_step(s_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return StepError(what);
}

Status Statement::Run(std::string_view what) {
  for (;;) {
    auto row = Step(what);
    if (!row.ok()) return row.status();
    if (!*row) return Status::Ok();
  }
}

void Statement::Reset() {
  sqlite3_reset(s_);
  sqlite3_clear_bindings(s_);
}

int64_t Statement::Int(int column) const {
  return sqlite3_column_int64(s_, column);
}

std::string Statement::Text(int column) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s_, column));
  return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(s_, column))) : std::string();
}

Status CopyDatabase(Database& from, Database& to) {
  const std::string& what = from.path();
  sqlite3_backup* b = sqlite3_backup_init(to.db_, "main", from.db_, "main");
  if (!b) return Status::Internal("cannot copy " + what + ": " + sqlite3_errmsg(to.db_));
  const int rc = sqlite3_backup_step(b, -1);
  sqlite3_backup_finish(b);
  if (rc != SQLITE_DONE) return Status::Internal("cannot copy " + what + ": " + sqlite3_errstr(rc));
  return Status::Ok();
}

Status ApplyMigrations(Database& db, std::span<const Migration> all, int upto,
                       std::string_view what) {
  int current = 0;
  {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db.db_, "PRAGMA user_version", -1, &s, nullptr) != SQLITE_OK ||
        sqlite3_step(s) != SQLITE_ROW) {
      std::string msg =
          std::string(what) + ": cannot read its schema version: " + sqlite3_errmsg(db.db_);
      sqlite3_finalize(s);
      return Status::Internal(msg);
    }
    current = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
  }
  if (current > static_cast<int>(all.size()))
    return Status::Internal(std::string(what) + " schema version " + std::to_string(current) +
                            " is newer than this provisiond knows (" + std::to_string(all.size()) +
                            "); use a newer provisiond");
  for (int v = current + 1; v <= upto && v <= static_cast<int>(all.size()); ++v) {
    // Each migration and its version bump commit together.
    std::string sql = std::string("BEGIN IMMEDIATE;\n") + all[v - 1].sql +
                      "\nPRAGMA user_version = " + std::to_string(v) + ";\nCOMMIT;";
    if (Status s = db.Exec(sql, std::string("migration ") + all[v - 1].name + " failed"); !s.ok()) {
      // The migration's error is the one to tell: SQLite has rolled back by
      // itself when ROLLBACK fails too.
      static_cast<void>(db.Exec("ROLLBACK"));
      return s;
    }
  }
  return Status::Ok();
}

}  // namespace prov::sql
