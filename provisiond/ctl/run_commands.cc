// The verbs of configuration over SSH: run list|show|logs, cmd, wait,
// playbook run, export.
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "base/hostlist.h"
#include "commands.h"
#include "output.h"
#include "run_output.h"

namespace prov::ctl {
namespace {

using json = nlohmann::json;

const std::string kApi = "/api/v1";

int64_t Now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int RunList(Context& ctx, const Args& a) {
  auto r = ctx.client.Get(kApi + "/runs" +
                          QueryString({{"node", a.node},
                                       {"status", a.state.value_or("")},
                                       {"limit", a.limit > 0 ? std::to_string(a.limit) : ""}}));
  if (!r.ok()) return FailRequest(ctx, r.status());
  if (a.json)
    ctx.out << r->dump() << "\n";
  else
    ctx.out << RenderRunTable(r->value("runs", json::array()));
  return kExitOk;
}

int RunShow(Context& ctx, const Args& a) {
  auto r = ctx.client.Get(kApi + "/runs/" + UrlEncode(a.run_id));
  if (!r.ok()) return FailRequest(ctx, r.status());
  if (a.json)
    ctx.out << r->dump() << "\n";
  else
    ctx.out << RenderRun(*r);
  return kExitOk;
}

int RunLogs(Context& ctx, const Args& a) {
  auto r = ctx.client.Get(kApi + "/runs/" + UrlEncode(a.run_id));
  if (!r.ok()) return FailRequest(ctx, r.status());
  ctx.out << RenderRunLogs(*r);
  return kExitOk;
}

int RunCmd(Context& ctx, const Args& a) {
  if (a.command.empty()) return UsageError(ctx, "give the command after --");
  std::string command;
  for (const auto& word : a.command) {
    if (!command.empty()) command += " ";
    // One word is passed as it is (a shell line); several are joined as a
    // shell would have split them.
    command += a.command.size() == 1 ? word : ShellWord(word);
  }
  json body = {{"nodes", a.target}, {"command", command}};
  if (!a.user.empty()) body["user"] = a.user;
  if (a.timeout_s > 0) body["timeout_s"] = a.timeout_s;
  auto r =
      ctx.client.Call("POST", kApi + "/cmd", &body, (a.timeout_s > 0 ? a.timeout_s : 600) + 30);
  if (!r.ok()) return FailRequest(ctx, r.status());
  if (a.json)
    ctx.out << r->dump() << "\n";
  else
    ctx.out << RenderCommandResults(r->value("results", json::array()));
  return r->value("failed", 0) == 0 ? kExitOk : kExitFailed;
}

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

int RunPlaybook(Context& ctx, const Args& a) {
  auto vars = ExtraVars(a.extra_vars);
  if (!vars.ok()) return UsageError(ctx, vars.status().message());
  std::string path = a.playbook;
  if (std::filesystem::exists(path)) path = std::filesystem::absolute(path).lexically_normal();
  json body = {{"playbook", path}, {"nodes", a.target}, {"extra_vars", *vars}};
  auto started = ctx.client.Call("POST", kApi + "/playbook-runs", &body);
  if (!started.ok()) return FailRequest(ctx, started.status());
  std::string ids;
  std::map<int64_t, std::string> nodes;
  for (const auto& run : (*started)["runs"]) {
    ids += (ids.empty() ? "" : ",") + std::to_string(run["id"].get<int64_t>());
    nodes[run["id"].get<int64_t>()] = run.value("node", "");
  }
  ctx.out << "PLAYBOOK " << path << " on " << nodes.size() << " node(s)\n" << std::flush;
  WaitScope scope(ctx.client);
  const int64_t deadline = Now() + (a.timeout_s > 0 ? a.timeout_s : 86400) * 1000;
  std::map<int64_t, int64_t> shown;  // run id -> tasks shown
  json runs;
  while (true) {
    auto r = ctx.client.Get(kApi + "/runs" + QueryString({{"ids", ids}}));
    if (scope.interrupted()) {
      ctx.err << "provisionctl: stopped watching; the runs go on (provisionctl run list)\n";
      return kExitInterrupted;
    }
    if (!r.ok()) return FailRequest(ctx, r.status());
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
    if (Now() > deadline) {
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

int RunWait(Context& ctx, const Args& a) {
  auto names = ctx.client.Get(kApi + "/nodes" + QueryString({{"hostlist", a.target}}));
  if (!names.ok()) return FailRequest(ctx, names.status());
  std::vector<std::string> list;
  for (const auto& n : (*names)["nodes"]) {
    std::string name = n.value("hostname", "");
    list.push_back(name.empty() ? n.value("mac", "") : name);
  }
  auto expanded = ExpandHostlist(a.target);
  if (expanded.ok() && expanded->size() != list.size()) {
    std::set<std::string> have(list.begin(), list.end());
    for (const auto& want : *expanded)
      if (!have.count(want)) ctx.err << "provisionctl: no node named " << want << "\n";
    return kExitFailed;
  }
  if (list.empty()) {
    ctx.err << "provisionctl: no node matches " << a.target << "\n";
    return kExitFailed;
  }
  return WaitForNodes(ctx, list, a.wait_state, a.timeout_s > 0 ? a.timeout_s : 1800);
}

int RunExport(Context& ctx, const Args& a) {
  auto r = ctx.client.Get(kApi + "/export/" + UrlEncode(a.format) +
                          QueryString({{"nodes", a.target}, {"json", "1"}}));
  if (!r.ok()) return FailRequest(ctx, r.status());
  ctx.out << r->value("text", "");
  return kExitOk;
}

}  // namespace

int WaitForNodes(Context& ctx, const std::vector<std::string>& names, const std::string& state,
                 int64_t timeout_s) {
  WaitScope scope(ctx.client);
  const bool tty = isatty(STDOUT_FILENO) && &ctx.out == &std::cout;
  const int64_t start = Now();
  const int64_t deadline = start + timeout_s * 1000;
  std::map<std::string, std::string> shown;  // node -> what was printed last
  const std::string hostlist = CompressHostlist(names);
  size_t lines = 0;
  while (true) {
    auto nodes = ctx.client.Get(kApi + "/nodes" + QueryString({{"hostlist", hostlist}}));
    auto runs =
        ctx.client.Get(kApi + "/runs" + QueryString({{"status", "running"}, {"limit", "10000"}}));
    if (scope.interrupted()) {
      ctx.err << "provisionctl: stopped waiting\n";
      return kExitInterrupted;
    }
    if (!nodes.ok()) return FailRequest(ctx, nodes.status());
    std::map<std::string, std::string> tasks;
    if (runs.ok())
      for (const auto& r : (*runs)["runs"])
        if (r.contains("last_task")) tasks[r.value("node", "")] = r["last_task"];
    WaitView view = ViewNodes((*nodes)["nodes"], names, state, tasks);
    const std::string elapsed = FormatElapsed(Now() - start);
    if (tty) {
      // Redraw the table in place.
      if (lines) ctx.out << "\x1b[" << lines << "A\x1b[J";
      std::string table = view.table;
      lines = static_cast<size_t>(std::count(table.begin(), table.end(), '\n')) + 1;
      ctx.out << table << elapsed << ": " << view.summary << "\n" << std::flush;
    } else {
      for (const auto& [node, line] : view.lines)
        if (shown[node] != line) {
          ctx.out << elapsed << "  " << line << "\n";
          shown[node] = line;
        }
      ctx.out << std::flush;
    }
    if (view.done) {
      if (!tty) ctx.out << elapsed << ": " << view.summary << "\n";
      return view.failed.empty() && view.missing.empty() ? kExitOk : kExitFailed;
    }
    if (Now() > deadline) {
      ctx.out << elapsed << ": timed out: " << view.summary << "\n";
      return kExitFailed;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

std::vector<Verb> WithRunVerbs(std::vector<Verb> verbs) {
  std::vector<Verb> more = {
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
      {"cmd", "cmd HOSTLIST [--user USER] [--timeout SECONDS] [--json] -- COMMAND...",
       "Run a command on many nodes at once, output grouped",
       R"(Runs COMMAND with /bin/sh on every node of HOSTLIST at once over provisiond's
SSH sessions (kept open per node), as the login user or as --user. The output
is grouped by node with identical outputs folded under one header, as clush -b
does; nodes that failed (exit code, unreachable, timeout) are listed with why.
The exit status is 1 if any node failed. HOSTLIST may also be "all" (every
enrolled node with an address) or "@VERSION" (the nodes of a profile).

Examples:
  provisionctl cmd 'lab[01-02]' -- uname -r
  provisionctl cmd all --user compute -- id -un
  provisionctl cmd @v0.1 -- 'clinfo -l | grep A770')",
       [](CLI::App& c, Args& a) {
         c.add_option("hostlist", a.target, "Nodes")->required();
         c.add_option("command", a.command, "The command (after --)")->required();
         c.add_option("-u,--user", a.user, "Run as this user")->type_name("USER");
         c.add_option("--timeout", a.timeout_s, "Per node, in seconds (default 600)")
             ->type_name("SECONDS");
         AddJsonFlag(c, a);
       },
       RunCmd},
      {"wait", "wait HOSTLIST [--state STATE] [--timeout SECONDS]",
       "Wait until nodes reach a state (ready by default), showing their progress",
       R"(Waits until every node of HOSTLIST is in STATE (default ready), showing each
node's state and, while it is configured, the task it runs; on a terminal the
table is redrawn in place, otherwise a line is printed per change. A node that
fails ends the wait. The exit status is 0 when all arrived, 1 when one failed
or the timeout (default 1800 s) passed, 130 on Ctrl-C.

Examples:
  provisionctl wait 'lab[01-02]'
  provisionctl wait 'node[01-32]' --state booted --timeout 600)",
       [](CLI::App& c, Args& a) {
         c.add_option("hostlist", a.target, "Nodes")->required();
         c.add_option("--state", a.wait_state, "The state to wait for")->type_name("STATE");
         c.add_option("--timeout", a.timeout_s, "Give up after this many seconds")
             ->type_name("SECONDS");
       },
       RunWait},
      {"playbook run", "playbook run PLAYBOOK HOSTLIST [-e KEY=VALUE]... [--timeout SECONDS]",
       "Run a playbook on enrolled nodes, as ansible-playbook -l would",
       R"(Runs PLAYBOOK (a path readable on the control node, or the name of a shipped
playbook) on the nodes of HOSTLIST with provisiond's runner, each node on its
own. -e sets extra variables (values that parse as JSON are JSON). Progress is
printed per node, then a recap line per node; the exit status is 1 if any node
failed. Each run is stored (run list, run show, run logs).

Examples:
  provisionctl playbook run site.yml 'node[01-04]' -e compute_user=alice
  provisionctl playbook run hostfiles.yml all)",
       [](CLI::App& c, Args& a) {
         c.add_option("playbook", a.playbook, "Playbook file")->required();
         c.add_option("hostlist", a.target, "Nodes")->required();
         c.add_option("-e,--extra-vars", a.extra_vars, "KEY=VALUE")->type_name("KEY=VALUE");
         c.add_option("--timeout", a.timeout_s, "Stop watching after this many seconds")
             ->type_name("SECONDS");
         AddJsonFlag(c, a);
       },
       RunPlaybook},
      {"export", "export FORMAT [HOSTLIST]",
       "Print hostfile, hostfile-ip, ansible-inventory or slurm-nodes",
       R"(Prints the inventory in another tool's format, for the enrolled nodes with an
address (or those of HOSTLIST): hostfile (one hostname per line), hostfile-ip
(one address per line), ansible-inventory (YAML with ansible_host and the
recorded facts as provisiond_facts, grouped by profile), slurm-nodes (NodeName
lines with CPUs, RealMemory and GPU gres from the facts).

Examples:
  provisionctl export hostfile > hostfile
  provisionctl export ansible-inventory > inventory.yml
  provisionctl export slurm-nodes 'node[01-08]')",
       [](CLI::App& c, Args& a) {
         c.add_option("format", a.format, "hostfile|hostfile-ip|ansible-inventory|slurm-nodes")
             ->required();
         c.add_option("hostlist", a.target, "Nodes (default: all)");
       },
       RunExport},
  };
  verbs.insert(verbs.end() - (verbs.empty() ? 0 : 1), more.begin(), more.end());
  return verbs;
}

}  // namespace prov::ctl
