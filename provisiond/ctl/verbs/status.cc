// provisionctl status: provisiond's version, nodes per state and profiles.
#include <CLI/CLI.hpp>

#include "../output/status.h"
#include "common.h"
#include "table.h"

namespace prov::ctl {
namespace {

int RunStatus(Context& ctx, const Args& a) {
  auto r = ctx.client.Get(kApi + "/status");
  if (!r.ok()) return Fail(ctx, r.status());
  if (a.json)
    PrintJson(ctx, *r);
  else
    ctx.out << RenderStatus(*r, ctx.client.url());
  return kExitOk;
}

}  // namespace

std::vector<Verb> StatusVerbs() {
  return {
      {"status", "status [--json]",
       "Show provisiond's version, node counts, the applied profile and the profiles",
       R"(Asks provisiond for its status: the service version, how many nodes are in each
state, which profile version is applied (with the first 12 digits of its content
hash, when and by whom), the profiles it can load, and any profile that failed to
load. Use it first to check that provisionctl reaches the daemon.

Examples:
  provisionctl status
  PROVISIOND_URL=http://10.0.0.1:8080 provisionctl status --json)",
       [](CLI::App& c, Args& a) { AddJsonFlag(c, a); }, RunStatus},
  };
}

}  // namespace prov::ctl
