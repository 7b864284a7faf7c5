// Configuration runs: /api/v1/runs (filtered by node, status, ids), one run
// with its tasks, configuring a node now, and playbooks run by hand on many
// nodes (/api/v1/playbook-runs).
#pragma once

#include "api/context.h"

namespace prov {

HttpResponse ListRuns(const ApiContext& context, const HttpRequest& request);
HttpResponse ShowRun(const ApiContext& context, const HttpRequest& request);
// 202: queued; 409 with the reason when the node cannot be configured now.
HttpResponse ConfigureNode(const ApiContext& context, const HttpRequest& request);
// 202 with the runs started; a bare playbook name is one of the shipped ones.
HttpResponse StartPlaybookRuns(const ApiContext& context, const HttpRequest& request);
// POST /api/v1/health-checks {"nodes"}: `node check`, a run of kind
// "health" per node (202 with the runs).
HttpResponse StartHealthChecks(const ApiContext& context, const HttpRequest& request);
// POST /api/v1/playbook-checks: the runner a playbook would run on, and why,
// or the reason no runner accepts it.
HttpResponse CheckPlaybook(const ApiContext& context, const HttpRequest& request);

}  // namespace prov
