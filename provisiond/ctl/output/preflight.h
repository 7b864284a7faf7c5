// How provisionctl shows the checks of the boot network.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace prov::ctl {

// GET /api/v1/preflight: "ok" or "FAIL", the check's name and its detail, one
// check a line, then a count.
std::string RenderPreflight(const nlohmann::json& reply);

}  // namespace prov::ctl
