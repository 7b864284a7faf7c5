// The database, owned and checked: a connection, prepared statements whose
// every step returns a Status, and numbered schema migrations, over SQLite
// (a file: the embedded default) or PostgreSQL (a postgresql:// URI: a
// database several control nodes share). The units that keep data in a
// database (the inventory's store, the console log, backups) use these rather
// than sqlite3_* or PQ* calls of their own, so an error is never dropped and a
// statement never outlives its database.
//
// The SQL is written once, in SQLite's words where the two agree: ?N
// parameters (PostgreSQL gets $N), BEGIN IMMEDIATE (BEGIN). Where they do not
// (a JSON array's elements, PRAGMAs), the caller asks dialect().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "base/result.h"

namespace prov::sql {

class Statement;
class Connection;
class Cursor;

enum class Dialect { kSqlite, kPostgres };

// "postgresql://..." or "postgres://...": a PostgreSQL connection URI, not a
// file.
bool IsPostgresUri(std::string_view path);
// The URI without its password ("postgresql://provisiond:***@host/db"), for
// logs and errors.
std::string RedactUri(std::string_view uri);

// One schema change, numbered by its place in its list: migration N takes a
// database from user_version N-1 to N. A PostgreSQL list starts where
// PostgreSQL support did: its first entry's name gives its number
// ("013_baseline.sql" makes an empty database version 13 at once).
struct Migration {
  const char* name;  // "001_initial.sql"
  const char* sql;
};

class Database {
 public:
  enum class Mode { kReadWrite, kReadWriteCreate };
  // Opens `path` (":memory:" for a private in-memory one), serialized
  // (SQLITE_OPEN_FULLMUTEX): threads may share the connection. A new file is
  // created 0600 when the process's umask allows no more. A postgresql://
  // URI connects to that server instead (the mode does not matter: the
  // database exists), one connection, serialized by a mutex of its own.
  static Result<Database> Open(const std::string& path, Mode mode);
  Database();
  Database(Database&& other) noexcept;
  Database& operator=(Database&& other) noexcept;
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database();

  // The file, or the URI without its password.
  const std::string& path() const { return path_; }
  Dialect dialect() const { return dialect_; }
  bool is_open() const { return c_ != nullptr; }
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
  // The first column of the first row of `sql` ("SELECT count(*) ...").
  Result<int64_t> QueryInt(std::string_view sql);
  // The schema's version: SQLite's user_version, the provisiond_schema
  // table's on PostgreSQL (0 when there is none yet).
  Result<int64_t> SchemaVersion();
  // Rows the last INSERT, UPDATE or DELETE changed.
  int64_t Changes() const;
  // Rows changed since the connection opened, rolled-back ones included.
  int64_t TotalChanges() const;
  // SQLite only (nothing on PostgreSQL, whose server has its own): waits up
  // to `ms` for another connection's lock instead of failing at once.
  void SetBusyTimeout(int ms);
  // SQLite only: calls `hook` with the write-ahead log's length in pages
  // after each commit, and commits no longer checkpoint (wal_autocheckpoint
  // 0): the owner checkpoints, from another connection.
  void SetWalHook(std::function<void(int pages)> hook);
  // SQLite only: a passive WAL checkpoint: copies what no reader still needs
  // into the database file, waiting for no one; busy (another checkpoint) is
  // no error. A connection that has not read the database yet copies
  // nothing: SQLite learns from the file's header that it has a log.
  Status Checkpoint();

 private:
  friend Status CopyDatabase(Database& from, Database& to);
  friend Status ApplyMigrations(Database& db, std::span<const Migration> all, int upto,
                                std::string_view what);
  Database(std::unique_ptr<Connection> c, std::string path, Dialect dialect);
  std::unique_ptr<Connection> c_;
  std::string path_;
  Dialect dialect_ = Dialect::kSqlite;
};

class Statement {
 public:
  Statement();  // none yet: Database::Prepare makes one
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  // Parameters by their 1-based index (?1, ?2...). PostgreSQL takes an
  // integer as bigint and text as a literal of the type the statement gives
  // its place.
  Statement& Bind(int index, int64_t value);
  Statement& Bind(int index, std::string_view value);
  Statement& BindNull(int index);
  // The next row: true when there is one, false when the statement is done.
  // A failure is the database's message after `what` (after the statement's
  // text when empty); a broken UNIQUE or PRIMARY KEY constraint is kConflict.
  Result<bool> Step(std::string_view what = {});
  // Steps to the end (a statement that returns no rows); fails as Step does.
  Status Run(std::string_view what = {});
  // Runs an INSERT ... RETURNING id (SQLite and PostgreSQL alike) and
  // answers the new row's id; fails as Step does.
  Result<int64_t> Insert(std::string_view what = {});
  // Ready to run again, with no parameters bound.
  void Reset();

  // A column of the current row: NULL reads as 0 and "" (as SQLite's do),
  // PostgreSQL's booleans as 1 and 0.
  int64_t Int(int column) const;
  std::string Text(int column) const;
  bool IsNull(int column) const;

 private:
  friend class Database;
  friend Status CopyDatabase(Database& from, Database& to);
  explicit Statement(std::unique_ptr<Cursor> s);
  std::unique_ptr<Cursor> s_;
};

// All of `from` into `to`, in one read transaction of `from` so the copy is
// the database at one instant while its writers go on: SQLite's online
// backup between two SQLite databases; between dialects, every table `to`
// has, row by row, into a `to` whose schema is at `from`'s version (its rows
// replaced, its id sequences moved past the copied ids).
Status CopyDatabase(Database& from, Database& to);

// The database's clock in unix milliseconds, as an SQL expression of
// `dialect` (what decides a lease's lapse and a report's age: never a
// control node's own clock).
inline const char* NowMsSql(Dialect dialect) {
  return dialect == Dialect::kPostgres
             ? "CAST(extract(epoch FROM clock_timestamp()) * 1000 AS BIGINT)"
             : "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)";
}

// Applies the migrations after the database's user_version, up to `upto`,
// each in a transaction of its own with its version bump; a database newer
// than `all` is refused (`what` names it in the message: "database", "the
// console log").
Status ApplyMigrations(Database& db, std::span<const Migration> all, int upto,
                       std::string_view what);

}  // namespace prov::sql
