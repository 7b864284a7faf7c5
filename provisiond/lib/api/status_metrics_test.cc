#include "api/status_metrics.h"

#include <doctest/doctest.h>

#include "api/test_fixture.h"

namespace prov {
namespace {}  // namespace

TEST_CASE("api: metrics: nodes by state, requests and latency by route") {
  api_test::Fixture f;
  f.Add("node0", "52:54:00:00:00:01");
  f.Add("node1", "52:54:00:00:00:02");
  f.CallJson("GET", "/api/v1/events");
  HttpResponse m = f.Call("GET", "/metrics");
  CHECK(m.status == 200);
  CHECK(m.content_type == "text/plain; version=0.0.4");
  CHECK(m.body.find("provisiond_nodes{state=\"enrolled\"} 2") != std::string::npos);
  CHECK(m.body.find(
            "provisiond_http_requests_total{route=\"POST /api/v1/nodes\",status=\"201\"} 2") !=
        std::string::npos);
  CHECK(
      m.body.find("provisiond_http_request_duration_seconds_count{route=\"GET /api/v1/events\"}") !=
      std::string::npos);
}

TEST_CASE("status: counts by state and the profiles; preflight needs an interface") {
  api_test::Fixture f;
  f.Add("node0", "52:54:00:00:00:01");
  auto status = f.CallJson("GET", "/api/v1/status");
  CHECK(status["service"] == "provisiond");
  CHECK(status["version"] == PROVISION_VERSION);
  CHECK(status["nodes"] == 1);
  CHECK(status["states"]["enrolled"] == 1);
  CHECK(status["applied_profile"].is_null());
  HttpResponse r = f.Call("GET", "/api/v1/preflight");
  CHECK(r.status == 409);
  CHECK(r.body.find("no 'interface' is configured") != std::string::npos);
}

}  // namespace prov
