// How provisionctl shows a command run on many nodes (cmd).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace prov::ctl {

// POST /cmd "results": nodes with the same output (stdout, stderr and exit
// code) folded under one header naming them as a hostlist (clush -b style);
// then the nodes that failed, with why.
std::string RenderCommandResults(const nlohmann::json& results);

}  // namespace prov::ctl
