#include "api/api.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "base/file_util.h"

namespace prov {
namespace {

using json = nlohmann::json;

const char* kToken = "0123456789abcdef0123456789abcdef";

// A provisiond without sockets: store in memory, the shipped profiles.
struct Fixture {
  std::unique_ptr<Store> store = std::move(*Store::Open(":memory:"));
  Inventory inventory{*store, PROVISION_SOURCE_DIR "/profiles", PROVISION_SOURCE_DIR "/playbooks"};
  Router router{std::make_shared<const TokenSet>(
      *TokenSet::Parse(std::string(kToken) + " alice\n", "tokens"))};
  Fixture() { AddApiRoutes(router, inventory); }

  HttpResponse Call(const std::string& method, const std::string& target,
                    const std::string& body = "", bool auth = true) {
    HttpRequest r;
    r.method = method;
    SplitTarget(target, r.path, r.query);
    r.body = body;
    if (auth) r.headers["authorization"] = std::string("Bearer ") + kToken;
    return router.Handle(r);
  }
  json CallJson(const std::string& method, const std::string& target, const std::string& body = "",
                int expect = 200) {
    HttpResponse r = Call(method, target, body);
    INFO(method << " " << target << " -> " << r.body);
    CHECK(r.status == expect);
    return json::parse(r.body);
  }
  void Add(const std::string& host, const std::string& mac) {
    CallJson("POST", "/api/v1/nodes", json{{"hostname", host}, {"mac", mac}}.dump(), 201);
  }
};

}  // namespace

TEST_CASE("api: writes need a valid bearer token") {
  Fixture f;
  HttpResponse r =
      f.Call("POST", "/api/v1/nodes", R"({"hostname":"n0","mac":"52:54:00:00:00:01"})", false);
  CHECK(r.status == 401);
  CHECK(json::parse(r.body)["error"].get<std::string>().find("needs a bearer token") !=
        std::string::npos);
  HttpRequest bad;
  bad.method = "PATCH";
  bad.path = "/api/v1/nodes/n0";
  bad.headers["authorization"] = "Bearer wrongwrongwrongwrong";
  CHECK(f.router.Handle(bad).status == 401);
  // Reads are open.
  CHECK(f.Call("GET", "/api/v1/nodes", "", false).status == 200);
  CHECK(f.store->ListNodes().empty());
}

TEST_CASE("api: bad requests get 4xx with a message, never a crash") {
  Fixture f;
  struct Case {
    const char* method;
    const char* target;
    const char* body;
    int status;
    const char* error;
  };
  const Case cases[] = {
      {"POST", "/api/v1/nodes", "{", 400, "malformed JSON"},
      {"POST", "/api/v1/nodes", "[1]", 400, "must be a JSON object"},
      {"POST", "/api/v1/nodes", R"({"hostname":"n0","mac":"52:54:00:00:00:01","x":1})", 400,
       "unknown field 'x'"},
      {"POST", "/api/v1/nodes", R"({"hostname":"n0"})", 400, "field 'mac' is required"},
      {"POST", "/api/v1/nodes", R"({"hostname":5,"mac":"52:54:00:00:00:01"})", 400,
       "field 'hostname' must be a string"},
      {"POST", "/api/v1/nodes", R"({"hostname":"n 0","mac":"52:54:00:00:00:01"})", 400,
       "hostname 'n 0' has the character ' '"},
      {"POST", "/api/v1/nodes", R"({"hostname":"n0","mac":"zz"})", 400, "MAC address 'zz'"},
      {"POST", "/api/v1/nodes", R"({"hostname":"n0","mac":"52:54:00:00:00:01","profile":"v9"})",
       404, "no profile 'v9'"},
      {"GET", "/api/v1/nodes/nope", "", 404, "no node named 'nope'"},
      {"GET", "/api/v1/nodes?state=up", "", 400, "unknown state 'up'"},
      {"GET", "/api/v1/nodes?hostlist=n[3-1]", "", 400, "reversed"},
      {"GET", "/api/v1/events?after=x", "", 400, "'after' must be a number"},
      {"GET", "/api/v1/events?limit=0", "", 400, "'limit' must be between"},
      {"PUT", "/api/v1/nodes", "", 405, "method PUT is not allowed"},
      {"GET", "/api/v2/nodes", "", 404, "no such path"},
      {"GET", "/api/v1/profiles/..%2Fetc", "", 400, "is not a profile version"},
      {"GET", "/api/v1/profiles/nope", "", 404, "no profile 'nope'"},
      {"POST", "/api/v1/profiles/v0.1/apply", R"({"force":true})", 400, "unknown field 'force'"},
      {"DELETE", "/api/v1/nodes/n0?purge=maybe", "", 400, "'purge' must be true or false"},
  };
  for (const auto& c : cases) {
    INFO(c.method << " " << c.target << " " << c.body);
    HttpResponse r = f.Call(c.method, c.target, c.body);
    CHECK(r.status == c.status);
    auto j = json::parse(r.body, nullptr, false);
    REQUIRE(j.is_object());
    CHECK(j["error"].get<std::string>().find(c.error) != std::string::npos);
  }
  CHECK(f.store->ListNodes().empty());
}

TEST_CASE("api: a wrong method is 405 with the allowed methods in Allow") {
  Fixture f;
  HttpResponse r = f.Call("PUT", "/api/v1/nodes");
  CHECK(r.status == 405);
  std::string allow;
  for (const auto& [k, v] : r.headers)
    if (k == "Allow") allow = v;
  CHECK(allow == "GET, HEAD, POST");
  CHECK(r.body.find("allowed: GET, HEAD, POST") != std::string::npos);
  r = f.Call("POST", "/api/v1/status");
  CHECK(r.status == 405);
  CHECK(r.headers.size() == 1);
  CHECK(r.headers[0].second == "GET, HEAD");
}

TEST_CASE("api: JSON nested too deep is refused before it is parsed") {
  CHECK(CheckJsonDepth(R"({"a":[[{"b":"[[[[["}]]]})", 4).ok());
  CHECK_FALSE(CheckJsonDepth("[[[[[]]]]]", 4).ok());
  CHECK(CheckJsonDepth(R"(["\"[[[[[[["])", 2).ok());  // brackets in strings do not count
  Fixture f;
  std::string deep = std::string(200000, '[') + std::string(200000, ']');
  HttpResponse r = f.Call("POST", "/api/v1/nodes", "{\"hostname\":" + deep + "}");
  CHECK(r.status == 400);
  CHECK(r.body.find("nested deeper than 64 levels") != std::string::npos);
}

TEST_CASE("api: a long-poll returns at once when the store is told to stop") {
  Fixture f;
  auto start = std::chrono::steady_clock::now();
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    f.store->WakeWaiters();
  });
  json j = f.CallJson("GET", "/api/v1/events?wait=20");
  stopper.join();
  CHECK(j["events"].empty());
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  // Later waits do not block at all.
  start = std::chrono::steady_clock::now();
  f.CallJson("GET", "/api/v1/events?wait=20");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
}

TEST_CASE("api: enroll, list with filters, change, retire") {
  Fixture f;
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

TEST_CASE("api: apply v0.1, v0.2, v0.1 again: plans, idempotence, rollback") {
  Fixture f;
  for (int i = 0; i < 4; ++i)
    f.Add("node" + std::to_string(i), "52:54:00:00:00:0" + std::to_string(i));

  auto plan = f.CallJson("GET", "/api/v1/profiles/v0.1/plan");
  CHECK(plan["changes"] == true);
  CHECK(plan["nodes"].size() == 2);  // v0.1 covers node[0-1]
  // A plan changes nothing.
  CHECK(f.store->ListNodes()[0].profile_version.empty());

  auto applied = f.CallJson("POST", "/api/v1/profiles/v0.1/apply");
  CHECK(applied["changes"] == true);
  CHECK(f.CallJson("GET", "/api/v1/nodes?profile=v0.1")["count"] == 2);
  CHECK(f.CallJson("GET", "/api/v1/nodes/node0")["image"] == "ubuntu-arc");

  auto again = f.CallJson("POST", "/api/v1/profiles/v0.1/apply");
  CHECK(again["changes"] == false);
  for (const auto& n : again["nodes"]) CHECK(n["action"] == "unchanged");
  CHECK(f.store->AppliedProfiles().size() == 1);

  auto v2 = f.CallJson("POST", "/api/v1/profiles/v0.2/apply");
  CHECK(v2["changes"] == true);
  CHECK(v2["nodes"].size() == 4);
  CHECK(v2["nodes"][0]["reboot"] == true);
  CHECK(f.CallJson("GET", "/api/v1/nodes?profile=v0.2")["count"] == 4);
  CHECK(f.CallJson("GET", "/api/v1/nodes/node3")["image"] == "debian-amd-npu");

  // Rollback: node0-1 go back to v0.1; node2-3 are not covered and are released.
  auto back = f.CallJson("POST", "/api/v1/profiles/v0.1/apply");
  std::map<std::string, std::string> action;
  for (const auto& n : back["nodes"]) action[n["node"]] = n["action"];
  CHECK(action["node0"] == "assign");
  CHECK(action["node2"] == "release");
  CHECK(f.CallJson("GET", "/api/v1/nodes/node2")["profile"] == "");
  CHECK(f.CallJson("GET", "/api/v1/status")["applied_profile"]["version"] == "v0.1");
  CHECK(f.store->AppliedProfiles().size() == 3);
  auto profiles = f.CallJson("GET", "/api/v1/profiles");
  CHECK(profiles["history"].size() == 3);
}

TEST_CASE("api: a newly enrolled node covered by the applied profile gets it") {
  Fixture f;
  f.CallJson("POST", "/api/v1/profiles/v0.1/apply");
  f.Add("node1", "52:54:00:00:00:01");
  f.Add("other", "52:54:00:00:00:02");
  CHECK(f.CallJson("GET", "/api/v1/nodes/node1")["profile"] == "v0.1");
  CHECK(f.CallJson("GET", "/api/v1/nodes/other")["profile"] == "");
}

TEST_CASE("api: the events cursor and metrics") {
  Fixture f;
  f.Add("node0", "52:54:00:00:00:01");
  auto first = f.CallJson("GET", "/api/v1/events");
  int64_t next = first["next"];
  CHECK(f.CallJson("GET", "/api/v1/events?after=" + std::to_string(next))["events"].empty());
  f.Add("node1", "52:54:00:00:00:02");
  auto later = f.CallJson("GET", "/api/v1/events?after=" + std::to_string(next));
  REQUIRE(later["events"].size() == 1);
  CHECK(later["events"][0]["node"] == "node1");

  // last=N gives the newest events; a node filter skips other nodes' events
  // and moves the cursor past them.
  auto last = f.CallJson("GET", "/api/v1/events?last=1");
  REQUIRE(last["events"].size() == 1);
  CHECK(last["events"][0]["node"] == "node1");
  auto only0 = f.CallJson("GET", "/api/v1/events?node=node0&after=" + std::to_string(next));
  CHECK(only0["events"].empty());
  auto waited = f.CallJson("GET", "/api/v1/events?node=node0&wait=1&after=" + std::to_string(next));
  CHECK(waited["events"].empty());
  CHECK(waited["next"] == later["next"]);

  HttpResponse m = f.Call("GET", "/metrics");
  CHECK(m.status == 200);
  CHECK(m.body.find("provisiond_nodes{state=\"enrolled\"} 2") != std::string::npos);
  CHECK(m.body.find(
            "provisiond_http_requests_total{route=\"POST /api/v1/nodes\",status=\"201\"} 2") !=
        std::string::npos);
  CHECK(
      m.body.find("provisiond_http_request_duration_seconds_count{route=\"GET /api/v1/events\"}") !=
      std::string::npos);
}

TEST_CASE("tokens file: names, comments and bad lines") {
  auto t = TokenSet::Parse("# comment\n0123456789abcdef0123 bob # trailing\n\nfedcba9876543210\n",
                           "tokens");
  REQUIRE(t.ok());
  CHECK(t->size() == 2);
  CHECK(t->Lookup("0123456789abcdef0123") == "bob");
  CHECK(t->Lookup("fedcba9876543210") == "token-4");
  CHECK(t->Lookup("fedcba987654321").empty());
  CHECK(TokenSet::Parse("short\n", "tokens").status().message() ==
        "tokens:1: token is shorter than 16 characters");
  CHECK_FALSE(TokenSet::Parse("0123456789abcdef a b\n", "tokens").ok());
}

}  // namespace prov

namespace prov {

TEST_CASE("web routes: index at /, plain files only") {
  namespace fs = std::filesystem;
  auto dir = fs::temp_directory_path() / ("provision-web-" + std::to_string(getpid()));
  fs::create_directories(dir);
  WriteFileAtomic((dir / "index.html").string(), "<html>inventory</html>");
  WriteFileAtomic((dir / "app.js").string(), "let x = 1;");
  Router router(nullptr);
  AddWebRoutes(router, dir.string());
  auto get = [&](const std::string& path) {
    HttpRequest r;
    r.method = "GET";
    r.path = path;
    return router.Handle(r);
  };
  HttpResponse index = get("/");
  CHECK(index.status == 200);
  CHECK(index.file_path == (dir / "index.html").string());
  CHECK(index.content_type == "text/html; charset=utf-8");
  CHECK(get("/web/app.js").content_type == "text/javascript; charset=utf-8");
  CHECK(get("/web/nope.js").status == 404);
  CHECK(get("/web/..").status == 404);
  CHECK(get("/web/.hidden").status == 404);
  CHECK(get("/web/../../etc/passwd").status == 404);
  fs::remove_all(dir);
}

}  // namespace prov
