#include "db/sql.h"

#include <doctest/doctest.h>

#include <utility>
#include <vector>

#include "base/temp_dir.h"

namespace prov::sql {

TEST_CASE("sqlite: a statement's mistakes are errors, not empty answers") {
  auto db = Database::Open(":memory:", Database::Mode::kReadWriteCreate);
  REQUIRE(db.ok());
  REQUIRE(db->Exec("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL)").ok());
  // A misspelt table: Prepare says so, naming the statement.
  auto bad = db->Prepare("SELECT name FROM tt");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("no such table: tt") != std::string::npos);
  CHECK(bad.status().message().find("SELECT name FROM tt") != std::string::npos);
  CHECK_FALSE(db->Exec("INSERT INTO nowhere VALUES (1)").ok());

  auto insert = db->Prepare("INSERT INTO t (name) VALUES (?1) RETURNING id");
  REQUIRE(insert.ok());
  int64_t id = 0;
  for (const char* name : {"a", "b"}) {
    auto made = insert->Bind(1, std::string_view(name)).Insert();
    insert->Reset();
    REQUIRE(made.ok());
    id = *made;
  }
  CHECK(id == 2);  // the new row's id
  // A constraint broken at step time: Run's error.
  Status null_name = insert->BindNull(1).Run();
  insert->Reset();
  CHECK_FALSE(null_name.ok());
  CHECK(null_name.code() == Code::kInternal);
  CHECK(null_name.message().find("NOT NULL") != std::string::npos);

  auto select = db->Prepare("SELECT id, name FROM t WHERE id >= ?1 ORDER BY id");
  REQUIRE(select.ok());
  select->Bind(1, int64_t{2});
  auto row = select->Step();
  REQUIRE(row.ok());
  REQUIRE(*row);
  CHECK(select->Int(0) == 2);
  CHECK(select->Text(1) == "b");
  row = select->Step();
  REQUIRE(row.ok());
  CHECK_FALSE(*row);
  CHECK(*db->QueryInt("SELECT count(*) FROM t") == 2);
  CHECK_FALSE(db->QueryInt("SELECT id FROM t WHERE id > 9").ok());  // no row
}

TEST_CASE("sqlite: migrations in order, each once; a newer database refused") {
  const Migration all[] = {
      {"001_a.sql", "CREATE TABLE a (x INTEGER);"},
      {"002_b.sql", "ALTER TABLE a ADD COLUMN y TEXT NOT NULL DEFAULT '';"},
      {"003_bad.sql", "ALTER TABLE missing ADD COLUMN z;"},
  };
  auto db = Database::Open(":memory:", Database::Mode::kReadWriteCreate);
  REQUIRE(db.ok());
  REQUIRE(ApplyMigrations(*db, std::span(all, 1), 1, "test").ok());
  CHECK(*db->QueryInt("PRAGMA user_version") == 1);
  REQUIRE(ApplyMigrations(*db, std::span(all, 2), 2, "test").ok());
  REQUIRE(ApplyMigrations(*db, std::span(all, 2), 2, "test").ok());  // again: nothing to do
  CHECK(*db->QueryInt("PRAGMA user_version") == 2);
  // A failing migration names itself and changes nothing.
  Status bad = ApplyMigrations(*db, all, 3, "test");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.message().find("migration 003_bad.sql failed") == 0);
  CHECK(*db->QueryInt("PRAGMA user_version") == 2);
  // A database from a newer provisiond.
  REQUIRE(db->Exec("PRAGMA user_version = 7").ok());
  Status newer = ApplyMigrations(*db, std::span(all, 2), 2, "the test log");
  REQUIRE_FALSE(newer.ok());
  CHECK(newer.message() ==
        "the test log schema version 7 is newer than this provisiond knows (2); use a newer "
        "provisiond");
}

TEST_CASE("sqlite: the online copy is the database at one instant") {
  TempDir dir;
  auto from = Database::Open(dir.path() + "/from.db", Database::Mode::kReadWriteCreate);
  auto to = Database::Open(dir.path() + "/to.db", Database::Mode::kReadWriteCreate);
  REQUIRE(from.ok());
  REQUIRE(to.ok());
  REQUIRE(from->Exec("CREATE TABLE t (x); INSERT INTO t VALUES (1), (2); PRAGMA user_version = 4")
              .ok());
  REQUIRE(CopyDatabase(*from, *to).ok());
  CHECK(*to->QueryInt("SELECT sum(x) FROM t") == 3);
  CHECK(*to->QueryInt("PRAGMA user_version") == 4);
  CHECK_FALSE(Database::Open(dir.path() + "/absent.db", Database::Mode::kReadWrite).ok());
}

// A private in-memory database, `schema` run in it.
Database InMemory(const std::string& schema) {
  auto db = Database::Open(":memory:", Database::Mode::kReadWriteCreate);
  REQUIRE(db.ok());
  REQUIRE(db->Exec(schema).ok());
  return std::move(*db);
}

