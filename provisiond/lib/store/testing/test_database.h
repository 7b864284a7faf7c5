// The database a test's store opens: ":memory:" (SQLite), or, when
// PROVISIOND_TEST_POSTGRES holds a PostgreSQL URI (tests/store_postgres_test.sh
// starts a throwaway server and sets it), an empty schema of the test's own on
// that server, so the same tests run on PostgreSQL.
#pragma once

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "db/sql.h"

namespace prov::testing {

inline std::string TestDatabase() {
  const char* uri = std::getenv("PROVISIOND_TEST_POSTGRES");
  if (!uri || !*uri) return ":memory:";
  static int made = 0;
  const std::string schema = "test_" + std::to_string(::getpid()) + "_" + std::to_string(++made);
  auto db = sql::Database::Open(uri, sql::Database::Mode::kReadWrite);
  REQUIRE_MESSAGE(db.ok(), db.status().message());
  REQUIRE(db->Exec("DROP SCHEMA IF EXISTS " + schema + " CASCADE; CREATE SCHEMA " + schema).ok());
  const std::string u(uri);
  return u + (u.find('?') == std::string::npos ? "?" : "&") + "options=-csearch_path%3D" + schema;
}

// True when the tests run on PostgreSQL (what only SQLite has is skipped).
inline bool OnPostgres() {
  const char* uri = std::getenv("PROVISIOND_TEST_POSTGRES");
  return uri && *uri;
}

}  // namespace prov::testing
