#include "api/routes.h"

#include <doctest/doctest.h>

#include <set>

#include "api/test_fixture.h"

namespace prov {
namespace {

using json = nlohmann::json;
using api_test::kReadToken;
using api_test::kToken;

// A path that `pattern` matches: every {name} segment becomes "x".
std::string PathFor(const char* pattern) {
  std::string path;
  for (const char* p = pattern; *p; ++p) {
    if (*p != '{') {
      path += *p;
      continue;
    }
    path += 'x';
    while (*p && *p != '}') ++p;
  }
  return path;
}

}  // namespace

TEST_CASE(
    "routes: each method and pattern once; only node-facing routes and the page's files are open") {
  api_test::Fixture f;
  std::set<std::string> seen;
  for (const ApiRoute& route : ApiRoutes()) {
    std::string key = std::string(route.method) + " " + route.pattern;
    INFO(key);
    CHECK(seen.insert(key).second);
    std::string pattern = route.pattern;
    bool node_facing = pattern.rfind("/boot/", 0) == 0 || pattern.ends_with("/hello") ||
                       pattern.ends_with("/report");
    bool page_file = pattern == "/" || pattern.rfind("/web/", 0) == 0;
    CHECK((route.access == Router::Access::kOpen) == (node_facing || page_file));
    if (route.access == Router::Access::kOpen) continue;
    // The router refuses it before the handler: no token, then a read token
    // on a route that changes state.
    HttpResponse r = f.Call(route.method, PathFor(route.pattern), "", false);
    CHECK(r.status == 401);
    if (route.access == Router::Access::kAdmin) {
      r = f.Call(route.method, PathFor(route.pattern), "", true, kReadToken);
      CHECK(r.status == 403);
      CHECK(r.body.find("needs 'admin'") != std::string::npos);
    }
  }
  CHECK(seen.size() == f.router.routes().size());
}

TEST_CASE("routes: open routes leave the API token alone, others need its role") {
  Router router(std::make_shared<const TokenSet>(
      *TokenSet::Parse(std::string(kToken) + " alice\n" + kReadToken + " rita read\n", "t")));
  auto who = [](const HttpRequest& r) {
    return HttpResponse::Text(200, r.who + "/" + ToString(r.role));
  };
  router.Add("GET", "/open", Router::Access::kOpen, who);
  router.Add("GET", "/read", Router::Access::kRead, who);
  router.Add("GET", "/admin", Router::Access::kAdmin, who);
  auto get = [&](const std::string& path, const char* token) {
    HttpRequest r;
    r.method = "GET";
    r.path = path;
    r.remote = "127.0.0.1";
    if (token) r.headers["authorization"] = std::string("Bearer ") + token;
    return router.Handle(r);
  };
  CHECK(get("/open", kToken).body == "/");
  CHECK(get("/read", kToken).body == "alice/admin");
  CHECK(get("/admin", kToken).body == "alice/admin");
  CHECK(get("/read", kReadToken).body == "rita/read");
  CHECK(get("/admin", kReadToken).status == 403);
  CHECK(get("/open", nullptr).status == 200);
  CHECK(get("/read", nullptr).status == 401);
  CHECK(get("/admin", nullptr).status == 401);
  CHECK(get("/read", "0123456789abcdef-not-a-token").status == 401);
}

TEST_CASE("routes: over plain HTTP the API answers loopback only; TLS from anywhere") {
  Router router(
      std::make_shared<const TokenSet>(*TokenSet::Parse(std::string(kToken) + " alice\n", "t")));
  router.Add("GET", "/open", Router::Access::kOpen,
             [](const HttpRequest&) { return HttpResponse::Text(200, "open"); });
  router.Add("GET", "/read", Router::Access::kRead,
             [](const HttpRequest&) { return HttpResponse::Text(200, "read"); });
  auto get = [&](const std::string& path, const std::string& remote, bool tls) {
    HttpRequest r;
    r.method = "GET";
    r.path = path;
    r.remote = remote;
    r.tls = tls;
    r.headers["authorization"] = std::string("Bearer ") + kToken;
    return router.Handle(r);
  };
  for (const char* local : {"127.0.0.1", "127.10.0.3", "::1", "::ffff:127.0.0.1"})
    CHECK(get("/read", local, false).status == 200);
  for (const char* remote :
       {"10.0.0.5", "192.0.2.1", "fe80::1", "::ffff:10.0.0.5", "", "1127.0.0.1"}) {
    INFO(remote);
    HttpResponse r = get("/read", remote, false);
    CHECK(r.status == 403);
    CHECK(r.body.find("only on loopback") != std::string::npos);
    CHECK(get("/read", remote, true).status == 200);
    CHECK(get("/open", remote, false).status == 200);  // boot routes stay plain
  }
}

TEST_CASE("api: writes need a valid bearer token") {
  api_test::Fixture f;
  HttpResponse r =
      f.Call("POST", "/api/v1/nodes", R"({"hostname":"n0","mac":"52:54:00:00:00:01"})", false);
  CHECK(r.status == 401);
  CHECK(json::parse(r.body)["error"].get<std::string>().find("needs a bearer token") !=
        std::string::npos);
  HttpRequest bad;
  bad.method = "PATCH";
  bad.path = "/api/v1/nodes/n0";
  bad.headers["authorization"] = "Bearer wrongwrongwrongwrong";
  bad.remote = "127.0.0.1";
  CHECK(f.router.Handle(bad).status == 401);
  CHECK(f.Call("POST", "/api/v1/nodes", R"({"hostname":"n0","mac":"52:54:00:00:00:01"})", true,
               kReadToken)
            .status == 403);
  // Reads need a token too, of either role.
  CHECK(f.Call("GET", "/api/v1/nodes", "", false).status == 401);
  CHECK(f.Call("GET", "/api/v1/nodes", "", true, kReadToken).status == 200);
  CHECK(f.store->ListNodes().empty());
}

TEST_CASE("api: bad requests get 4xx with a message, never a crash") {
  api_test::Fixture f;
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
      {"POST", "/api/v1/nodes", R"({"hostname":"n0","mac":"52:54:00:00:00:01","ip":1e400})", 400,
       "cannot be read as JSON"},
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
      {"POST", "/api/v1/nodes",
       R"({"hostname":"n0","mac":"52:54:00:00:00:01","uefi_loader":"bios"})", 400,
       "uefi_loader 'bios' must be grub"},
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

TEST_CASE("api: a node's UEFI loader is chosen at enrollment and changed, with an event") {
  api_test::Fixture f;
  HttpResponse r = f.Call("POST", "/api/v1/nodes",
                          R"({"hostname":"n0","mac":"52:54:00:00:00:01","uefi_loader":"ipxe"})");
  REQUIRE(r.status == 201);
  CHECK(json::parse(r.body)["uefi_loader"] == "ipxe");
  r = f.Call("PATCH", "/api/v1/nodes/n0", R"({"uefi_loader":"grub"})");
  REQUIRE(r.status == 200);
  CHECK(json::parse(r.body)["uefi_loader"] == "grub");
  r = f.Call("PATCH", "/api/v1/nodes/n0", R"({"uefi_loader":"x\ny"})");
  CHECK(r.status == 400);
  CHECK(f.store->FindNode("n0")->uefi_loader == "grub");  // a refused change changes nothing
  r = f.Call("PATCH", "/api/v1/nodes/n0", R"({"uefi_loader":""})");  // back to the profile's
  REQUIRE(r.status == 200);
  CHECK(f.store->FindNode("n0")->uefi_loader.empty());
  auto events = f.store->ListEvents(0, f.store->FindNode("n0")->id, 10);
  CHECK(std::any_of(events.begin(), events.end(), [](const EventRecord& e) {
    return e.detail == "UEFI loader grub -> (profile's)";
  }));
}

TEST_CASE("api: a wrong method is 405 with the allowed methods in Allow") {
  api_test::Fixture f;
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
  r = f.Call("PUT", "/api/v1/nodes/n0");
  REQUIRE(r.headers.size() == 1);
  CHECK(r.headers[0].second == "GET, HEAD, PATCH, DELETE");
  r = f.Call("POST", "/api/v1/images/lab");
  REQUIRE(r.headers.size() == 1);
  CHECK(r.headers[0].second == "GET, HEAD, DELETE");
}

TEST_CASE("api: JSON nested too deep is refused before it is parsed") {
  CHECK(CheckJsonDepth(R"({"a":[[{"b":"[[[[["}]]]})", 4).ok());
  CHECK_FALSE(CheckJsonDepth("[[[[[]]]]]", 4).ok());
  CHECK(CheckJsonDepth(R"(["\"[[[[[[["])", 2).ok());  // brackets in strings do not count
  api_test::Fixture f;
  std::string deep = std::string(200000, '[') + std::string(200000, ']');
  HttpResponse r = f.Call("POST", "/api/v1/nodes", "{\"hostname\":" + deep + "}");
  CHECK(r.status == 400);
  CHECK(r.body.find("nested deeper than 64 levels") != std::string::npos);
}

TEST_CASE("tokens file: names, roles, comments and bad lines") {
  auto t = TokenSet::Parse(
      "# comment\n0123456789abcdef0123 bob # trailing\n\nfedcba9876543210\n"
      "0123456789abcdefread carol read\n",
      "tokens");
  REQUIRE(t.ok());
  CHECK(t->size() == 3);
  CHECK(t->Lookup("0123456789abcdef0123").name == "bob");
  CHECK(t->Lookup("0123456789abcdef0123").role == TokenRole::kAdmin);
  CHECK(t->Lookup("fedcba9876543210").name == "token-4");
  CHECK(t->Lookup("0123456789abcdefread").role == TokenRole::kRead);
  CHECK(t->Lookup("fedcba987654321").name.empty());
  CHECK(TokenSet::Parse("short\n", "tokens").status().message() ==
        "tokens:1: token is shorter than 16 characters");
  CHECK(TokenSet::Parse("\n0123456789abcdef a root\n", "tokens").status().message() ==
        "tokens:2: unknown role 'root' (expected read or admin)");
  CHECK_FALSE(TokenSet::Parse("0123456789abcdef a read b\n", "tokens").ok());
}

}  // namespace prov
