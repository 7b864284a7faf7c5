#include "events.h"

#include <doctest/doctest.h>
#include <stdlib.h>
#include <time.h>

namespace prov::ctl {

using json = nlohmann::json;

TEST_CASE("event lines: time, node, kind, detail and who") {
  setenv("TZ", "UTC", 1);
  tzset();
  json e = {{"id", 3},         {"time", 1795311857041}, {"node", "node0"},
            {"kind", "state"}, {"detail", "a -> b"},    {"who", "admin"}};
  CHECK(RenderEvent(e) ==
        "2026-11-22T01:44:17.041+00:00  node0       state            a -> b "
        "(admin)\n");
  e["node"] = "";
  e["who"] = "";
  CHECK(RenderEvent(e) == "2026-11-22T01:44:17.041+00:00  -           state            a -> b\n");
}

}  // namespace prov::ctl
