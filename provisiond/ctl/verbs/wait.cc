// provisionctl wait: until nodes reach a state, showing their progress; and
// the same wait for profile apply.
#include "wait.h"

#include <unistd.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <set>
#include <thread>

#include "../output/format.h"
#include "../output/wait.h"
#include "base/hostlist.h"
#include "common.h"
#include "table.h"

namespace prov::ctl {
namespace {

using json = nlohmann::json;

int RunWait(Context& ctx, const Args& a) {
  auto names = ctx.client.Get(kApi + "/nodes" + QueryString({{"hostlist", a.target}}));
  if (!names.ok()) return Fail(ctx, names.status());
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

}  // namespace

int WaitForNodes(Context& ctx, const std::vector<std::string>& names, const std::string& state,
                 int64_t timeout_s) {
  InterruptScope scope(ctx.client);
  const bool tty = isatty(STDOUT_FILENO) && &ctx.out == &std::cout;
  const int64_t start = SteadyMs();
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
    if (!nodes.ok()) return Fail(ctx, nodes.status());
    std::map<std::string, std::string> tasks;
    if (runs.ok())
      for (const auto& r : (*runs)["runs"])
        if (r.contains("last_task")) tasks[r.value("node", "")] = r["last_task"];
    WaitView view = ViewNodes((*nodes)["nodes"], names, state, tasks);
    const std::string elapsed = FormatElapsed(SteadyMs() - start);
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
    if (SteadyMs() > deadline) {
      ctx.out << elapsed << ": timed out: " << view.summary << "\n";
      return kExitFailed;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

std::vector<Verb> WaitVerbs() {
  return {
      {"wait", "wait HOSTLIST [--state STATE] [--timeout SECONDS]",
       "Wait until nodes reach a state (ready by default), showing their progress",
       R"(Waits until every node of HOSTLIST is in STATE (default ready), showing each
node's state and, while it is configured, the task it runs; on a terminal the
table is redrawn in place, otherwise a line is printed per change. A node
further on the way up (enrolled, booting, booted, configuring, ready) has
passed STATE: waiting until booted ends for nodes already configuring or
ready. A node that fails ends the wait. The exit status is 0 when all arrived, 1 when one failed
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
  };
}

}  // namespace prov::ctl
