// db/sql.h over PostgreSQL (libpq): a database several control nodes
// share. One connection, its calls serialized by a mutex; statements are
// prepared on the server (so a mistake in one is an error at Prepare, as with
// SQLite) and run with their parameters as text, typed by the statement.
#include <libpq-fe.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <mutex>
#include <optional>
#include <vector>

#include "db/sql_backend.h"

namespace prov::sql {
namespace {

// SQLite's words into PostgreSQL's: ?N and ? parameters become $N (outside
// quotes), BEGIN IMMEDIATE is BEGIN (one writer at a time is the caller's
// mutex and, between control nodes, the lease). `used`, when given, says
// which numbers the statement names (a statement may skip one: ?1, ?3).
std::string Translate(std::string_view sql, std::vector<bool>* used = nullptr) {
  std::string out;
  out.reserve(sql.size() + 8);
  char quote = 0;
  int highest = 0;
  for (size_t i = 0; i < sql.size(); ++i) {
    const char c = sql[i];
    if (quote) {
      out += c;
      if (c == quote) quote = 0;
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
      out += c;
      continue;
    }
    if (c != '?') {
      out += c;
      continue;
    }
    size_t j = i + 1;
    int n = 0;
    while (j < sql.size() && sql[j] >= '0' && sql[j] <= '9') n = n * 10 + (sql[j++] - '0');
    if (j == i + 1) n = highest + 1;  // a bare ?: the next number
    highest = std::max(highest, n);
    if (used && n > 0) {
      if (used->size() < static_cast<size_t>(n)) used->resize(static_cast<size_t>(n));
      (*used)[static_cast<size_t>(n) - 1] = true;
    }
    out += '$' + std::to_string(n);
    i = j - 1;
  }
  for (size_t at = out.find("BEGIN IMMEDIATE"); at != std::string::npos;
       at = out.find("BEGIN IMMEDIATE", at))
    out.replace(at, 15, "BEGIN");
  return out;
}

std::string Trimmed(const char* message) {
  std::string m = message ? message : "";
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
  // "ERROR:  duplicate key ...": the severity is the Status's code.
  if (m.starts_with("ERROR:  ")) m.erase(0, 8);
  for (size_t nl = m.find('\n'); nl != std::string::npos; nl = m.find('\n', nl)) m[nl] = ' ';
  return m;
}

// PGresult owned.
struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using PgResult = std::unique_ptr<PGresult, ResultDeleter>;

class PgConnection final : public Connection {
 public:
  PgConnection(PGconn* conn, std::string what) : conn_(conn), what_(std::move(what)) {}
  ~PgConnection() override { PQfinish(conn_); }
  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;

  // Runs `fn(conn)` alone on the connection; a connection found broken
  // (the server restarted, a failover moved it) is reset once first.
  template <typename Fn>
  PgResult Call(Fn fn) {
    std::lock_guard lock(mu_);
    if (PQstatus(conn_) == CONNECTION_BAD) {
      PQreset(conn_);
      // A new session: the statements prepared on the old one are gone.
      if (PQstatus(conn_) == CONNECTION_OK) ++generation_;
    }
    PgResult r(fn(conn_));
    // Rows an INSERT, UPDATE or DELETE changed (with RETURNING too), as
    // SQLite counts them; other commands leave the counts.
    const std::string_view tag = r ? PQcmdStatus(r.get()) : "";
    if (tag.starts_with("INSERT ") || tag.starts_with("UPDATE ") || tag.starts_with("DELETE ")) {
      const int64_t n = std::atoll(PQcmdTuples(r.get()));
      changes_ = n;
      total_ += n;
    }
    return r;
  }
  std::string LastError() const { return Trimmed(PQerrorMessage(conn_)); }

  Status Exec(const std::string& sql, std::string_view what) override {
    const std::string text = Translate(sql);
    PgResult r = Call([&](PGconn* c) { return PQexec(c, text.c_str()); });
    const ExecStatusType st = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK || st == PGRES_EMPTY_QUERY)
      return Status::Ok();
    return Status::Internal((what.empty() ? what_ : std::string(what)) + ": " +
                            (r ? Trimmed(PQresultErrorMessage(r.get())) : LastError()));
  }

  Result<std::unique_ptr<Cursor>> Prepare(std::string_view sql, bool) override;

