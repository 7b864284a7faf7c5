// How provisionctl shows configuration runs: the run table, one run with its
// tasks, their output, and a playbook's recap.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace prov::ctl {

// GET /runs "runs" as a table.
std::string RenderRunTable(const nlohmann::json& runs);
// GET /runs/<id>: header, one line per task, failed tasks' messages.
std::string RenderRun(const nlohmann::json& run);
// Each task with the tail of its stdout and stderr.
std::string RenderRunLogs(const nlohmann::json& run);
// A recap line per run, as ansible-playbook's PLAY RECAP.
std::string RenderRecap(const nlohmann::json& runs);

}  // namespace prov::ctl
