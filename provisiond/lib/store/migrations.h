// Numbered schema migrations, embedded from provisiond/lib/migrations/*.sql.
// Migration N (1-based) takes the schema from user_version N-1 to N.
#pragma once

#include <string>
#include <vector>

namespace prov {

struct Migration {
  const char* name;  // "001_initial.sql"
  const char* sql;
};

const std::vector<Migration>& Migrations();

}  // namespace prov
