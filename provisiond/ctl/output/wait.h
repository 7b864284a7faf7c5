// How provisionctl shows nodes it waits for (wait, profile apply).
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace prov::ctl {

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
