// /api/v1/events: after a cursor, for one node, the newest N, or a
// long-poll (`wait`) until there are some. /api/v1/nodes/{node}/console:
// what a node printed as it booted (the network console,
// console/console_log.h), one boot at a time, after a cursor, or a long-poll
// until there is more.
#pragma once

#include <nlohmann/json.hpp>

#include "api/context.h"
#include "console/console_log.h"

namespace prov {

HttpResponse ListEvents(const ApiContext& context, const HttpRequest& request);
HttpResponse NodeConsole(const ApiContext& context, const HttpRequest& request);

nlohmann::json ToJson(const ConsoleLine& line);

}  // namespace prov
