#include "status.h"

#include <doctest/doctest.h>

namespace prov::ctl {

using json = nlohmann::json;

TEST_CASE("the status takes missing fields as unknown rather than failing") {
  CHECK_NOTHROW(RenderStatus(json::object(), "http://x"));
}

TEST_CASE("the status names the active control node when there are several") {
  const json several = {{"control",
                         {{"mode", "active"},
                          {"database", "postgresql"},
                          {"node", "cn2"},
                          {"since", 1795900000000},
                          {"epoch", 2}}}};
  const std::string out = RenderStatus(several, "http://x");
  CHECK(out.find("cn2, active since ") != std::string::npos);
  CHECK(out.find("(takeover 2 of the lease, postgresql)") != std::string::npos);
  // One control node on SQLite: nothing to say.
  const json single = {{"control", {{"mode", "single"}, {"database", "sqlite"}}}};
  CHECK(RenderStatus(single, "http://x").find("control node") == std::string::npos);
}

}  // namespace prov::ctl
