// POST /api/v1/cmd: one command on many nodes over SSH, each node's exit
// code and output in the answer, and one event for the whole.
#pragma once

#include "api/context.h"

namespace prov {

HttpResponse RunCommand(const ApiContext& context, const HttpRequest& request);

}  // namespace prov
