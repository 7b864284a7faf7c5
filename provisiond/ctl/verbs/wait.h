// Waiting for nodes to reach a state, showing each node's progress: the wait
// verb, and profile apply once it has started configuring nodes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../verb.h"

namespace prov::ctl {

// Waits until every node in `names` is in `state` (or failed), showing each
// node's state (and the task it runs) as it changes: on a terminal a table
// redrawn in place, otherwise a line per change. 0: all arrived; kExitFailed:
// one failed or the timeout passed; kExitInterrupted on Ctrl-C.
int WaitForNodes(Context& ctx, const std::vector<std::string>& names, const std::string& state,
                 int64_t timeout_s);

}  // namespace prov::ctl
