#include "base/hostlist.h"

#include <doctest/doctest.h>

namespace prov {

TEST_CASE("hostlist expands the syntax of pdsh, clush and Slurm") {
  struct Case {
    const char* text;
    std::vector<std::string> names;
  };
  const Case cases[] = {
      {"node0", {"node0"}},
      {"node[0-3,7]", {"node0", "node1", "node2", "node3", "node7"}},
      {"gpu[01-03]", {"gpu01", "gpu02", "gpu03"}},
      {"gpu[08-10]", {"gpu08", "gpu09", "gpu10"}},
      {"a,b,a", {"a", "b"}},
      {"node[0-1],gpu[1-2]", {"node0", "node1", "gpu1", "gpu2"}},
      {"rack[1-2]-n[1-2]", {"rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"}},
      {"n[5]", {"n5"}},
      {"control_0_1", {"control_0_1"}},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    auto r = ExpandHostlist(c.text);
    REQUIRE(r.ok());
    CHECK(*r == c.names);
  }
}

TEST_CASE("hostlist errors say what and where") {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"", "hostlist is empty"},
      {"node[3-1]", "range '3-1' is reversed at column 6"},
      {"node[0-3", "'[' without ']'"},
      {"node0-3]", "']' without '['"},
      {"node[a-b]", "range 'a-b' is not N or N-M"},
      {"node[[1]]", "nested '['"},
      {"a,,b", "empty name at column 3"},
      {"node[1,]", "empty range"},
      {"no de", "unexpected character ' ' at column 3"},
      {"n[0-999999999]", "too large"},
      {"a[0-999]b[0-999]", "too many names"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    auto r = ExpandHostlist(c.text);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find(c.message) != std::string::npos);
  }
}

TEST_CASE("hostlist takes a smaller name limit (the fuzz target's)") {
  auto five = ExpandHostlist("n[0-4]", 5);
  REQUIRE(five.ok());
  CHECK(five->size() == 5u);
  CHECK_FALSE(ExpandHostlist("n[0-5]", 5).ok());         // one range
  CHECK_FALSE(ExpandHostlist("a[0-2]b[0-1]", 5).ok());   // a product
  CHECK_FALSE(ExpandHostlist("a[0-2],b[0-2]", 5).ok());  // several items
  CHECK(ExpandHostlist("n[0-99999]").ok());              // the daemon's limit
  CHECK_FALSE(ExpandHostlist("n[0-100000]").ok());
}

TEST_CASE("hostlist compresses back to ranges") {
  CHECK(CompressHostlist({"node0", "node1", "node2", "node3", "node7"}) == "node[0-3,7]");
  CHECK(CompressHostlist({"gpu01", "gpu02", "x"}) == "gpu[01-02],x");
  CHECK(CompressHostlist({"node1"}) == "node1");
  CHECK(CompressHostlist({}) == "");
  auto round = ExpandHostlist(CompressHostlist({"n3", "n1", "n2", "m9"}));
  REQUIRE(round.ok());
  CHECK(*round == std::vector<std::string>{"m9", "n1", "n2", "n3"});
}

TEST_CASE("IsHostlist tells a single name from a list") {
  CHECK_FALSE(IsHostlist("node0"));
  CHECK(IsHostlist("node[0-1]"));
  CHECK(IsHostlist("a,b"));
}

}  // namespace prov
