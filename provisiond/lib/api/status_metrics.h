// How provisiond stands: /api/v1/status (nodes by state, the applied
// profile), /api/v1/preflight (the boot network's checks, run again) and
// /metrics (Prometheus text: nodes by state, events, requests by route).
#pragma once

#include "api/context.h"

namespace prov {

HttpResponse GetStatus(const ApiContext& context, const HttpRequest& request);
// 409 when no interface is configured (no boot network to check).
HttpResponse GetPreflight(const ApiContext& context, const HttpRequest& request);
HttpResponse GetMetrics(const ApiContext& context, const HttpRequest& request);

}  // namespace prov
