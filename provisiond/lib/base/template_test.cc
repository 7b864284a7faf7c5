#include "base/template.h"

#include <doctest/doctest.h>

namespace prov {

TEST_CASE("templates: placeholders are replaced, unknown ones are errors with their line") {
  auto r = RenderTemplate("kernel {{ url }}/vmlinuz {{args}}\n",
                          {{"url", "http://x"}, {"args", "quiet"}}, "t");
  REQUIRE(r.ok());
  CHECK(*r == "kernel http://x/vmlinuz quiet\n");
  CHECK(RenderTemplate("a\n{{nope}}\n", {}, "t.in").status().message() ==
        "t.in:2: no value for '{{nope}}'");
  CHECK(RenderTemplate("a {{open", {}, "t.in").status().message() == "t.in:1: '{{' without '}}'");
  CHECK(*RenderTemplate("no placeholders", {}, "t") == "no placeholders");
}

}  // namespace prov
