// How provisionctl shows provisiond's status.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace prov::ctl {

// GET /api/v1/status for people; `url` is where it was asked.
std::string RenderStatus(const nlohmann::json& status, const std::string& url);

}  // namespace prov::ctl
