// provisionctl playbook run: a playbook on enrolled nodes with provisiond's
// runner, followed until every node's run ends.
#include <CLI/CLI.hpp>

#include <chrono>
#include <filesystem>
#include <map>
#include <thread>

#include "../output/run.h"
#include "common.h"
#include "table.h"

namespace prov::ctl {
namespace {

using json = nlohmann::json;

// "key=value": the value is JSON when it parses as JSON (numbers, true,
// lists), a string otherwise, as ansible-playbook -e does.
Result<json> ExtraVars(const std::vector<std::string>& pairs) {
  json vars = json::object();
  for (const auto& p : pairs) {
    auto eq = p.find('=');
    if (eq == std::string::npos || eq == 0)
      return Status::Invalid("-e " + p + ": expected key=value");
    std::string value = p.substr(eq + 1);
    json v = json::parse(value, nullptr, false);
    vars[p.substr(0, eq)] = v.is_discarded() ? json(value) : v;
  }
  return vars;
}

// The path provisiond is given for a playbook named on the command line.
std::string PlaybookPath(const std::string& name) {
  if (std::filesystem::exists(name)) return std::filesystem::absolute(name).lexically_normal();
  return name;
}

int RunPlaybook(Context& ctx, const Args& a) {
  auto vars = ExtraVars(a.extra_vars);
  if (!vars.ok()) return UsageError(ctx, vars.status().message());
  std::string path = PlaybookPath(a.playbook);
  json body = {
      {"playbook", path}, {"nodes", a.target}, {"extra_vars", *vars}, {"runner", a.runner}};
  auto started = ctx.client.Call("POST", kApi + "/playbook-runs", &body);
  if (!started.ok()) return Fail(ctx, started.status());
  if (!a.json)
    ctx.out << "RUNNER " << started->value("runner", "native") << " ("
            << started->value("reason", "") << ")\n";
  std::string ids;
  std::map<int64_t, std::string> nodes;
  for (const auto& run : (*started)["runs"]) {
    ids += (ids.empty() ? "" : ",") + std::to_string(run["id"].get<int64_t>());
    nodes[run["id"].get<int64_t>()] = run.value("node", "");
  }
  ctx.out << "PLAYBOOK " << path << " on " << nodes.size() << " node(s)\n" << std::flush;
  InterruptScope scope(ctx.client);
  const int64_t deadline = SteadyMs() + (a.timeout_s > 0 ? a.timeout_s : 86400) * 1000;
  std::map<int64_t, int64_t> shown;  // run id -> tasks shown
  json runs;
  while (true) {
    auto r = ctx.client.Get(kApi + "/runs" + QueryString({{"ids", ids}}));
    if (scope.interrupted()) {
      ctx.err << "provisionctl: stopped watching; the runs go on (provisionctl run list)\n";
      return kExitInterrupted;
    }
    if (!r.ok()) return Fail(ctx, r.status());
    runs = (*r)["runs"];
    bool running = false;
    for (const auto& run : runs) {
      const int64_t id = run["id"];
      const int64_t done = run.value("ok", 0) + run.value("changed", 0) + run.value("failed", 0) +
                           run.value("skipped", 0);
      if (done != shown[id] && !a.json) {
        ctx.out << "  " << run.value("node", "") << ": " << done << " task(s)"
                << (run.contains("last_task") ? ", last: " + run["last_task"].get<std::string>()
                                              : "")
                << "\n"
                << std::flush;
        shown[id] = done;
      }
      if (run.value("status", "") == "running") running = true;
    }
    if (!running) break;
    if (SteadyMs() > deadline) {
      ctx.err << "provisionctl: timed out; the runs go on (provisionctl run list)\n";
      return kExitFailed;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  if (a.json) {
    ctx.out << json{{"runs", runs}}.dump() << "\n";
  } else {
    ctx.out << RenderRecap(runs);
  }
  for (const auto& run : runs)
    if (run.value("status", "") != "ok") return kExitFailed;
  return kExitOk;
}

int CheckPlaybook(Context& ctx, const Args& a) {
  json body = {{"playbook", PlaybookPath(a.playbook)}, {"runner", a.runner}};
  auto r = ctx.client.Call("POST", kApi + "/playbook-checks", &body);
  if (!r.ok()) return Fail(ctx, r.status());
  if (a.json) {
    ctx.out << r->dump() << "\n";
  } else if (r->value("accepted", false)) {
    ctx.out << r->value("playbook", "") << ": runs on " << r->value("runner", "") << " ("
            << r->value("reason", "") << ")\n";
  } else {
    ctx.err << r->value("playbook", "") << ": refused:\n" << r->value("error", "") << "\n";
  }
  return r->value("accepted", false) ? kExitOk : kExitFailed;
}

void AddRunnerOption(CLI::App& c, Args& a) {
  c.add_option("--runner", a.runner, "auto (native when it loads there), native or ansible")
      ->check(CLI::IsMember({"auto", "native", "ansible"}))
      ->type_name("RUNNER");
}

}  // namespace

std::vector<Verb> PlaybookVerbs() {
  return {
      {"playbook run",
       "playbook run PLAYBOOK HOSTLIST [-e KEY=VALUE]... [--runner RUNNER] [--timeout SECONDS]",
       "Run a playbook on enrolled nodes, as ansible-playbook -l would",
       R"(Runs PLAYBOOK (a path under provisiond's playbooks_dir, or the name of a
playbook there) on the nodes of HOSTLIST, each node on its own. It runs on
provisiond's native runner when it loads there, else on ansible-playbook (the
reason is printed first); --runner native|ansible forces one. -e sets extra
variables (values that parse as JSON are JSON). Progress is printed per node,
then a recap line per node; the exit status is 1 if any node failed. Each run
is stored (run list, run show, run logs).

Examples:
  provisionctl playbook run site.yml 'node[01-04]' -e compute_user=alice
  provisionctl playbook run hostfiles.yml all)",
       [](CLI::App& c, Args& a) {
         c.add_option("playbook", a.playbook, "Playbook file")->required();
         c.add_option("hostlist", a.target, "Nodes")->required();
         c.add_option("-e,--extra-vars", a.extra_vars, "KEY=VALUE")->type_name("KEY=VALUE");
         c.add_option("--timeout", a.timeout_s, "Stop watching after this many seconds")
             ->type_name("SECONDS");
         AddRunnerOption(c, a);
         AddJsonFlag(c, a);
       },
       RunPlaybook},
      {"playbook check", "playbook check PLAYBOOK [--runner RUNNER]",
       "Say which runner a playbook will use, and why",
       R"(Loads PLAYBOOK as a run would, runs nothing: prints the runner it would
run on (native, or ansible-playbook) and why, or, when neither accepts it,
each one's refusal (Ansible's own error). Exit status 1 when refused.

Examples:
  provisionctl playbook check site.yml
  provisionctl playbook check roles-site.yml --runner native)",
       [](CLI::App& c, Args& a) {
         c.add_option("playbook", a.playbook, "Playbook file")->required();
         AddRunnerOption(c, a);
         AddJsonFlag(c, a);
       },
       CheckPlaybook},
  };
}

}  // namespace prov::ctl
