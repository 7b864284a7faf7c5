// Numbered schema migrations, embedded from provisiond/lib/migrations/*.sql.
// Migration N (1-based) takes the schema from user_version N-1 to N.
#pragma once

#include <string>
#include <vector>

#include "base/sqlite.h"

namespace prov {

using Migration = sql::Migration;

const std::vector<Migration>& Migrations();

}  // namespace prov
