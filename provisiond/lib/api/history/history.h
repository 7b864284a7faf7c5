// What the web page draws (web/app.js): a node's latest boots stage by stage
// (its waterfall) and the nodes' counts by state over the last hours (the
// overview's chart). Read-only, bounded reads of the events; the computing is
// in store/boot_history.h and store/state_history.h.
//
// A folder of its own under api/: api/ holds the dozen units the layout
// allows (tests/layout_test.sh).
#pragma once

#include "api/context.h"
#include "http/http.h"

namespace prov {

// GET /api/v1/nodes/{node}/boots?count=2: the newest `count` (1 to 10) boot
// attempts, newest first, from the node's newest 20,000 events.
HttpResponse NodeBoots(const ApiContext& ctx, const HttpRequest& r);

// GET /api/v1/history/states?hours=6&points=120: nodes by state at `points`
// + 1 (1 to 720) instants over the last `hours` (1 to 336), the last one now;
// from at most 200,000 events.
HttpResponse StateCountsOverTime(const ApiContext& ctx, const HttpRequest& r);

}  // namespace prov
