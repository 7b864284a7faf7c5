// Numbered schema migrations, embedded from provisiond/lib/store/migrations/*.sql
// (SQLite) and migrations/postgresql/*.sql.
// Migration N (1-based) takes the schema from user_version N-1 to N.
#pragma once

#include <string>
#include <vector>

#include "db/sql.h"

namespace prov {

using Migration = sql::Migration;

const std::vector<Migration>& Migrations();
// The same schema on PostgreSQL: its first entry (a baseline) takes an empty
// database to the version SQLite's list had when PostgreSQL support came;
// every later change is a file in both lists, with the same number.
const std::vector<Migration>& PostgresMigrations();

}  // namespace prov
