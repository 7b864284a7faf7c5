// How provisionctl shows runs, command results and waiting nodes: pure
// functions from the API's JSON to text, tested without a daemon.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace prov::ctl {

// GET /runs "runs" as a table.
std::string RenderRunTable(const nlohmann::json& runs);
// GET /runs/<id>: header, one line per task, failed tasks' messages.
std::string RenderRun(const nlohmann::json& run);
// Each task with the tail of its stdout and stderr.
std::string RenderRunLogs(const nlohmann::json& run);
// A recap line per run, as ansible-playbook's PLAY RECAP.
std::string RenderRecap(const nlohmann::json& runs);

// POST /cmd "results": nodes with the same output (stdout, stderr and exit
// code) folded under one header naming them as a hostlist (clush -b style);
// then the nodes that failed, with why.
std::string RenderCommandResults(const nlohmann::json& results);

// `word` quoted for /bin/sh when it needs it.
std::string ShellWord(const std::string& word);

// "12.3s", "4m05s".
std::string FormatElapsed(int64_t ms);

struct WaitView {
  std::string table;                                       // NODE STATE DETAIL
  std::vector<std::pair<std::string, std::string>> lines;  // node -> "node state detail"
  std::string summary;                                     // "1/2 ready, 1 configuring"
  std::vector<std::string> failed, missing;
  bool done = false;  // every node arrived or failed
};

// The nodes (GET /nodes "nodes") among `names` against `state`; `tasks` is
// the task each configuring node runs.
WaitView ViewNodes(const nlohmann::json& nodes, const std::vector<std::string>& names,
                   const std::string& state, const std::map<std::string, std::string>& tasks);

}  // namespace prov::ctl
