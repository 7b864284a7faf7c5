// How provisionctl shows profiles: the profile table, one profile, the plan of
// an apply and what the apply did.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace prov::ctl {

// GET /api/v1/profiles as a table, with a note for profiles that changed
// since they were applied.
std::string RenderProfileTable(const nlohmann::json& reply);

// GET /api/v1/profiles/<v>: hardware, image, kernel args, overlay, playbooks
// with their vars, health checks and nodes.
std::string RenderProfile(const nlohmann::json& profile);

// GET /api/v1/profiles/<v>/plan: what is applied now against this version,
// then one line per node and a count per action.
std::string RenderPlan(const nlohmann::json& plan);

// The line for a plan that changes nothing.
std::string NothingChanges(const nlohmann::json& plan);

// The reply of POST /api/v1/profiles/<v>/apply: per node the stages
// provisiond carried out, what is left to the operator (a reboot into the new
// image) and what it has not implemented yet (SSH configuration), then a
// summary.
std::string RenderApplied(const nlohmann::json& plan);

}  // namespace prov::ctl
