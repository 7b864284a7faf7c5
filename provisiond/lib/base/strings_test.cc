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
