#include "base/sqlite.h"

#include <sqlite3.h>

#include <utility>

namespace prov::sql {

Result<Database> Database::Open(const std::string& path, Mode mode) {
  const int flags = mode == Mode::kReadWriteCreate ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
                                                   : SQLITE_OPEN_READWRITE;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, flags, nullptr) != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return Status::Error(Code::kUnavailable, "cannot open " + path + ": " + msg);
  }
  return Database(db, path);
}

Database::Database(Database&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), path_(std::move(other.path_)) {}

Database& Database::operator=(Database&& other) noexcept {
  if (this != &other) {
    sqlite3_close(db_);
    db_ = std::exchange(other.db_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

Database::~Database() {
  // Statements are finalized by their owners first (they hold no reference
  // that keeps the handle open); sqlite3_close refuses while one is left.
  sqlite3_close(db_);
}

Status Database::Exec(const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) == SQLITE_OK) return Status::Ok();
  std::string msg = path_ + ": " + (err ? err : sqlite3_errmsg(db_));
  sqlite3_free(err);
  return Status::Internal(msg);
}

Result<Statement> Database::Prepare(std::string_view sql) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &s, nullptr) != SQLITE_OK ||
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

void Database::SetBusyTimeout(int ms) {
  sqlite3_busy_timeout(db_, ms);
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
  sqlite3_bind_text(s_, index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
  return *this;
}

Statement& Statement::BindNull(int index) {
  sqlite3_bind_null(s_, index);
  return *this;
}

Status Statement::Error(std::string_view what) const {
  const char* sql = sqlite3_sql(s_);
  std::string text = sql ? std::string(sql).substr(0, 60) : "";
  return Status::Internal(std::string(what) + " \"" + text + "\": " + sqlite3_errmsg(db_));
}

Result<bool> Statement::Step() {
  const int rc = sqlite3_step(s_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return Error("step of");
}

Status Statement::Run() {
  for (;;) {
    auto row = Step();
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

Status CopyDatabase(sqlite3* from, sqlite3* to, std::string_view what) {
  sqlite3_backup* b = sqlite3_backup_init(to, "main", from, "main");
  if (!b) return Status::Internal("cannot copy " + std::string(what) + ": " + sqlite3_errmsg(to));
  const int rc = sqlite3_backup_step(b, -1);
  sqlite3_backup_finish(b);
  if (rc != SQLITE_DONE)
    return Status::Internal("cannot copy " + std::string(what) + ": " + sqlite3_errstr(rc));
  return Status::Ok();
}

Status CopyDatabase(Database& from, Database& to) {
  return CopyDatabase(from.get(), to.get(), from.path());
}

Status ApplyMigrations(sqlite3* db, std::span<const Migration> all, int upto,
                       std::string_view what) {
  int current = 0;
  {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, nullptr) != SQLITE_OK ||
        sqlite3_step(s) != SQLITE_ROW) {
      std::string msg =
          std::string(what) + ": cannot read its schema version: " + sqlite3_errmsg(db);
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
    char* err = nullptr;
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg =
          std::string("migration ") + all[v - 1].name + " failed: " + (err ? err : "unknown error");
      sqlite3_free(err);
      sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
      return Status::Internal(msg);
    }
  }
  return Status::Ok();
}

Status ApplyMigrations(Database& db, std::span<const Migration> all, int upto,
                       std::string_view what) {
  return ApplyMigrations(db.get(), all, upto, what);
}

}  // namespace prov::sql
