// /api/v1/nodes: list (filtered by state, profile, hostlist), enroll, show,
// change, and retire or purge.
#pragma once

#include "api/context.h"

namespace prov {

HttpResponse ListNodes(const ApiContext& context, const HttpRequest& request);
HttpResponse EnrollNode(const ApiContext& context, const HttpRequest& request);
HttpResponse ShowNode(const ApiContext& context, const HttpRequest& request);
HttpResponse ChangeNode(const ApiContext& context, const HttpRequest& request);
HttpResponse RetireNode(const ApiContext& context, const HttpRequest& request);

}  // namespace prov