  int64_t Changes() override {
    std::lock_guard lock(mu_);
    return changes_;
  }
  int64_t TotalChanges() override {
    std::lock_guard lock(mu_);
    return total_;
  }

  Result<int64_t> SchemaVersion(std::string_view what) override {
    const std::string key(what);
    auto fail = [&](const PgResult& r) -> Status {
      return Status::Internal(key + ": cannot read its schema version: " +
                              (r ? Trimmed(PQresultErrorMessage(r.get())) : LastError()));
    };
    // No table yet: an empty database (a name the planner cannot resolve
    // fails the whole statement, so it is looked up first).
    PgResult exists = Call(
        [](PGconn* c) { return PQexec(c, "SELECT to_regclass('provisiond_schema') IS NOT NULL"); });
    if (!exists || PQresultStatus(exists.get()) != PGRES_TUPLES_OK || PQntuples(exists.get()) != 1)
      return fail(exists);
    if (std::string_view(PQgetvalue(exists.get(), 0, 0)) != "t") return 0;
    const char* values[] = {key.c_str()};
    PgResult r = Call([&](PGconn* c) {
      return PQexecParams(c, "SELECT version FROM provisiond_schema WHERE what = $1", 1, nullptr,
                          values, nullptr, nullptr, 0);
    });
    if (!r || PQresultStatus(r.get()) != PGRES_TUPLES_OK) return fail(r);
    return PQntuples(r.get()) == 1 ? std::atoll(PQgetvalue(r.get(), 0, 0)) : 0;
  }
  std::string SetSchemaVersionSql(std::string_view what, int64_t version) override {
    std::string key;
    for (char c : what) key += c == '\'' ? std::string("''") : std::string(1, c);
    return "INSERT INTO provisiond_schema (what, version) VALUES ('" + key + "', " +
           std::to_string(version) +
           ") ON CONFLICT (what) DO UPDATE SET version = excluded.version;";
  }
  std::string BeginMigrationSql() override {
    // Control nodes starting together migrate one after the other: the
    // second finds the version moved once it has the lock.
    return "BEGIN; SELECT pg_advisory_xact_lock(7231604); "
           "CREATE TABLE IF NOT EXISTS provisiond_schema "
           "(what TEXT PRIMARY KEY, version BIGINT NOT NULL);";
  }

  // Moves when the connection is a new session. Read inside Call only.
  int generation() const { return generation_; }

  int NextStatementNumber() {
    std::lock_guard lock(mu_);
    return ++statements_;
  }

 private:
  PGconn* conn_;
  std::string what_;
  std::mutex mu_;  // guards conn_ and the counters
  int64_t changes_ = 0, total_ = 0;
  int statements_ = 0;
  int generation_ = 0;
};

class PgCursor final : public Cursor {
 public:
  PgCursor(PgConnection& c, std::string name, std::string sql, std::vector<Oid> types, int params,
           int generation)
      : c_(c),
        name_(std::move(name)),
        sql_(std::move(sql)),
        types_(std::move(types)),
        params_(static_cast<size_t>(params)),
        generation_(generation) {}
  ~PgCursor() override {
    const std::string deallocate = "DEALLOCATE " + name_;
    c_.Call([&](PGconn* conn) { return PQexec(conn, deallocate.c_str()); });
  }
  PgCursor(const PgCursor&) = delete;
  PgCursor& operator=(const PgCursor&) = delete;

  void Bind(int index, int64_t value) override { Set(index, std::to_string(value)); }
  void Bind(int index, std::string_view value) override { Set(index, std::string(value)); }
  void BindNull(int index) override { Set(index, std::nullopt); }

