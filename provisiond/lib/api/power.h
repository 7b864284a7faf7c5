// POST /api/v1/nodes/{node}/power: on, off or cycle through the node's
// power driver (power/), recorded as an event either way.
#pragma once

#include "api/context.h"

namespace prov {

HttpResponse PowerNode(const ApiContext& context, const HttpRequest& request);

}  // namespace prov
