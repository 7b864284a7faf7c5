// /api/v1/profiles: the versions on disk with the applied history, one
// version, its plan against today's nodes, and applying it. And
// /api/v1/secrets, the store of what profiles declare: names and sizes out,
// values only in.
//   GET    /api/v1/secrets         every secret, with the profiles that declare it
//   PUT    /api/v1/secrets/{name}  {"value": "..."}: the operator's own value
//   DELETE /api/v1/secrets/{name}  made again on next use when a profile declares it
// Secret changes are events naming the secret and who, never the value.
#pragma once

#include "api/context.h"

namespace prov {

HttpResponse ListProfiles(const ApiContext& context, const HttpRequest& request);
HttpResponse ShowProfile(const ApiContext& context, const HttpRequest& request);
HttpResponse ShowPlan(const ApiContext& context, const HttpRequest& request);
// Records the plan and assigns the nodes; then `after_apply` starts
// configuring them.
HttpResponse ApplyProfile(const ApiContext& context, const HttpRequest& request);
// POST /profiles/{version}/bake: builds the derived image of a profile with
// bake playbooks in the background (its progress as image-build events of
// the derived name; 200 with "built": true when it is built already).
HttpResponse BakeProfile(const ApiContext& context, const HttpRequest& request);

HttpResponse ListSecrets(const ApiContext& context, const HttpRequest& request);
HttpResponse SetSecret(const ApiContext& context, const HttpRequest& request);
HttpResponse RemoveSecret(const ApiContext& context, const HttpRequest& request);

}  // namespace prov
