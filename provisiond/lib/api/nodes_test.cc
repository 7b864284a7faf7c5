#include "api/nodes.h"

#include <doctest/doctest.h>

#include "api/test_fixture.h"

namespace prov {
namespace {}  // namespace

TEST_CASE("api: enroll, list with filters, change, retire") {
  api_test::Fixture f;
  f.Add("node0", "52:54:00:00:00:01");
  f.Add("node1", "52:54:00:00:00:02");
  f.Add("gpu7", "52:54:00:00:00:03");
  CHECK(
      f.Call("POST", "/api/v1/nodes", R"({"hostname":"node9","mac":"52:54:00:00:00:01"})").status ==
      409);
  CHECK(f.CallJson("GET", "/api/v1/nodes")["count"] == 3);
  CHECK(f.CallJson("GET", "/api/v1/nodes?hostlist=node[0-3]")["count"] == 2);
  CHECK(f.CallJson("GET", "/api/v1/nodes?state=enrolled")["count"] == 3);
  auto n = f.CallJson("PATCH", "/api/v1/nodes/node0", R"({"ip":"10.99.0.10"})");
  CHECK(n["ip"] == "10.99.0.10");
  // Operators cannot claim a node is ready; that comes from what provisiond sees.
  HttpResponse r = f.Call("PATCH", "/api/v1/nodes/node0", R"({"state":"ready"})");
  CHECK(r.status == 409);
  CHECK(r.body.find("set by provisiond") != std::string::npos);
  f.CallJson("PATCH", "/api/v1/nodes/node0", R"({"state":"maintenance","reason":"new fan"})");
  CHECK(f.CallJson("GET", "/api/v1/nodes/node0")["reason"] == "new fan");
  f.CallJson("DELETE", "/api/v1/nodes/node1");
  CHECK(f.CallJson("GET", "/api/v1/nodes/52:54:00:00:00:02")["state"] == "retired");
  f.CallJson("DELETE", "/api/v1/nodes/gpu7?purge=true");
  CHECK(f.Call("GET", "/api/v1/nodes/gpu7").status == 404);
  auto events = f.CallJson("GET", "/api/v1/events?limit=100")["events"];
  std::vector<std::string> kinds;
  for (const auto& e : events) kinds.push_back(e["kind"]);
  CHECK(kinds == std::vector<std::string>{"enrolled", "enrolled", "enrolled", "changed", "state",
                                          "state", "purged"});
  CHECK(events[4]["who"] == "alice");
}

TEST_CASE("nodes: the handlers answer a request without a router") {
  api_test::Fixture f;
  HttpRequest enroll;
  enroll.method = "POST";
  enroll.body = R"({"hostname":"node0","mac":"52:54:00:00:00:01"})";
  enroll.who = "alice";
  CHECK(EnrollNode(f.context, enroll).status == 201);
  HttpRequest show;
  show.params["node"] = "52:54:00:00:00:01";
  HttpResponse r = ShowNode(f.context, show);
  CHECK(r.status == 200);
  CHECK(nlohmann::json::parse(r.body)["hostname"] == "node0");
  show.params["node"] = "node9";
  CHECK(ShowNode(f.context, show).status == 404);
  HttpRequest list;
  list.query["state"] = "booted";
  CHECK(nlohmann::json::parse(ListNodes(f.context, list).body)["count"] == 0);
}

}  // namespace prov
