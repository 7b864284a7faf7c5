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

TEST_CASE("nodes: the list in pages, with filters, served from the cached serialization") {
  api_test::Fixture f;
  f.context.node_list = std::make_shared<NodeListCache>();
  for (int i = 0; i < 25; ++i) {
    char mac[32];
    snprintf(mac, sizeof mac, "52:54:00:00:01:%02x", i);
    char name[16];
    snprintf(name, sizeof name, "n%02d", 24 - i);  // enrolled out of order
    f.Add(name, mac);
  }
  // Two discovered nodes (no hostname) come last, by MAC.
  REQUIRE(f.context.inventory->store()
              .Transact([&](StoreTx& tx) {
                for (const char* mac : {"52:54:00:00:02:02", "52:54:00:00:02:01"}) {
                  NodeRecord n;
                  n.mac = mac;
                  n.state = NodeState::kDiscovered;
                  auto r = tx.InsertNode(n);
                  if (!r.ok()) return r.status();
                }
                return Status::Ok();
              })
              .ok());
  // Page by page, 10 at a time: every node once, in order; the last page has no next.
  std::vector<std::string> seen;
  std::string after;
  int pages = 0;
  for (;;) {
    auto page =
        f.CallJson("GET", "/api/v1/nodes?limit=10" + (after.empty() ? "" : "&after=" + after));
    ++pages;
    CHECK(page["total"] == 27);
    for (const auto& n : page["nodes"])
      seen.push_back(n["hostname"].is_string() && !n["hostname"].get<std::string>().empty()
                         ? n["hostname"].get<std::string>()
                         : n["mac"].get<std::string>());
    if (!page.contains("next")) break;
    after = page["next"];
    REQUIRE(pages < 10);
  }
  CHECK(pages == 3);
  REQUIRE(seen.size() == 27);
  CHECK(seen[0] == "n00");
  CHECK(seen[9] == "n09");
  CHECK(seen[24] == "n24");
  CHECK(seen[25] == "52:54:00:00:02:01");
  CHECK(seen[26] == "52:54:00:00:02:02");
  // A filter applies before the page: the total counts what matches.
  f.CallJson("PATCH", "/api/v1/nodes/n03", R"({"state":"maintenance","reason":"fan"})");
  f.CallJson("PATCH", "/api/v1/nodes/n17", R"({"state":"maintenance","reason":"fan"})");
  auto m = f.CallJson("GET", "/api/v1/nodes?state=maintenance&limit=1");
  CHECK(m["total"] == 2);
  CHECK(m["count"] == 1);
  CHECK(m["nodes"][0]["hostname"] == "n03");
  CHECK(m["next"] == "n03");
  m = f.CallJson("GET", "/api/v1/nodes?state=maintenance&limit=1&after=n03");
  CHECK(m["nodes"][0]["hostname"] == "n17");
  CHECK(!m.contains("next"));
  // A node changed since the last list is shown as it is now, not as cached.
  CHECK(f.CallJson("GET", "/api/v1/nodes?hostlist=n17")["nodes"][0]["ip"] == "");
  f.CallJson("PATCH", "/api/v1/nodes/n17", R"({"ip":"10.99.0.17"})");
  CHECK(f.CallJson("GET", "/api/v1/nodes?hostlist=n17")["nodes"][0]["ip"] == "10.99.0.17");
  // Without limit: every node (what older clients ask for).
  CHECK(f.CallJson("GET", "/api/v1/nodes")["count"] == 27);
  for (const char* bad : {"0", "-1", "x", "100001", "10abc"})
    CHECK(f.Call("GET", std::string("/api/v1/nodes?limit=") + bad).status == 400);
}

}  // namespace prov
