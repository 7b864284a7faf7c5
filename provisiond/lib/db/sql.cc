// db/sql.h's front: a Database or Statement forwards to its backend
// (sql_sqlite.cc, sql_postgres.cc); the migrations and the copies between
// databases are written once for both.
#include "db/sql.h"

#include <utility>
#include <vector>

#include "base/strings.h"
#include "db/sql_backend.h"

namespace prov::sql {

bool IsPostgresUri(std::string_view path) {
  return path.starts_with("postgresql://") || path.starts_with("postgres://");
}

std::string RedactUri(std::string_view uri) {
  std::string out(uri);
  if (!IsPostgresUri(uri)) return out;
  // scheme://user:password@host...: the password is what goes.
  const size_t authority = out.find("://") + 3;
  const size_t at = out.find('@', authority);
  const size_t slash = out.find('/', authority);
  if (at != std::string::npos && (slash == std::string::npos || at < slash)) {
    const size_t colon = out.find(':', authority);
    if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
  }
  // ...?password=...: the same.
  for (size_t p = out.find("password="); p != std::string::npos; p = out.find("password=", p)) {
    const size_t start = p + 9;
    const size_t end = out.find('&', start);
    out.replace(start, (end == std::string::npos ? out.size() : end) - start, "***");
    p = start;
  }
  return out;
}

Database::Database(std::unique_ptr<Connection> c, std::string path, Dialect dialect)
    : c_(std::move(c)), path_(std::move(path)), dialect_(dialect) {}
Database::Database() = default;
Database::Database(Database&& other) noexcept = default;
Database& Database::operator=(Database&& other) noexcept = default;
Database::~Database() = default;

Result<Database> Database::Open(const std::string& path, Mode mode) {
  if (IsPostgresUri(path)) {
    auto c = OpenPostgres(path);
    if (!c.ok()) return c.status();
    return Database(std::move(*c), RedactUri(path), Dialect::kPostgres);
  }
  auto c = OpenSqlite(path, mode == Mode::kReadWriteCreate);
  if (!c.ok()) return c.status();
  return Database(std::move(*c), path, Dialect::kSqlite);
}

Status Database::Exec(const std::string& sql, std::string_view what) {
  return c_->Exec(sql, what);
}

Result<Statement> Database::Prepare(std::string_view sql) {
  auto s = c_->Prepare(sql, false);
  if (!s.ok()) return s.status();
  return Statement(std::move(*s));
}

Result<Statement> Database::PreparePersistent(std::string_view sql) {
  auto s = c_->Prepare(sql, true);
  if (!s.ok()) return s.status();
  return Statement(std::move(*s));
}

Result<int64_t> Database::QueryInt(std::string_view sql) {
  auto s = Prepare(sql);
  if (!s.ok()) return s.status();
  auto row = s->Step();
  if (!row.ok()) return row.status();
  if (!*row) return Status::Internal(path_ + ": \"" + std::string(sql) + "\" returned no row");
  return s->Int(0);
}

Result<int64_t> Database::SchemaVersion() {
  return c_->SchemaVersion("database");
}

int64_t Database::Changes() const {
  return c_->Changes();
}

int64_t Database::TotalChanges() const {
  return c_->TotalChanges();
}

void Database::SetBusyTimeout(int ms) {
  c_->SetBusyTimeout(ms);
}

void Database::SetWalHook(std::function<void(int pages)> hook) {
  c_->SetWalHook(std::move(hook));
}

Status Database::Checkpoint() {
  return c_->Checkpoint();
}

Statement::Statement(std::unique_ptr<Cursor> s) : s_(std::move(s)) {}
Statement::Statement() = default;
Statement::Statement(Statement&& other) noexcept = default;
Statement& Statement::operator=(Statement&& other) noexcept = default;
Statement::~Statement() = default;

Statement& Statement::Bind(int index, int64_t value) {
  s_->Bind(index, value);
  return *this;
}

Statement& Statement::Bind(int index, std::string_view value) {
  s_->Bind(index, value);
  return *this;
}

Statement& Statement::BindNull(int index) {
  s_->BindNull(index);
  return *this;
}

Result<bool> Statement::Step(std::string_view what) {
  return s_->Step(what);
}

Status Statement::Run(std::string_view what) {
  for (;;) {
    auto row = Step(what);
    if (!row.ok()) return row.status();
    if (!*row) return Status::Ok();
  }
}

Result<int64_t> Statement::Insert(std::string_view what) {
  auto row = Step(what);
  if (!row.ok()) return row.status();
  if (!*row) return Status::Internal(std::string(what) + ": the insert returned no id");
  const int64_t id = Int(0);
  if (Status rest = Run(what); !rest.ok()) return rest;
  return id;
}

void Statement::Reset() {
  s_->Reset();
}

int64_t Statement::Int(int column) const {
  return s_->Int(column);
}

std::string Statement::Text(int column) const {
  return s_->Text(column);
}

bool Statement::IsNull(int column) const {
  return s_->IsNull(column);
}

Status ApplyMigrations(Database& db, std::span<const Migration> all, int upto,
                       std::string_view what) {
  // A list's first entry may start later than 1 (PostgreSQL's baseline):
  // its number is in its name.
  const int first = all.empty() ? 1 : std::max(1, std::atoi(all.front().name));
  const int last = first + static_cast<int>(all.size()) - 1;
  auto current = db.c_->SchemaVersion(what);
  if (!current.ok()) return current.status();
  if (*current > last)
    return Status::Internal(std::string(what) + " schema version " + std::to_string(*current) +
                            " is newer than this provisiond knows (" + std::to_string(last) +
                            "); use a newer provisiond");
  if (*current >= std::min(upto, last)) return Status::Ok();
  // One transaction for what is missing, its version bump with it; the
  // version is read again inside it (another provisiond on the same
  // PostgreSQL may have migrated meanwhile).
  if (Status s = db.Exec(db.c_->BeginMigrationSql(), std::string(what) + ": cannot migrate");
      !s.ok())
    return s;
  auto now = db.c_->SchemaVersion(what);
  int from = now.ok() ? static_cast<int>(*now) : -1;
  Status s = now.ok() ? Status::Ok() : now.status();
  // A PostgreSQL database older than its list's baseline does not exist:
  // an empty one (version 0) takes the baseline.
  for (int v = std::max(from + 1, first); s.ok() && v <= upto && v <= last; ++v) {
    const Migration& m = all[static_cast<size_t>(v - first)];
    s = db.Exec(std::string(m.sql) + "\n" + db.c_->SetSchemaVersionSql(what, v),
                std::string("migration ") + m.name + " failed");
  }
  if (s.ok()) s = db.Exec("COMMIT", std::string(what) + ": cannot commit its migration");
  if (!s.ok()) {
    // The migration's error is the one to tell: SQLite has rolled back by
    // itself when ROLLBACK fails too.
    static_cast<void>(db.Exec("ROLLBACK"));
  }
  return s;
}

namespace {

// The tables and their columns a copy fills, as `db` has them.
struct Table {
  std::string name;
  std::vector<std::string> columns;
};

Result<std::vector<Table>> TablesOf(Database& db) {
  const bool pg = db.dialect() == Dialect::kPostgres;
  auto names = db.Prepare(
      pg ? "SELECT table_name FROM information_schema.tables WHERE table_schema = "
           "current_schema() AND table_type = 'BASE TABLE' AND table_name != 'provisiond_schema' "
           "ORDER BY table_name"
         : "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
           "ORDER BY name");
  if (!names.ok()) return names.status();
  std::vector<Table> tables;
  for (;;) {
    auto row = names->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    tables.push_back({names->Text(0), {}});
  }
  for (Table& t : tables) {
    auto columns = db.Prepare(pg ? "SELECT column_name FROM information_schema.columns WHERE "
                                   "table_schema = current_schema() AND table_name = ?1 ORDER BY "
                                   "ordinal_position"
                                 : "SELECT name FROM pragma_table_info(?1) ORDER BY cid");
    if (!columns.ok()) return columns.status();
    columns->Bind(1, t.name);
    for (;;) {
      auto row = columns->Step();
      if (!row.ok()) return row.status();
      if (!*row) break;
      t.columns.push_back(columns->Text(0));
    }
  }
  return tables;
}

// Row by row, every table `to` has, in one transaction on each side.
Status CopyRows(Database& from, Database& to) {
  const std::string what = "cannot copy " + from.path() + " to " + to.path();
  auto tables = TablesOf(to);
  if (!tables.ok()) return Status::Internal(what + ": " + tables.status().message());
  const bool to_pg = to.dialect() == Dialect::kPostgres;
  // One instant of `from`: its snapshot held for the whole read.
  if (Status s = from.Exec(from.dialect() == Dialect::kPostgres
                               ? "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
                               : "BEGIN");
      !s.ok())
    return s;
  // Foreign keys are checked at the commit: rows come table by table.
  Status s = to.Exec(to_pg ? "BEGIN; SET CONSTRAINTS ALL DEFERRED"
                           : "PRAGMA foreign_keys = OFF; BEGIN IMMEDIATE");
  for (const Table& t : *tables) {
    if (!s.ok()) break;
    s = to.Exec("DELETE FROM " + t.name);
    if (!s.ok()) break;
    const std::string columns = Join(t.columns, ", ");
    std::vector<std::string> places;
    for (size_t i = 1; i <= t.columns.size(); ++i) places.push_back("?" + std::to_string(i));
    auto read = from.Prepare("SELECT " + columns + " FROM " + t.name);
    if (!read.ok()) {
      s = Status::Internal(what + ": " + read.status().message());
      break;
    }
    auto write = to.Prepare("INSERT INTO " + t.name + " (" + columns + ") VALUES (" +
                            Join(places, ", ") + ")");
    if (!write.ok()) {
      s = write.status();
      break;
    }
    for (;;) {
      auto row = read->Step();
      if (!row.ok()) {
        s = row.status();
        break;
      }
      if (!*row) break;
      for (int c = 0; c < static_cast<int>(t.columns.size()); ++c) {
        if (read->IsNull(c))
          write->BindNull(c + 1);
        else
          write->Bind(c + 1, read->Text(c));
      }
      s = write->Run("copy of " + t.name);
      write->Reset();
      if (!s.ok()) break;
    }
    if (s.ok() && to_pg && t.columns.size() > 0 && t.columns[0] == "id") {
      // Ids made after the copy continue after the copied ones.
      s = to.Exec("SELECT setval(pg_get_serial_sequence('" + t.name +
                  "', 'id'), coalesce(max(id), 0) + 1, false) FROM " + t.name +
                  " WHERE pg_get_serial_sequence('" + t.name + "', 'id') IS NOT NULL");
    }
  }
  if (s.ok()) s = to.Exec("COMMIT");
  if (!s.ok()) static_cast<void>(to.Exec("ROLLBACK"));
  static_cast<void>(from.Exec("COMMIT"));
  if (!to_pg) static_cast<void>(to.Exec("PRAGMA foreign_keys = ON"));
  return s;
}

}  // namespace

Status CopyDatabase(Database& from, Database& to) {
  if (from.dialect() == Dialect::kSqlite && to.dialect() == Dialect::kSqlite)
    return SqliteBackup(*from.c_, *to.c_, from.path());
  return CopyRows(from, to);
}

}  // namespace prov::sql