  Result<bool> Step(std::string_view what) override {
    if (!result_) {
      std::vector<const char*> values;
      values.reserve(params_.size());
      for (const auto& p : params_) values.push_back(p ? p->c_str() : nullptr);
      result_ = c_.Call([&](PGconn* conn) {
        if (c_.generation() != generation_) {
          // Prepared again on the connection's new session.
          PgResult again(PQprepare(conn, name_.c_str(), sql_.c_str(),
                                   static_cast<int>(types_.size()),
                                   types_.empty() ? nullptr : types_.data()));
          generation_ = c_.generation();
        }
        return PQexecPrepared(conn, name_.c_str(), static_cast<int>(values.size()), values.data(),
                              nullptr, nullptr, 0);
      });
      const ExecStatusType st = result_ ? PQresultStatus(result_.get()) : PGRES_FATAL_ERROR;
      if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
        Status error = StepError(what);
        result_.reset();
        return error;
      }
      row_ = -1;
      rows_ = PQntuples(result_.get());
    }
    if (row_ + 1 < rows_) {
      ++row_;
      return true;
    }
    row_ = rows_;
    return false;
  }
  void Reset() override {
    result_.reset();
    for (auto& p : params_) p.reset();
  }
  int64_t Int(int column) const override {
    if (IsNull(column)) return 0;
    const char* v = PQgetvalue(result_.get(), row_, column);
    if (v[0] == 't' && v[1] == 0) return 1;
    if (v[0] == 'f' && v[1] == 0) return 0;
    return std::atoll(v);
  }
  std::string Text(int column) const override {
    if (IsNull(column)) return {};
    return std::string(PQgetvalue(result_.get(), row_, column),
                       static_cast<size_t>(PQgetlength(result_.get(), row_, column)));
  }
  bool IsNull(int column) const override {
    return !result_ || row_ < 0 || row_ >= rows_ || column >= PQnfields(result_.get()) ||
           PQgetisnull(result_.get(), row_, column);
  }

 private:
  void Set(int index, std::optional<std::string> value) {
    if (index >= 1 && static_cast<size_t>(index) <= params_.size())
      params_[static_cast<size_t>(index) - 1] = std::move(value);
  }
  Status StepError(std::string_view what) const {
    std::string msg = what.empty() ? "step of \"" + sql_.substr(0, 60) + "\"" : std::string(what);
    msg += ": " + (result_ ? Trimmed(PQresultErrorMessage(result_.get())) : c_.LastError());
    const char* state = result_ ? PQresultErrorField(result_.get(), PG_DIAG_SQLSTATE) : nullptr;
    // unique_violation: the caller's conflict (a taken name).
    if (state && std::string_view(state) == "23505") return Status::Conflict(msg);
    return Status::Internal(msg);
  }
  PgConnection& c_;
  std::string name_, sql_;
  std::vector<Oid> types_;
  std::vector<std::optional<std::string>> params_;
  PgResult result_;
  int row_ = -1, rows_ = 0;
  int generation_;
};

Result<std::unique_ptr<Cursor>> PgConnection::Prepare(std::string_view sql, bool) {
  std::vector<bool> used;
  const std::string text = Translate(sql, &used);
  // A number the statement skips has no place to take its type from: text
  // (its value is bound and never read, as SQLite does).
  constexpr Oid kText = 25;
  std::vector<Oid> types;
  for (bool u : used) types.push_back(u ? 0 : kText);
  const std::string name = "provisiond_" + std::to_string(NextStatementNumber());
  int generation = 0;
  PgResult r = Call([&](PGconn* c) {
    generation = generation_;
    return PQprepare(c, name.c_str(), text.c_str(), static_cast<int>(types.size()),
                     types.empty() ? nullptr : types.data());
  });
  if (!r || PQresultStatus(r.get()) != PGRES_COMMAND_OK)
    return Status::Internal(what_ + ": cannot prepare \"" + std::string(sql.substr(0, 60)) +
                            (sql.size() > 60 ? "...\"" : "\"") + ": " +
                            (r ? Trimmed(PQresultErrorMessage(r.get())) : LastError()));
  // The statement's parameters are the numbers it names, up to the highest.
  const int params = static_cast<int>(types.size());
  return std::unique_ptr<Cursor>(new PgCursor(*this, name, text, types, params, generation));
}

void DropNotice(void*, const char* message) {
  // "relation ... already exists, skipping" and the like: the server's
  // chatter, not the caller's business.
  spdlog::debug("postgresql: {}", Trimmed(message));
}

}  // namespace

Result<std::unique_ptr<Connection>> OpenPostgres(const std::string& uri) {
  const std::string what = RedactUri(uri);
  PGconn* conn = PQconnectdb(uri.c_str());
  if (!conn) return Status::Error(Code::kUnavailable, "cannot open " + what + ": out of memory");
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string msg = Trimmed(PQerrorMessage(conn));
    PQfinish(conn);
    return Status::Error(Code::kUnavailable, "cannot open " + what + ": " + msg);
  }
  PQsetNoticeProcessor(conn, DropNotice, nullptr);
  return std::unique_ptr<Connection>(new PgConnection(conn, what));
}

}  // namespace prov::sql
