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

// True when a node in state `now` has reached `wanted`: it is there, or
// further on the way up (enrolled, booting, booted, configuring, ready): a
// node waited for until booted may be configuring or ready by then.
bool ReachedState(const std::string& now, const std::string& wanted);

// The nodes (GET /nodes "nodes") among `names` against `state` (reached as
// ReachedState says); `tasks` is the task each configuring node runs.
WaitView ViewNodes(const nlohmann::json& nodes, const std::vector<std::string>& names,
                   const std::string& state, const std::map<std::string, std::string>& tasks);

}  // namespace prov::ctl