TEST_CASE("sqlite: a taken key is a conflict, with SQLite's words after the caller's") {
  Database db = InMemory("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT UNIQUE)");
  auto insert = db.PreparePersistent("INSERT INTO t (id, name) VALUES (?1, ?2)");
  REQUIRE(insert.ok());
  REQUIRE(insert->Bind(1, int64_t{1}).Bind(2, "a").Run().ok());
  insert->Reset();
  // UNIQUE: named by the caller.
  Status name = insert->Bind(1, int64_t{2}).Bind(2, "a").Run("cannot add a");
  insert->Reset();
  CHECK(name.code() == Code::kConflict);
  CHECK(name.message() == "cannot add a: UNIQUE constraint failed: t.name");
  // PRIMARY KEY: named by the statement when the caller does not.
  Status id = insert->Bind(1, int64_t{1}).Bind(2, "b").Run();
  insert->Reset();
  CHECK(id.code() == Code::kConflict);
  CHECK(id.message() ==
        "step of \"INSERT INTO t (id, name) VALUES (?1, ?2)\": UNIQUE constraint failed: t.id");
  // An empty text is text, not NULL.
  REQUIRE(insert->Bind(1, int64_t{3}).Bind(2, std::string_view()).Run().ok());
  insert->Reset();
  CHECK(*db.QueryInt("SELECT count(*) FROM t WHERE name = ''") == 1);
  // Exec names what it ran for when told.
  Status exec = db.Exec("INSERT INTO nowhere VALUES (1)", "the insert");
  CHECK(exec.message() == "the insert: no such table: nowhere");
}

TEST_CASE("sqlite: changes of the last statement and since the connection opened") {
  Database db = InMemory("CREATE TABLE t (x INTEGER)");
  CHECK(db.TotalChanges() == 0);  // a schema is no row
  REQUIRE(db.Exec("INSERT INTO t VALUES (1), (2), (3)").ok());
  CHECK(db.Changes() == 3);
  auto update = db.Prepare("UPDATE t SET x = x + 1 WHERE x >= ?1");
  REQUIRE(update.ok());
  REQUIRE(update->Bind(1, int64_t{2}).Run().ok());
  CHECK(db.Changes() == 2);
  update->Reset();
  REQUIRE(update->Bind(1, int64_t{9}).Run().ok());
  CHECK(db.Changes() == 0);
  CHECK(db.TotalChanges() == 5);
  // A read changes nothing; a rolled-back write still counts.
  CHECK(*db.QueryInt("SELECT count(*) FROM t") == 3);
  REQUIRE(db.Exec("BEGIN; DELETE FROM t; ROLLBACK").ok());
  CHECK(db.TotalChanges() == 8);
}

TEST_CASE("sqlite: the WAL hook sees each commit, the checkpoint is another connection's") {
  TempDir dir;
  const std::string path = dir.path() + "/wal.db";
  auto opened = Database::Open(path, Database::Mode::kReadWriteCreate);
  REQUIRE(opened.ok());
  REQUIRE(opened->Exec("PRAGMA journal_mode = WAL; CREATE TABLE t (x TEXT)").ok());
  std::vector<int> pages;
  opened->SetWalHook([&](int n) { pages.push_back(n); });
  CHECK(*opened->QueryInt("PRAGMA wal_autocheckpoint") == 0);  // commits leave the log alone
  // The hook stays with the connection when the Database moves.
  Database db = std::move(*opened);
  for (int i = 0; i < 5; ++i) REQUIRE(db.Exec("INSERT INTO t VALUES (randomblob(8000))").ok());
  REQUIRE(pages.size() == 5);
  for (size_t i = 1; i < pages.size(); ++i) CHECK(pages[i] > pages[i - 1]);
  REQUIRE(db.Exec("SELECT 1").ok());
  CHECK(pages.size() == 5);  // no commit, no call

  auto checkpointer = Database::Open(path, Database::Mode::kReadWrite);
  REQUIRE(checkpointer.ok());
  REQUIRE(checkpointer->QueryInt("PRAGMA user_version").ok());  // a read: it knows the log
  REQUIRE(checkpointer->Checkpoint().ok());
  // All of it was copied and no one reads: the next commit starts the log over.
  REQUIRE(db.Exec("INSERT INTO t VALUES ('small')").ok());
  REQUIRE(pages.size() == 6);
  CHECK(pages.back() < pages[4]);
  CHECK(*checkpointer->QueryInt("SELECT count(*) FROM t") == 6);
  // Nothing to do is no error, nor is a database without a log.
  CHECK(checkpointer->Checkpoint().ok());
  auto memory = Database::Open(":memory:", Database::Mode::kReadWriteCreate);
  REQUIRE(memory.ok());
  CHECK(memory->Checkpoint().ok());
}

TEST_CASE("sql: a PostgreSQL URI's password never shows") {
  CHECK(IsPostgresUri("postgresql://db1/provisiond"));
  CHECK(IsPostgresUri("postgres://db1/provisiond"));
  CHECK_FALSE(IsPostgresUri("/var/lib/provisiond/provisiond.db"));
  CHECK(RedactUri("postgresql://provisiond:s3cret@db1,db2/provisiond") ==
        "postgresql://provisiond:***@db1,db2/provisiond");
  CHECK(RedactUri("postgresql:///provisiond?host=/run/pg&password=s3cret&user=p") ==
        "postgresql:///provisiond?host=/run/pg&password=***&user=p");
  CHECK(RedactUri("postgresql://provisiond@db1/x") == "postgresql://provisiond@db1/x");
  // A server that is not there: the error names the URI without its password.
  auto db = Database::Open("postgresql://p:s3cret@/x?host=/nonexistent&connect_timeout=2",
                           Database::Mode::kReadWrite);
  REQUIRE_FALSE(db.ok());
  CHECK(db.status().code() == Code::kUnavailable);
  CHECK(db.status().message().find("s3cret") == std::string::npos);
  CHECK(db.status().message().find("postgresql://p:***@") != std::string::npos);
}

}  // namespace prov::sql
