// What only the PostgreSQL inventory has to show (store.postgresql runs
// these; without PROVISIOND_TEST_POSTGRES they skip): its schema is SQLite's,
// table for table and column for column; SQLite's SQL runs there as written;
// a copy between the two dialects keeps every row and every id.
#include <doctest/doctest.h>

#include <map>
#include <vector>

#include "db/sql.h"
#include "store/migrations.h"
#include "store/store.h"
#include "store/testing/test_database.h"

namespace prov {
namespace {

using Columns = std::map<std::string, std::vector<std::string>>;

Columns ColumnsOf(sql::Database& db) {
  const bool pg = db.dialect() == sql::Dialect::kPostgres;
  auto q = db.Prepare(
      pg ? "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = "
           "current_schema() AND table_name != 'provisiond_schema' ORDER BY table_name, "
           "ordinal_position"
         : "SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p WHERE "
           "m.type = 'table' AND m.name NOT LIKE 'sqlite_%' ORDER BY m.name, p.cid");
  REQUIRE_MESSAGE(q.ok(), q.status().message());
  Columns out;
  while (*q->Step()) out[q->Text(0)].push_back(q->Text(1));
  return out;
}

// Every row of every table, as text, in id order: two inventories compared.
// Not the counters: they move as the copy writes nodes (what the addresses
// and loaders are built from changed), as triggers say.
std::vector<std::string> RowsOf(sql::Database& db) {
  std::vector<std::string> out;
  for (const auto& [table, columns] : ColumnsOf(db)) {
    if (table == "counters") continue;
    std::string list;
    for (const auto& c : columns) list += (list.empty() ? "" : ", ") + c;
    auto q = db.Prepare("SELECT " + list + " FROM " + table + " ORDER BY " + columns[0]);
    REQUIRE(q.ok());
    while (*q->Step()) {
      std::string row = table + ":";
      for (int i = 0; i < static_cast<int>(columns.size()); ++i)
        row += "|" + (q->IsNull(i) ? std::string("NULL") : q->Text(i));
      out.push_back(row);
    }
  }
  return out;
}

sql::Database OpenMigrated(const std::string& where) {
  auto db = sql::Database::Open(where, sql::Database::Mode::kReadWriteCreate);
  REQUIRE_MESSAGE(db.ok(), db.status().message());
  REQUIRE(ApplyMigrations(*db, static_cast<int>(Migrations().size())).ok());
  return std::move(*db);
}

}  // namespace

TEST_CASE(
    "store on postgresql: the baseline is SQLite's schema, table for table, column for column") {
  if (!testing::OnPostgres()) return;
  sql::Database lite = OpenMigrated(":memory:");
  sql::Database pg = OpenMigrated(testing::TestDatabase());
  CHECK(ColumnsOf(pg) == ColumnsOf(lite));
  CHECK(*pg.SchemaVersion() == *lite.SchemaVersion());
  // The PostgreSQL list starts at 13 (its baseline) and ends where SQLite's does.
  CHECK(std::atoi(PostgresMigrations().front().name) == 13);
  CHECK(PostgresMigrations().size() + 12 == Migrations().size());
  // Migrating again changes nothing: the version is read inside the lock.
  CHECK(ApplyMigrations(pg, static_cast<int>(Migrations().size())).ok());
  CHECK(*pg.SchemaVersion() == static_cast<int64_t>(Migrations().size()));
}

TEST_CASE("store on postgresql: SQLite's words, parameters and errors") {
  if (!testing::OnPostgres()) return;
  sql::Database pg = OpenMigrated(testing::TestDatabase());
  // A ? inside quotes is text; ?N and bare ? are parameters; a skipped
  // number is allowed.
  auto q = pg.Prepare("SELECT '?1' || ?2, ?3, CAST(? AS BIGINT) + 1");
  REQUIRE_MESSAGE(q.ok(), q.status().message());
  q->Bind(1, std::string_view("unused")).Bind(2, std::string_view("x")).BindNull(3);
  q->Bind(4, int64_t{41});
  REQUIRE(*q->Step());
  CHECK(q->Text(0) == "?1x");
  CHECK(q->IsNull(1));
  CHECK(q->Int(1) == 0);
  CHECK(q->Int(2) == 42);
  // A mistake is an error at Prepare, naming the statement.
  auto bad = pg.Prepare("SELECT name FROM no_such_table");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("no_such_table") != std::string::npos);
  // A taken unique name is a conflict, as on SQLite.
  auto insert = pg.Prepare("INSERT INTO counters (name, value) VALUES (?1, 1)");
  REQUIRE(insert.ok());
  Status taken = insert->Bind(1, std::string_view("addresses")).Run();
  CHECK(taken.code() == Code::kConflict);
  // Booleans read as 1 and 0; BEGIN IMMEDIATE is a transaction.
  CHECK(*pg.QueryInt("SELECT 1 < 2") == 1);
  REQUIRE(pg.Exec("BEGIN IMMEDIATE").ok());
  REQUIRE(pg.Exec("UPDATE counters SET value = 7 WHERE name = 'addresses'").ok());
  CHECK(pg.Changes() == 1);
  REQUIRE(pg.Exec("ROLLBACK").ok());
  CHECK(*pg.QueryInt("SELECT value FROM counters WHERE name = 'addresses'") == 1);
}

