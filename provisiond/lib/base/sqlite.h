// SQLite, owned and checked: a database handle, prepared statements whose
// every step returns a Status, and numbered schema migrations. The units that
// keep data in SQLite (the inventory's store, the console log, backups) use
// these rather than sqlite3_* calls of their own, so an error is never
// dropped and a statement never outlives its database.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "base/result.h"

struct sqlite3;
struct sqlite3_stmt;

namespace prov::sql {

class Statement;

// One schema change, numbered by its place in its list: migration N takes a
// database from user_version N-1 to N.
struct Migration {
  const char* name;  // "001_initial.sql"
  const char* sql;
};

class Database {
 public:
  enum class Mode { kReadWrite, kReadWriteCreate };
  // Opens `path` (":memory:" for a private in-memory one), serialized
  // (SQLITE_OPEN_FULLMUTEX): threads may share the connection. A new file is
  // created 0600 when the process's umask allows no more.
  static Result<Database> Open(const std::string& path, Mode mode);
  Database() = default;
  Database(Database&& other) noexcept;
  Database& operator=(Database&& other) noexcept;
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database();

  const std::string& path() const { return path_; }
  // Runs one or more statements that return no rows ("BEGIN IMMEDIATE",
  // a schema); the error names `what` (the database when empty) and SQLite's
  // message.
  Status Exec(const std::string& sql, std::string_view what = {});
  // A statement, prepared: an error in `sql` is an error here, not a
  // statement that silently does nothing.
  Result<Statement> Prepare(std::string_view sql);
  // Prepare for a statement kept as long as the connection
  // (SQLITE_PREPARE_PERSISTENT: SQLite keeps it out of the lookaside memory
  // meant for short-lived allocations).
  Result<Statement> PreparePersistent(std::string_view sql);
  // The first column of the first row of `sql` ("PRAGMA user_version").
  Result<int64_t> QueryInt(std::string_view sql);
  int64_t LastInsertId() const;
  // Rows the last INSERT, UPDATE or DELETE changed.
  int64_t Changes() const;
  // Rows changed since the connection opened, rolled-back ones included.
  int64_t TotalChanges() const;
  // Waits up to `ms` for another connection's lock instead of failing at once.
  void SetBusyTimeout(int ms);
  // Calls `hook` with the write-ahead log's length in pages after each
  // commit, and commits no longer checkpoint (wal_autocheckpoint 0): the
  // owner checkpoints, from another connection.
  void SetWalHook(std::function<void(int pages)> hook);
  // A passive WAL checkpoint: copies what no reader still needs into the
  // database file, waiting for no one; busy (another checkpoint) is no error.
  // A connection that has not read the database yet copies nothing: SQLite
  // learns from the file's header that it has a log.
  Status Checkpoint();

 private:
  friend Status CopyDatabase(Database& from, Database& to);
  friend Status ApplyMigrations(Database& db, std::span<const Migration> all, int upto,
                                std::string_view what);
  Database(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  // Prepare and PreparePersistent: `flags` as sqlite3_prepare_v3 takes them.
  Result<Statement> PrepareWith(std::string_view sql, unsigned flags);
  sqlite3* db_ = nullptr;
  std::string path_;
  // On the heap: SQLite holds its address, which a move must not change.
  std::unique_ptr<std::function<void(int)>> wal_hook_;
};

class Statement {
 public:
  Statement() = default;  // none yet: Database::Prepare makes one
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  // Parameters by their 1-based index (?1, ?2...).
  Statement& Bind(int index, int64_t value);
  Statement& Bind(int index, std::string_view value);
  Statement& BindNull(int index);
  // The next row: true when there is one, false when the statement is done.
  // A failure is SQLite's message after `what` (after the statement's text
  // when empty); a broken UNIQUE or PRIMARY KEY constraint is kConflict.
  Result<bool> Step(std::string_view what = {});
  // Steps to the end (a statement that returns no rows); fails as Step does.
  Status Run(std::string_view what = {});
  // Ready to run again, with no parameters bound.
  void Reset();

  int64_t Int(int column) const;
  std::string Text(int column) const;

 private:
  friend class Database;
  Statement(sqlite3* db, sqlite3_stmt* s) : db_(db), s_(s) {}
  Status StepError(std::string_view what) const;
  sqlite3* db_ = nullptr;
  sqlite3_stmt* s_ = nullptr;
};

// SQLite's online backup: all of `from` into `to` in one read transaction
// of `from`, so the copy is the database at one instant while its writers go
// on.
Status CopyDatabase(Database& from, Database& to);

// Applies the migrations after the database's user_version, up to `upto`,
// each in a transaction of its own with its version bump; a database newer
// than `all` is refused (`what` names it in the message: "database", "the
// console log").
Status ApplyMigrations(Database& db, std::span<const Migration> all, int upto,
                       std::string_view what);

}  // namespace prov::sql
