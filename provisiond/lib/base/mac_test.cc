#include "base/mac.h"

#include <doctest/doctest.h>

namespace prov {

TEST_CASE("a MAC in any accepted spelling parses to one normalized form") {
  const char* spellings[] = {"52:54:00:ab:cd:01", "52:54:00:AB:cd:01", "52-54-00-AB-CD-01",
                             "5254.00ab.cd01",    "525400ABCD01",      "52:5400:abcd:01"};
  for (const char* text : spellings) {
    INFO(text);
    auto mac = Mac::Parse(text);
    REQUIRE(mac.ok());
    CHECK(mac->str() == "52:54:00:ab:cd:01");
    CHECK(*NormalizeMac(text) == "52:54:00:ab:cd:01");
    // The normalized form is a spelling too, and parses to itself.
    CHECK(*Mac::Parse(mac->str()) == *mac);
  }
}

TEST_CASE("a MAC that is not one is refused, saying what is wrong") {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"", "MAC address '' must have 12 hex digits, like 52:54:00:12:34:56"},
      {"52:54:00:ab:cd", "MAC address '52:54:00:ab:cd' must have 12 hex digits"},
      {"52:54:00:ab:cd:01:02", "must have 12 hex digits"},
      {"52:54:00:ab:cd:zz", "has a character that is not hex: 'z'"},
      {"52 54 00 ab cd 01", "has a character that is not hex: ' '"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    auto mac = Mac::Parse(c.text);
    REQUIRE_FALSE(mac.ok());
    CHECK(mac.status().code() == Code::kInvalid);
    CHECK(mac.status().message().find(c.message) != std::string::npos);
    CHECK(NormalizeMac(c.text).status().message() == mac.status().message());
  }
}

TEST_CASE("MACs compare as their addresses") {
  auto a = *Mac::Parse("52:54:00:00:00:0a");
  auto b = *Mac::Parse("52-54-00-00-00-0B");
  CHECK(a != b);
  CHECK(a < b);
  CHECK(a == *Mac::Parse("525400-00000A"));
}

}  // namespace prov
