// provisionctl run list|show|logs: the runs of configuration over SSH
// (a profile's playbooks and health checks, playbook run) and their tasks.
#include <CLI/CLI.hpp>

#include "../output/run.h"
#include "common.h"
#include "table.h"

namespace prov::ctl {
namespace {

using json = nlohmann::json;

int RunList(Context& ctx, const Args& a) {
  auto r = ctx.client.Get(kApi + "/runs" +
                          QueryString({{"node", a.node},
                                       {"status", a.state.value_or("")},
                                       {"limit", a.limit > 0 ? std::to_string(a.limit) : ""}}));
  if (!r.ok()) return Fail(ctx, r.status());
  if (a.json)
    PrintJson(ctx, *r);
  else
    ctx.out << RenderRunTable(r->value("runs", json::array()));
  return kExitOk;
}

int RunShow(Context& ctx, const Args& a) {
  auto r = ctx.client.Get(kApi + "/runs/" + UrlEncode(a.run_id));
  if (!r.ok()) return Fail(ctx, r.status());
  if (a.json)
    PrintJson(ctx, *r);
  else
    ctx.out << RenderRun(*r);
  return kExitOk;
}

int RunLogs(Context& ctx, const Args& a) {
  auto r = ctx.client.Get(kApi + "/runs/" + UrlEncode(a.run_id));
  if (!r.ok()) return Fail(ctx, r.status());
  ctx.out << RenderRunLogs(*r);
  return kExitOk;
}

}  // namespace

std::vector<Verb> RunVerbs() {
  return {
      {"run list", "run list [--node NODE] [--status STATUS] [--limit N] [--json]",
       "List configuration runs, newest first",
       R"(Lists the runs over SSH, newest first: ID, NODE, KIND (configure: a profile's
playbooks and health checks; playbook: playbook run), WHAT (profile version or
playbook), STATUS (running, ok, failed, unreachable, interrupted, rebooted),
task counts (ok, changed, failed, skipped), duration and start time.

Examples:
  provisionctl run list
  provisionctl run list --node lab01 --status failed)",
       [](CLI::App& c, Args& a) {
         c.add_option("--node", a.node, "Only runs on this node")->type_name("NODE");
         c.add_option("--status", a.state, "Only runs with this status")->type_name("STATUS");
         c.add_option("--limit", a.limit, "At most this many")->type_name("N");
         AddJsonFlag(c, a);
       },
       RunList},
      {"run show", "run show ID [--json]", "Show one run with each task's result",
       R"(Shows a run: node, what ran, status, counts, and one line per task (status,
task, where it is written as file:line, duration, exit code), with the message
of each failed task.

Example:
  provisionctl run show 12)",
       [](CLI::App& c, Args& a) {
         c.add_option("id", a.run_id, "Run ID")->required();
         AddJsonFlag(c, a);
       },
       RunShow},
      {"run logs", "run logs ID", "Print the output of each task of a run",
       R"(Prints each task of a run with the tail of its stdout and stderr (the last
4 KiB of each are kept).

Example:
  provisionctl run logs 12 | less)",
       [](CLI::App& c, Args& a) { c.add_option("id", a.run_id, "Run ID")->required(); }, RunLogs},
  };
}

}  // namespace prov::ctl
