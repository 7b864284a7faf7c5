// How provisiond stands: /api/v1/status (nodes by state, the applied
// profile), /api/v1/preflight (the boot network's checks, run again) and
// /metrics (Prometheus text: nodes by state, events, requests by route),
// /api/v1/history/states (nodes by state over the last hours).
#pragma once

#include "api/context.h"

namespace prov {

HttpResponse GetStatus(const ApiContext& context, const HttpRequest& request);
// 409 when no interface is configured (no boot network to check).
HttpResponse GetPreflight(const ApiContext& context, const HttpRequest& request);
HttpResponse GetMetrics(const ApiContext& context, const HttpRequest& request);
// GET /api/v1/history/states?hours=6&points=120: nodes by state at `points`
// + 1 (1 to 720) instants over the last `hours` (1 to 336), the last one now;
// from at most 200,000 events (the overview's chart; store/state_history.h).
HttpResponse StateCountsOverTime(const ApiContext& context, const HttpRequest& request);

}  // namespace prov
