#include "format.h"

#include <doctest/doctest.h>
#include <stdlib.h>
#include <time.h>

namespace prov::ctl {

using json = nlohmann::json;

TEST_CASE("tables pad every column but the last to its widest cell") {
  Table t({"A", "LONGER"});
  t.AddRow({"wide cell", "x"});
  t.AddRow({"b", ""});
  CHECK(t.Render() ==
        "A          LONGER\n"
        "wide cell  x\n"
        "b\n");
}

TEST_CASE("times are local ISO 8601 with milliseconds and the offset") {
  setenv("TZ", "UTC", 1);
  tzset();
  CHECK(FormatTime(1795311857041) == "2026-11-22T01:44:17.041+00:00");
  CHECK(FormatTime(0) == "-");
  setenv("TZ", "EST5", 1);
  tzset();
  CHECK(FormatTime(1795311857041) == "2026-11-21T20:44:17.041-05:00");
  setenv("TZ", "UTC", 1);
  tzset();
}

TEST_CASE("ages say how long ago, or never") {
  struct Case {
    int64_t ms;
    const char* text;
  };
  const int64_t now = 1'000'000'000;
  const Case cases[] = {
      {0, "never"},
      {now - 5'000, "5s ago"},
      {now - 119'000, "119s ago"},
      {now - 180'000, "3m ago"},
      {now - 3 * 3600'000, "3h ago"},
      {now - 5 * 86400'000LL, "5d ago"},
      {now + 1'000, "0s ago"},  // a clock ahead of ours
  };
  for (const auto& c : cases) CHECK(FormatAge(c.ms, now) == c.text);
}

}  // namespace prov::ctl
