// How provisionctl shows events.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace prov::ctl {

// One event: "TIME NODE KIND DETAIL (who)" and a newline.
std::string RenderEvent(const nlohmann::json& event);

}  // namespace prov::ctl
