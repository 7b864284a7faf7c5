// provisionctl cmd: one command on many nodes at once, output grouped.
#include <CLI/CLI.hpp>

#include "../output/cmd.h"
#include "base/strings.h"
#include "common.h"
#include "table.h"

namespace prov::ctl {
namespace {

using json = nlohmann::json;

int RunCmd(Context& ctx, const Args& a) {
  if (a.command.empty()) return UsageError(ctx, "give the command after --");
  std::string command;
  for (const auto& word : a.command) {
    if (!command.empty()) command += " ";
    // One word is passed as it is (a shell line); several are joined as a
    // shell would have split them.
    command += a.command.size() == 1 ? word : ShlexQuote(word);
  }
  json body = {{"nodes", a.target}, {"command", command}};
  if (!a.user.empty()) body["user"] = a.user;
  if (a.timeout_s > 0) body["timeout_s"] = a.timeout_s;
  auto r =
      ctx.client.Call("POST", kApi + "/cmd", &body, (a.timeout_s > 0 ? a.timeout_s : 600) + 30);
  if (!r.ok()) return Fail(ctx, r.status());
  if (a.json)
    PrintJson(ctx, *r);
  else
    ctx.out << RenderCommandResults(r->value("results", json::array()));
  return r->value("failed", 0) == 0 ? kExitOk : kExitFailed;
}

}  // namespace

std::vector<Verb> CmdVerbs() {
  return {
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
  };
}

}  // namespace prov::ctl
