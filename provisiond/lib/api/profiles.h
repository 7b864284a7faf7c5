// /api/v1/profiles: the versions on disk with the applied history, one
// version, its plan against today's nodes, and applying it.
#pragma once

#include "api/context.h"

namespace prov {

HttpResponse ListProfiles(const ApiContext& context, const HttpRequest& request);
HttpResponse ShowProfile(const ApiContext& context, const HttpRequest& request);
HttpResponse ShowPlan(const ApiContext& context, const HttpRequest& request);
// Records the plan and assigns the nodes; then `after_apply` starts
// configuring them.
HttpResponse ApplyProfile(const ApiContext& context, const HttpRequest& request);

}  // namespace prov