TEST_CASE(
    "store on postgresql: a lost connection is made again and its statements prepared again") {
  if (!testing::OnPostgres()) return;
  sql::Database pg = OpenMigrated(testing::TestDatabase());
  auto count = pg.Prepare("SELECT count(*) FROM counters WHERE name != ?1");
  REQUIRE(count.ok());
  const int64_t pid = *pg.QueryInt("SELECT pg_backend_pid()");
  // The server ends the session (a restart, a failover, an administrator).
  sql::Database admin = OpenMigrated(testing::TestDatabase());
  REQUIRE(admin.Exec("SELECT pg_terminate_backend(" + std::to_string(pid) + ")").ok());
  // The statement in flight fails, with the server's reason...
  Result<bool> lost = count->Bind(1, std::string_view("x")).Step();
  count->Reset();
  CHECK_FALSE(lost.ok());
  // ...the next one runs on a new session, prepared there again.
  Result<bool> again = count->Bind(1, std::string_view("x")).Step();
  REQUIRE_MESSAGE(again.ok(), again.status().message());
  CHECK(*again);
  CHECK(count->Int(0) == 2);
  count->Reset();
  CHECK(*pg.QueryInt("SELECT pg_backend_pid()") != pid);
}

TEST_CASE("store on postgresql: a copy from SQLite and back keeps every row and id") {
  if (!testing::OnPostgres()) return;
  const std::string where = testing::TestDatabase();
  {
    auto lite = Store::Open(":memory:");
    REQUIRE(lite.ok());
    REQUIRE((*lite)
                ->Transact([&](StoreTx& tx) {
                  for (int i = 0; i < 30; ++i) {
                    NodeRecord n;
                    n.mac = "52:54:00:00:01:" + std::string(i < 16 ? "0" : "") +
                            "0123456789abcdef"[i % 16] + std::to_string(i / 16);
                    if (i % 3) n.hostname = "n" + std::to_string(i);  // some only discovered
                    auto r = tx.InsertNode(n);
                    if (!r.ok()) return r.status();
                  }
                  return Status::Ok();
                })
                .ok());
    REQUIRE((*lite)
                ->Transact([&](StoreTx& tx) { return tx.DeleteNode((*lite)->FindNode("n1")->id); })
                .ok());  // a gap
    auto pg = Store::Open(where);
    REQUIRE_MESSAGE(pg.ok(), pg.status().message());
    REQUIRE((*pg)->CopyFrom(**lite).ok());
    CHECK((*pg)->ListNodes().size() == 29);
    CHECK((*pg)->FindNode("n2")->id == (*lite)->FindNode("n2")->id);
  }
  sql::Database pg = OpenMigrated(where);
  sql::Database back = OpenMigrated(":memory:");
  REQUIRE(sql::CopyDatabase(pg, back).ok());
  const auto rows = RowsOf(pg);
  CHECK(rows.size() >= 29);
  CHECK(RowsOf(back) == rows);
  CHECK(*back.QueryInt("SELECT value FROM counters WHERE name = 'addresses'") >=
        *pg.QueryInt("SELECT value FROM counters WHERE name = 'addresses'"));
}

}  // namespace prov
