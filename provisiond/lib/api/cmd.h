// POST /api/v1/cmd: one command on many nodes over SSH, each node's exit
// code and output in the answer, and one event for the whole.
#pragma once

#include "api/context.h"

namespace prov {

HttpResponse RunCommand(const ApiContext& context, const HttpRequest& request);

// POST /api/v1/gather {"nodes", "path", "user"?}: one file from every node,
// base64 in each node's result (at most kGatherMaxBytes per node), one event
// for the whole.
HttpResponse GatherFiles(const ApiContext& context, const HttpRequest& request);

}  // namespace prov
