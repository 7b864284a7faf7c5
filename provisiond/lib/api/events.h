// /api/v1/events: after a cursor, for one node, the newest N, or a
// long-poll (`wait`) until there are some.
#pragma once

#include "api/context.h"

namespace prov {

HttpResponse ListEvents(const ApiContext& context, const HttpRequest& request);

}  // namespace prov
