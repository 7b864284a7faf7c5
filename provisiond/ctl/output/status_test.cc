#include "status.h"

#include <doctest/doctest.h>

namespace prov::ctl {

using json = nlohmann::json;

TEST_CASE("the status takes missing fields as unknown rather than failing") {
  CHECK_NOTHROW(RenderStatus(json::object(), "http://x"));
}

}  // namespace prov::ctl
