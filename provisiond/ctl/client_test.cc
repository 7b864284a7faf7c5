#include "client.h"

#include <doctest/doctest.h>

#include "testing/fake_daemon.h"

namespace prov::ctl {

TEST_CASE("URL encoding keeps only unreserved characters") {
  CHECK(UrlEncode("node[0-3,7]") == "node%5B0-3%2C7%5D");
  CHECK(UrlEncode("52:54:00:00:00:10") == "52%3A54%3A00%3A00%3A00%3A10");
  CHECK(UrlEncode("a b&c=d/é") == "a%20b%26c%3Dd%2F%C3%A9");
  CHECK(UrlEncode("A-z_0.~") == "A-z_0.~");
}

TEST_CASE("query strings leave out empty values") {
  CHECK(QueryString({{"state", ""}, {"hostlist", "n[1-2]"}, {"limit", "5"}}) ==
        "?hostlist=n%5B1-2%5D&limit=5");
  CHECK(QueryString({{"state", ""}}) == "");
}

TEST_CASE("the token is the first word of the first line that is not a comment") {
  struct Case {
    const char* text;
    const char* token;
  };
  const Case cases[] = {
      {"abc0123456789abcdef admin\n", "abc0123456789abcdef"},
      {"# provisiond API tokens\n\n   tok1 alice\ntok2 bob\n", "tok1"},
      {"tok3# trailing comment\n", "tok3"},
      {"\ttok4", "tok4"},
  };
  for (const auto& c : cases) {
    auto t = ParseTokenFile(c.text, "tokens");
    REQUIRE(t.ok());
    CHECK(*t == c.token);
  }
  auto none = ParseTokenFile("# only a comment\n\n", "/etc/provisiond/tokens");
  REQUIRE(!none.ok());
  CHECK(none.status().message().find("/etc/provisiond/tokens: no token") == 0);
}

TEST_CASE("an unreachable provisiond is named with a hint") {
  CurlGlobal curl;
  ClientOptions options;
  options.url = "http://127.0.0.1:1/";  // nothing listens on port 1
  Client client(options);
  CHECK(client.url() == "http://127.0.0.1:1");
  auto r = client.Get("/api/v1/status");
  REQUIRE(!r.ok());
  CHECK(r.status().code() == Code::kUnavailable);
  CHECK(client.last_http_status() == 0);  // no answer, unlike a 503 from provisiond
  CHECK(r.status().message().find("cannot reach provisiond at http://127.0.0.1:1: ") == 0);
  CHECK(r.status().message().find("(is it running? set PROVISIOND_URL)") != std::string::npos);
}

TEST_CASE("several control nodes: the one that answers is used, nothing is sent twice") {
  CurlGlobal curl;
  FakeDaemon d;
  int posts = 0;
  d.Add("GET", "/api/v1/status", [](const HttpRequest&) {
    return HttpResponse::Json(200, {{"service", "provisiond"}});
  });
  d.Add("POST", "/api/v1/nodes", [&](const HttpRequest&) {
    ++posts;
    return HttpResponse::Error(500, "the store failed");
  });
  // A standby listens on nothing (port 1 here): refused, nothing sent, the
  // next control node of the list answers and is kept.
  ClientOptions options;
  options.url = "http://127.0.0.1:1/, " + d.url() + "/";
  Client client(options);
  CHECK(client.url() == "http://127.0.0.1:1");
  auto status = client.Get("/api/v1/status");
  REQUIRE_MESSAGE(status.ok(), status.status().message());
  CHECK(client.url() == d.url());
  // A request that reached a control node is answered by it, even an error.
  nlohmann::json body = {{"mac", "52:54:00:00:00:01"}};
  auto post = client.Post("/api/v1/nodes", &body);
  CHECK(post.status().message() == "the store failed");
  CHECK(posts == 1);
  // All of them down: the last one's error.
  ClientOptions down;
  down.url = "http://127.0.0.1:1,http://127.0.0.1:2";
  Client none(down);
  auto r = none.Get("/api/v1/status");
  CHECK(r.status().code() == Code::kUnavailable);
  CHECK(r.status().message().find("cannot reach provisiond at http://127.0.0.1:2") == 0);
}

}  // namespace prov::ctl
