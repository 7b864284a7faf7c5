// Waiting for nodes to reach a state, showing each node's progress: the wait
// verb, and profile apply once it has started configuring nodes; following
// an image build.
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

// Follows the events of the build of image `name` after event `after`,
// printing its progress, until it ends (0 when built) or Ctrl-C: image
// build, and profile apply while it bakes a profile's derived image.
int FollowBuild(Context& ctx, const std::string& name, int64_t after);

}  // namespace prov::ctl
