#include "api/routes.h"

#include <doctest/doctest.h>

#include <set>

#include "api/test_fixture.h"

namespace prov {
namespace {

using json = nlohmann::json;
using api_test::kToken;

}  // namespace

TEST_CASE("routes: each method and pattern once; every admin route needs a token") {
  api_test::Fixture f;
  std::set<std::string> seen;
  for (const ApiRoute& route : ApiRoutes()) {
    std::string key = std::string(route.method) + " " + route.pattern;
    INFO(key);
    CHECK(seen.insert(key).second);
    if (route.access != Router::Access::kAdmin) continue;
    // A path the pattern matches; the router refuses it before the handler.
    std::string path;
    for (const char* p = route.pattern; *p; ++p) {
      if (*p != '{') {
        path += *p;
        continue;
      }
      path += 'x';
      while (*p && *p != '}') ++p;
    }
    HttpResponse r = f.Call(route.method, path, "", false);
    CHECK(r.status == 401);
  }
  CHECK(seen.size() == f.router.routes().size());
}

TEST_CASE("routes: open routes leave the API token alone, reads name who asked") {
  Router router(
      std::make_shared<const TokenSet>(*TokenSet::Parse(std::string(kToken) + " alice\n", "t")));
  auto who = [](const HttpRequest& r) { return HttpResponse::Text(200, r.who); };
  router.Add("GET", "/open", Router::Access::kOpen, who);
  router.Add("GET", "/read", Router::Access::kRead, who);
  router.Add("GET", "/admin", Router::Access::kAdmin, who);
  auto get = [&](const std::string& path, bool auth) {
    HttpRequest r;
    r.method = "GET";
    r.path = path;
    if (auth) r.headers["authorization"] = std::string("Bearer ") + kToken;
    return router.Handle(r);
  };
  CHECK(get("/open", true).body == "");
  CHECK(get("/read", true).body == "alice");
  CHECK(get("/admin", true).body == "alice");
  CHECK(get("/open", false).status == 200);
  CHECK(get("/read", false).status == 200);
  CHECK(get("/admin", false).status == 401);
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
  CHECK(f.router.Handle(bad).status == 401);
  // Reads are open.
  CHECK(f.Call("GET", "/api/v1/nodes", "", false).status == 200);
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
