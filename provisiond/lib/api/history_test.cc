#include "api/boot.h"
#include "api/status_metrics.h"

#include <doctest/doctest.h>

#include "api/test_fixture.h"
#include "store/timeline.h"

namespace prov {
namespace {

void Boot(Store& store, const std::string& node, int64_t start_ms,
          const std::vector<std::pair<std::string, int64_t>>& stages) {
  auto n = store.FindNode(node);
  REQUIRE(n.ok());
  for (const auto& [stage, after_ms] : stages) {
    EventRecord e{0,      start_ms + after_ms, n->id,  node,
                  "boot", stage + ": seen",    "boot", ParseBootStage(stage)};
    REQUIRE(store.AppendEvent(e).ok());
  }
}

}  // namespace

TEST_CASE("history: a node's boots for its waterfall, newest first") {
  api_test::Fixture f;
  f.Add("gpu01", "52:54:00:00:00:01");
  Boot(*f.store, "gpu01", 1000000,
       {{"dhcp", 0}, {"ipxe-binary", 500}, {"script", 1500}, {"kernel", 4000}, {"hello", 9000}});
  Boot(*f.store, "gpu01", 2000000,
       {{"dhcp", 0}, {"ipxe-binary", 400}, {"script", 1000}, {"kernel", 7000}});
  HttpResponse r = f.Call("GET", "/api/v1/nodes/gpu01/boots", "", true, api_test::kReadToken);
  REQUIRE(r.status == 200);
  auto j = nlohmann::json::parse(r.body);
  CHECK(j["node"] == "gpu01");
  CHECK(j["stages"].size() == AllBootStages().size());
  CHECK(j["events_read_all"] == true);
  REQUIRE(j["boots"].size() == 2);
  const auto& now = j["boots"][0];
  CHECK(now["start"] == 2000000);
  CHECK(now["complete"] == false);
  CHECK(now["last_stage"] == "kernel");
  CHECK(now["next_stage"] == "initrd");
  REQUIRE(now["steps"].size() == 4);
  CHECK(now["steps"][3]["stage"] == "kernel");
  CHECK(now["steps"][3]["after_ms"] == 7000);
  CHECK(now["steps"][3]["took_ms"] == 6000);  // from script at 1.0 s
  CHECK(now["steps"][0]["took_ms"] == 0);
  const auto& before = j["boots"][1];
  CHECK(before["complete"] == true);
  REQUIRE(before["steps"].size() == 5);
  CHECK(before["steps"][4]["stage"] == "hello");
  CHECK(before["steps"][4]["after_ms"] == 9000);
  CHECK(before["steps"][4]["took_ms"] == 5000);

  auto one = f.CallJson("GET", "/api/v1/nodes/gpu01/boots?count=1");
  CHECK(one["boots"].size() == 1);
  f.Add("gpu02", "52:54:00:00:00:02");
  CHECK(f.CallJson("GET", "/api/v1/nodes/gpu02/boots")["boots"].empty());
  CHECK(f.Call("GET", "/api/v1/nodes/gpu09/boots").status == 404);
  for (const char* bad : {"0", "11", "x", "-1"}) {
    HttpResponse b = f.Call("GET", std::string("/api/v1/nodes/gpu01/boots?count=") + bad);
    CHECK(b.status == 400);
    CHECK(b.body.find("query parameter 'count' must be") != std::string::npos);
  }
}

TEST_CASE("history: nodes by state over the last hours") {
  api_test::Fixture f;
  f.Add("gpu01", "52:54:00:00:00:01");
  f.Add("gpu02", "52:54:00:00:00:02");
  f.CallJson("PATCH", "/api/v1/nodes/gpu02", R"({"state": "maintenance", "reason": "fan"})");
  HttpResponse r =
      f.Call("GET", "/api/v1/history/states?hours=2&points=4", "", true, api_test::kReadToken);
  REQUIRE(r.status == 200);
  auto j = nlohmann::json::parse(r.body);
  CHECK(j["order"][0] == "discovered");
  CHECK(j["order"].size() == AllNodeStates().size());
  CHECK(j["step_ms"] == 30 * 60 * 1000);
  CHECK(j["until"].get<int64_t>() - j["since"].get<int64_t>() >= 2 * 3600 * 1000);
  CHECK(j["complete_since"] == j["since"]);
  // Every event: 2 enrolled, 1 changed (profile none), 1 state.
  CHECK(j["events_read"].get<int64_t>() >= 3);
  CHECK(j["last_event"] == f.store->LastEventId());
  // Both nodes came just now: nothing before, today's counts at the end.
  CHECK(j["states"]["enrolled"] == nlohmann::json({0, 0, 0, 0, 1}));
  CHECK(j["states"]["maintenance"] == nlohmann::json({0, 0, 0, 0, 1}));
  CHECK(j["states"]["ready"] == nlohmann::json({0, 0, 0, 0, 0}));

  auto defaults = f.CallJson("GET", "/api/v1/history/states");
  CHECK(defaults["states"]["enrolled"].size() == 121);
  CHECK(defaults["step_ms"] == 6 * 3600 * 1000 / 120);
  for (const char* bad : {"hours=0", "hours=337", "points=0", "points=721", "points=1e3"})
    CHECK(f.Call("GET", std::string("/api/v1/history/states?") + bad).status == 400);
}

}  // namespace prov
