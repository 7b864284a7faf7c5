#include "wait.h"

#include <doctest/doctest.h>

namespace prov::ctl {

using json = nlohmann::json;

TEST_CASE("wait: a node further on its way up has reached the state waited for") {
  CHECK(ReachedState("booted", "booted"));
  CHECK(ReachedState("configuring", "booted"));
  CHECK(ReachedState("ready", "booted"));
  CHECK_FALSE(ReachedState("booting", "booted"));
  CHECK_FALSE(ReachedState("booted", "ready"));
  CHECK_FALSE(ReachedState("failed", "booted"));
  CHECK_FALSE(ReachedState("ready", "maintenance"));
  CHECK(ReachedState("maintenance", "maintenance"));

  const json nodes = json::parse(R"([
    {"hostname": "n0", "mac": "52:54:00:00:00:01", "state": "ready"},
    {"hostname": "n1", "mac": "52:54:00:00:00:02", "state": "booted"},
    {"hostname": "n2", "mac": "52:54:00:00:00:03", "state": "booting", "stage": "kernel"},
    {"hostname": "n3", "mac": "52:54:00:00:00:04", "state": "failed", "reason": "no disk"}])");
  WaitView v = ViewNodes(nodes, {"n0", "n1", "n2", "n3", "n4"}, "booted", {});
  CHECK(v.summary == "2/5 booted, 1 booting, 1 failed, 1 missing");
  CHECK_FALSE(v.done);  // n2 may still get there
  CHECK(v.failed == std::vector<std::string>{"n3"});
  CHECK(v.missing == std::vector<std::string>{"n4"});
  v = ViewNodes(nodes, {"n0", "n1"}, "booted", {});
  CHECK(v.done);
  CHECK(v.failed.empty());
}

}  // namespace prov::ctl
