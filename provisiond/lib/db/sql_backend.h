// What a database behind db/sql.h provides: a connection and its prepared
// statements. Private to db/sql*.cc: sql_sqlite.cc and sql_postgres.cc
// each implement it, sql.cc holds what the two share (migrations, copies).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "base/result.h"
#include "db/sql.h"

namespace prov::sql {

class Cursor {
 public:
  virtual ~Cursor() = default;
  virtual void Bind(int index, int64_t value) = 0;
  virtual void Bind(int index, std::string_view value) = 0;
  virtual void BindNull(int index) = 0;
  virtual Result<bool> Step(std::string_view what) = 0;
  virtual void Reset() = 0;
  virtual int64_t Int(int column) const = 0;
  virtual std::string Text(int column) const = 0;
  virtual bool IsNull(int column) const = 0;
};

class Connection {
 public:
  virtual ~Connection() = default;
  virtual Status Exec(const std::string& sql, std::string_view what) = 0;
  virtual Result<std::unique_ptr<Cursor>> Prepare(std::string_view sql, bool persistent) = 0;
  virtual int64_t Changes() = 0;
  virtual int64_t TotalChanges() = 0;
  // The version `what`'s migrations reached (0: none yet), and the SQL that
  // records `version` inside a migration's transaction.
  virtual Result<int64_t> SchemaVersion(std::string_view what) = 0;
  virtual std::string SetSchemaVersionSql(std::string_view what, int64_t version) = 0;
  // What begins a migration's transaction: it holds the schema for itself.
  virtual std::string BeginMigrationSql() = 0;
  virtual void SetBusyTimeout(int) {}
  virtual void SetWalHook(std::function<void(int)>) {}
  virtual Status Checkpoint() { return Status::Ok(); }
};

Result<std::unique_ptr<Connection>> OpenSqlite(const std::string& path, bool create);
Result<std::unique_ptr<Connection>> OpenPostgres(const std::string& uri);
// SQLite's online backup, `from` and `to` both SQLite connections.
Status SqliteBackup(Connection& from, Connection& to, const std::string& what);

}  // namespace prov::sql
