#include "base/sqlite.h"

#include <doctest/doctest.h>

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

  auto insert = db->Prepare("INSERT INTO t (name) VALUES (?1)");
  REQUIRE(insert.ok());
  for (const char* name : {"a", "b"}) {
    REQUIRE(insert->Bind(1, std::string_view(name)).Run().ok());
    insert->Reset();
  }
  CHECK(db->LastInsertId() == 2);
  // A constraint broken at step time: Run's error.
  Status null_name = insert->BindNull(1).Run();
  insert->Reset();
  CHECK_FALSE(null_name.ok());
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

}  // namespace prov::sql
