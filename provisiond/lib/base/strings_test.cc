#include "base/strings.h"

#include <doctest/doctest.h>

namespace prov {

TEST_CASE("strings: trim takes the given characters off both ends only") {
  CHECK(Trim("  a b\t\n") == "a b");
  CHECK(Trim(" \n\t ") == "");
  CHECK(Trim("xxaxbxx", "x") == "axb");
  CHECK(Trim(" a\n", " \t") == "a\n");
}

TEST_CASE("strings: join, lower, and the two shell quotings") {
  CHECK(Join({"a", "", "c"}, ", ") == "a, , c");
  CHECK(Join({}, ",").empty());
  CHECK(Lower("Intel ARC A770") == "intel arc a770");
  CHECK(ShellQuote("it's") == R"('it'\''s')");
  CHECK(ShellQuote("plain") == "'plain'");
  // As Python's shlex.quote: bare when safe, '"'"' for a quote.
  CHECK(ShlexQuote("node0.lab:/x@y%z+w=v,u-t_s") == "node0.lab:/x@y%z+w=v,u-t_s");
  CHECK(ShlexQuote("") == "''");
  CHECK(ShlexQuote("a b") == "'a b'");
  CHECK(ShlexQuote("it's") == R"('it'"'"'s')");
}

}  // namespace prov

namespace prov {

TEST_CASE("strings: lists in words, URL encoding, secrets redacted") {
  CHECK(JoinWords({}, " or ").empty());
  CHECK(JoinWords({"wol"}, " or ") == "wol");
  CHECK(JoinWords({"wol", "ssh"}, " and ") == "wol and ssh");
  CHECK(JoinWords({"wol", "ssh", "ipmi"}, " or ") == "wol, ssh or ipmi");
  CHECK(UrlEncode("Power On&x=1/ü~") == "Power%20On%26x%3D1%2F%C3%BC~");
  CHECK(RedactSecrets("password=pl&ug pw, again pl&ug pw", {"pl&ug pw"}) ==
        "password=********, again ********");
  CHECK(RedactSecrets("line two only: second-line", {"first\nsecond-line"}) ==
        "line two only: ********");
}

}  // namespace prov
