// SQLite, owned and checked: a database handle, prepared statements whose
// every step returns a Status, and numbered schema migrations. The units that
// keep data in SQLite (the console log, backups; the inventory's store next)
// use these rather than sqlite3_* calls of their own, so an error is never
// dropped and a statement never outlives its database.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/result.h"

struct sqlite3;
struct sqlite3_stmt;

namespace prov::sql {

class Statement;

class Database {
 public:
  enum class Mode { kReadWrite, kReadWriteCreate };
  // Opens `path` (":memory:" for a private in-memory one). A new file is
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
  // a schema); the error names the database and SQLite's message.
  Status Exec(const std::string& sql);
  // A statement, prepared: an error in `sql` is an error here, not a
  // statement that silently does nothing.
  Result<Statement> Prepare(std::string_view sql);
  // The first column of the first row of `sql` ("PRAGMA user_version").
  Result<int64_t> QueryInt(std::string_view sql);
  int64_t LastInsertId() const;
  // Waits up to `ms` for another connection's lock instead of failing at once.
  void SetBusyTimeout(int ms);
  // For what this layer does not wrap (the online backup, commit hooks).
  sqlite3* get() const { return db_; }

 private:
  Database(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_ = nullptr;
  std::string path_;
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
  Result<bool> Step();
  // Steps to the end (a statement that returns no rows).
  Status Run();
  // Ready to run again, with no parameters bound.
  void Reset();

  int64_t Int(int column) const;
  std::string Text(int column) const;

 private:
  friend class Database;
  Statement(sqlite3* db, sqlite3_stmt* s) : db_(db), s_(s) {}
  Status Error(std::string_view what) const;
  sqlite3* db_ = nullptr;
  sqlite3_stmt* s_ = nullptr;
};

// SQLite's online backup: all of `from` into `to` in one read transaction
// of `from`, so the copy is the database at one instant while its writers go
// on.
Status CopyDatabase(Database& from, Database& to);
// The same between handles this layer does not own (the store's); `what`
// names `from` in the error ("the database").
Status CopyDatabase(sqlite3* from, sqlite3* to, std::string_view what);

// One schema change, numbered by its place in its list: migration N takes a
// database from user_version N-1 to N.
struct Migration {
  const char* name;  // "001_initial.sql"
  const char* sql;
};

// Applies the migrations after the database's user_version, up to `upto`,
// each in a transaction of its own with its version bump; a database newer
// than `all` is refused (`what` names it in the message: "database", "the
// console log").
Status ApplyMigrations(Database& db, std::span<const Migration> all, int upto,
                       std::string_view what);
// The same on a handle this layer does not own (the store's, until it holds
// a Database).
Status ApplyMigrations(sqlite3* db, std::span<const Migration> all, int upto,
                       std::string_view what);

}  // namespace prov::sql
