#include "client.h"

#include <doctest/doctest.h>

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

}  // namespace prov::ctl
