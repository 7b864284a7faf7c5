// provisionctl cmd: one command on many nodes at once, output grouped.
#include <CLI/CLI.hpp>

#include <filesystem>

#include "../output/cmd.h"
#include "base/file_util.h"
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

// The name a gathered file gets in LOCAL_DIR/<node>/: the remote file's.
std::string GatheredName(const std::string& remote) {
  std::string name = remote.substr(remote.rfind('/') + 1);
  return name.empty() || name == "." || name == ".." ? "file" : name;
}

int RunGather(Context& ctx, const Args& a) {
  json body = {{"nodes", a.target}, {"path", a.remote_path}};
  if (!a.user.empty()) body["user"] = a.user;
  if (a.timeout_s > 0) body["timeout_s"] = a.timeout_s;
  auto r =
      ctx.client.Call("POST", kApi + "/gather", &body, (a.timeout_s > 0 ? a.timeout_s : 600) + 60);
  if (!r.ok()) return Fail(ctx, r.status());
  const std::string name = GatheredName(a.remote_path);
  int failed = 0, saved = 0;
  for (const auto& n : r->value("results", json::array())) {
    const std::string node = n.value("node", "");
    std::string error = n.value("error", "");
    if (n.value("status", "") == "ok") {
      // Node names are checked hostnames (or MACs): no '/', no "..".
      const std::string dir = a.local_dir + "/" + node;
      auto content = Base64Decode(n.value("content_base64", ""));
      Status s = content ? MakeDirs(dir) : Status::Invalid("its content is not base64");
      if (s.ok()) s = WriteFileAtomic(dir + "/" + name, *content, 0600);
      if (s.ok()) {
        ++saved;
        if (!a.json)
          ctx.out << node << ": " << content->size() << " bytes -> " << dir << "/" << name << "\n";
        continue;
      }
      error = "not saved: " + s.message();
    }
    ++failed;
    if (!a.json) ctx.err << node << ": " << n.value("status", "failed") << ": " << error << "\n";
  }
  if (a.json) {
    // The answer without the contents (they are in the files).
    json shown = *r;
    for (auto& n : shown["results"]) n.erase("content_base64");
    PrintJson(ctx, shown);
  } else if (failed) {
    ctx.err << "provisionctl: " << failed << " of " << failed + saved << " node(s) failed\n";
  }
  return failed ? kExitFailed : kExitOk;
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

      {"gather", "gather HOSTLIST REMOTE_PATH LOCAL_DIR [--user USER] [--timeout SECONDS] [--json]",
       "Copy one file from every node into LOCAL_DIR/<node>/",
       R"(Reads REMOTE_PATH on every node of HOSTLIST at once over provisiond's SSH
sessions (as the login user or as --user) and writes each node's copy to
LOCAL_DIR/<node>/<the file's name> (0600, written whole then renamed into
place). A node without the file, with a file over 16 MiB, or unreachable is
listed with why; the others are saved. The exit status is 1 if any node
failed. HOSTLIST may also be "all" or "@VERSION", as for cmd.

Examples:
  provisionctl gather all /var/log/provision-health.log ./health
  provisionctl gather 'gpu[01-04]' /tmp/nccl-all_reduce.txt ./nccl --user compute)",
       [](CLI::App& c, Args& a) {
         c.add_option("hostlist", a.target, "Nodes")->required();
         c.add_option("remote_path", a.remote_path, "The file on each node (absolute)")->required();
         c.add_option("local_dir", a.local_dir, "Where the copies go, one folder per node")
             ->required();
         c.add_option("-u,--user", a.user, "Read it as this user")->type_name("USER");
         c.add_option("--timeout", a.timeout_s, "Per node, in seconds (default 600)")
             ->type_name("SECONDS");
         AddJsonFlag(c, a);
       },
       RunGather},
  };
}

}  // namespace prov::ctl
