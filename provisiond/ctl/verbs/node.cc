// provisionctl node list|show|why|add|set|power|check|rm: the inventory, node by
// node or by hostlist.
#include <termios.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <sstream>
#include <thread>

#include "../output/node.h"
#include "base/hostlist.h"
#include "base/json_fields.h"
#include "base/strings.h"
#include "common.h"
#include "table.h"

namespace prov::ctl {
namespace {

using json = nlohmann::json;

// provisiond answers a power request once the driver is done (ipmitool or the
// power command may take up to its 30 s timeout).
constexpr long kPowerTimeoutS = 120;

// The node states of provisiond's life cycle (store/node_state.h), in its
// order: --state takes only these, so a typo is a usage error before anything
// is sent. Which of them an operator may set is provisiond's to say.
const std::vector<std::string> kNodeStates = {"discovered", "enrolled",    "booting",
                                              "booted",     "configuring", "ready",
                                              "failed",     "maintenance", "retired"};

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// --power SPEC ("driver=NAME,KEY=VALUE", a driver alone, "none") as the JSON
// object the API takes, {} for none. Only its syntax is checked here: which
// drivers exist and what each needs is provisiond's to say (power/registry.h),
// and its error is printed as it comes.
Result<json> ParsePowerSpec(const std::string& spec) {
  return ParseSettingsList(spec, "driver", "power setting");
}

// The nodes a hostlist names; a single name (or a MAC, which has colons but
// no brackets) is taken as it is.
Result<std::vector<std::string>> NodeNames(const std::string& text) {
  if (!IsHostlist(text)) return std::vector<std::string>{text};
  return ExpandHostlist(text);
}

// Runs `change` for each node, printing its line or its error; a failure of
// one node does not stop the others, but an unreachable daemon or a refused
// token stops all, as every other node would fail the same way. A 503 that
// provisiond answers (a node's BMC or power command failed) is that node's
// failure only; `change` must return the status of the client's last call.
int ForEachNode(Context& ctx, const std::vector<std::string>& names,
                const std::function<Result<std::string>(const std::string&)>& change) {
  size_t failed = 0;
  for (const auto& name : names) {
    auto line = change(name);
    if (line.ok()) {
      ctx.out << name << ": " << *line << "\n";
      continue;
    }
    const Code code = line.status().code();
    const bool unreachable = code == Code::kUnavailable && ctx.client.last_http_status() == 0;
    if (unreachable || code == Code::kUnauthorized) return Fail(ctx, line.status());
    Fail(ctx, line.status(), name + ": ");
    ++failed;
  }
  if (failed && names.size() > 1)
    ctx.err << "provisionctl: " << failed << " of " << names.size() << " nodes failed\n";
  return failed ? kExitFailed : kExitOk;
}

// The node as one line after a change: "maintenance (cabling), profile v0.2";
// `name` is how the node was named, so a rename shows.
std::string NodeSummary(const std::string& name, const json& node) {
  std::string out;
  std::string hostname = node.value("hostname", "");
  if (hostname != name && node.value("mac", "") != name) out = "now " + hostname + ", ";
  out += node.value("state", "");
  if (std::string reason = node.value("reason", ""); !reason.empty()) out += " (" + reason + ")";
  std::string profile = node.value("profile", "");
  out += profile.empty() ? ", no profile" : ", profile " + profile;
  if (std::string ip = node.value("ip", ""); !ip.empty()) out += ", ip " + ip;
  if (std::string power = FormatPowerSpec(node.value("power", json::object())); !power.empty())
    out += ", power " + power;
  if (std::string l = node.value("uefi_loader", ""); !l.empty()) out += ", UEFI loader " + l;
  return out;
}

// ---- verbs ----

int RunNodeList(Context& ctx, const Args& a) {
  // The daemon checks the hostlist too; checking it here makes a typo a usage
  // error, as it is for node set and node rm.
  if (auto names = NodeNames(a.target); !a.target.empty() && !names.ok())
    return UsageError(ctx, names.status().message());
  // Page by page (GET /nodes?limit=&after=): no answer holds a whole large
  // inventory, and --limit stops early.
  constexpr int64_t kPage = 1000;
  json nodes = json::array();
  int64_t total = 0;
  std::string after;
  for (;;) {
    const int64_t want =
        a.limit > 0 ? std::min(kPage, a.limit - static_cast<int64_t>(nodes.size())) : kPage;
    auto r = ctx.client.Get(kApi + "/nodes" +
                            QueryString({{"state", a.state.value_or("")},
                                         {"profile", a.profile.value_or("")},
                                         {"hostlist", a.target},
                                         {"limit", std::to_string(want)},
                                         {"after", after}}));
    if (!r.ok()) return Fail(ctx, r.status());
    for (auto& n : (*r)["nodes"]) nodes.push_back(std::move(n));
    total = r->value("total", static_cast<int64_t>(nodes.size()));
    after = r->value("next", "");
    if (after.empty() || (a.limit > 0 && static_cast<int64_t>(nodes.size()) >= a.limit)) break;
  }
  if (a.json) {
    const size_t count = nodes.size();
    PrintJson(ctx, json{{"nodes", std::move(nodes)}, {"count", count}, {"total", total}});
  } else if (nodes.empty()) {
    bool filtered = a.state || a.profile || !a.target.empty();
    ctx.out << (filtered ? "no nodes match\n"
                         : "no nodes (enroll one: provisionctl node add <hostname> --mac <MAC>)\n");
  } else {
    ctx.out << RenderNodeTable(nodes, NowMs());
    if (static_cast<int64_t>(nodes.size()) < total)
      ctx.out << nodes.size() << " of " << total << " nodes shown (--limit)\n";
  }
  return kExitOk;
}

int RunNodeShow(Context& ctx, const Args& a) {
  auto node = ctx.client.Get(NodePath(a.target));
  if (!node.ok()) return Fail(ctx, node.status());
  if (a.json) {
    PrintJson(ctx, *node);
    return kExitOk;
  }
  auto events = ctx.client.Get(
      kApi + "/events" + QueryString({{"node", node->value("mac", a.target)}, {"last", "20"}}));
  if (!events.ok()) return Fail(ctx, events.status());
  ctx.out << RenderNode(*node, events->value("events", json::array()), NowMs());
  return kExitOk;
}

int RunNodeWhy(Context& ctx, const Args& a) {
  auto r = ctx.client.Get(NodePath(a.target) + "/why");
  if (!r.ok()) return Fail(ctx, r.status());
  if (a.json)
    PrintJson(ctx, *r);
  else
    ctx.out << RenderWhy(*r);
  return kExitOk;
}

// GET .../console pages: `boot` 0 is the latest; `after` the cursor.
int RunNodeConsole(Context& ctx, const Args& a) {
  const std::string boot = a.boot ? std::to_string(*a.boot) : "";
  int64_t after = 0, shown_boot = -1;
  auto print = [&](const json& page) {
    for (const auto& l : page.value("lines", json::array())) {
      if (a.json) {
        ctx.out << l.dump() << "\n";
        continue;
      }
      if (int64_t b = l.value("boot", int64_t{0}); b != shown_boot) {
        ctx.out << "-- boot " << b << " --\n";
        shown_boot = b;
      }
      ctx.out << RenderConsoleLine(l) << "\n";
    }
    ctx.out << std::flush;
    after = page.value("next", after);
  };
  // What there is now, page by page.
  for (;;) {
    auto r = ctx.client.Get(NodePath(a.target) + "/console" +
                            QueryString({{"boot", boot}, {"after", std::to_string(after)}}));
    if (!r.ok()) return Fail(ctx, r.status());
    if (!r->value("enabled", true))
      return Fail(ctx, Status::Error(Code::kUnavailable,
                                     "provisiond runs no network console (console.listen)"));
    const size_t n = r->value("lines", json::array()).size();
    if (n == 0 && after == 0 && !a.follow && !a.json)
      ctx.out << "no console lines for " << a.target << (boot.empty() ? "" : " in boot " + boot)
              << " (its kernel sends them once the initrd has the network)\n";
    print(*r);
    if (n < 5000) break;  // the API's page
  }
  if (!a.follow) return kExitOk;
  InterruptScope interrupt(ctx.client);
  while (!interrupt.interrupted()) {
    auto r = ctx.client.Get(NodePath(a.target) + "/console" +
                                QueryString({{"boot", boot},
                                             {"after", std::to_string(after)},
                                             {"wait", std::to_string(kEventWaitS)}}),
                            kEventWaitS + 15);
    if (interrupt.interrupted()) break;
    if (!r.ok()) return Fail(ctx, r.status());
    print(*r);
  }
  return kExitOk;
}

int RunNodeAdd(Context& ctx, const Args& a) {
  json body = {{"hostname", a.target}, {"mac", a.mac}};
  if (a.ip) body["ip"] = *a.ip;
  if (a.profile) body["profile"] = *a.profile;
  if (a.uefi_loader && *a.uefi_loader != "default") body["uefi_loader"] = *a.uefi_loader;
  if (a.power) {
    // Enrolled with its power driver or not at all: provisiond checks the
    // spec before it adds the node.
    auto parsed = ParsePowerSpec(*a.power);
    if (!parsed.ok())
      return UsageError(ctx, "--power '" + *a.power + "': " + parsed.status().message());
    if (!parsed->empty()) body["power"] = *parsed;
  }
  auto r = ctx.client.Post(kApi + "/nodes", &body);
  if (!r.ok()) return Fail(ctx, r.status());
  const std::string hostname = r->value("hostname", a.target);
  ctx.out << "enrolled " << hostname << " (" << r->value("mac", a.mac) << ")";
  if (std::string profile = r->value("profile", ""); !profile.empty())
    ctx.out << ", profile " << profile;
  if (std::string l = r->value("uefi_loader", ""); !l.empty()) ctx.out << ", UEFI loader " << l;
  if (std::string power = FormatPowerSpec(r->value("power", json::object())); !power.empty())
    ctx.out << ", power " << power;
  ctx.out << "\n";
  return kExitOk;
}

int RunNodeSet(Context& ctx, const Args& a) {
  auto names = NodeNames(a.target);
  if (!names.ok()) return UsageError(ctx, names.status().message());
  json body = json::object();
  if (a.ip) body["ip"] = *a.ip;
  if (a.hostname) body["hostname"] = *a.hostname;
  if (a.profile) body["profile"] = *a.profile;
  if (a.no_profile) body["profile"] = "";
  if (a.state) body["state"] = *a.state;
  if (a.reason) body["reason"] = *a.reason;
  if (a.host_key) body["host_key"] = *a.host_key;
  if (a.uefi_loader) body["uefi_loader"] = *a.uefi_loader == "default" ? "" : *a.uefi_loader;
  if (a.power) {
    auto power = ParsePowerSpec(*a.power);
    if (!power.ok())
      return UsageError(ctx, "--power '" + *a.power + "': " + power.status().message());
    body["power"] = *power;
  }
  if (body.empty())
    return UsageError(ctx,
                      "nothing to change: give --ip, --hostname, --profile, --no-profile, "
                      "--state, --host-key, --power or --uefi-loader");
  if ((a.ip || a.hostname) && names->size() > 1)
    return UsageError(ctx, "--ip and --hostname name one node, but '" + a.target + "' names " +
                               std::to_string(names->size()));
  // A BMC address belongs to one node; giving it to several is a typo.
  if (body.contains("power") && body["power"].contains("address") && names->size() > 1)
    return UsageError(ctx, "--power with an address names one node's BMC, but '" + a.target +
                               "' names " + std::to_string(names->size()));
  return ForEachNode(ctx, *names, [&](const std::string& name) -> Result<std::string> {
    auto r = ctx.client.Patch(NodePath(name), body);
    if (!r.ok()) return r.status();
    return NodeSummary(name, *r);
  });
}

// One line for a node's health (NodeRecord::health as the API shows it).
std::string HealthLine(const json& health) {
  if (!health.is_object()) return "never checked";
  std::string line = health.value("status", "?");
  int passed = 0, total = 0;
  std::string failed;
  for (const auto& c : health.value("checks", json::array())) {
    ++total;
    if (c.value("status", "") == "ok") {
      ++passed;
    } else {
      failed += (failed.empty() ? "" : "; ") + c.value("name", "") + ": " + c.value("detail", "");
    }
  }
  line += " (" + std::to_string(passed) + "/" + std::to_string(total) + " checks passed)";
  return failed.empty() ? line : line + ": " + failed;
}

int RunNodeCheck(Context& ctx, const Args& a) {
  auto names = NodeNames(a.target);
  if (!a.target.empty() && a.target != "all" && !a.target.starts_with("@") && !names.ok())
    return UsageError(ctx, names.status().message());
  json body = {{"nodes", a.target}};
  auto started = ctx.client.Call("POST", kApi + "/health-checks", &body);
  if (!started.ok()) return Fail(ctx, started.status());
  std::string ids;
  for (const auto& run : (*started)["runs"])
    ids += (ids.empty() ? "" : ",") + std::to_string(run["id"].get<int64_t>());
  InterruptScope scope(ctx.client);
  const int64_t deadline = SteadyMs() + (a.timeout_s > 0 ? a.timeout_s : 3600) * 1000;
  json runs;
  while (true) {
    auto r = ctx.client.Get(kApi + "/runs" + QueryString({{"ids", ids}}));
    if (scope.interrupted()) {
      ctx.err << "provisionctl: stopped watching; the checks go on (provisionctl run list)\n";
      return kExitInterrupted;
    }
    if (!r.ok()) return Fail(ctx, r.status());
    runs = (*r)["runs"];
    bool running = false;
    for (const auto& run : runs) running |= run.value("status", "") == "running";
    if (!running) break;
    if (SteadyMs() > deadline) {
      ctx.err << "provisionctl: timed out; the checks go on (provisionctl run list)\n";
      return kExitFailed;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  int failed = 0;
  json shown = json::array();
  for (const auto& run : runs) {
    const std::string node = run.value("node", "");
    auto n = ctx.client.Get(NodePath(node));
    json health = n.ok() ? n->value("health", json()) : json();
    if (run.value("status", "") != "ok") ++failed;
    if (a.json)
      shown.push_back({{"node", node}, {"run", run.value("id", 0)}, {"health", health}});
    else
      ctx.out << node << ": " << HealthLine(health) << " (run " << run.value("id", 0) << ")\n";
  }
  if (a.json) PrintJson(ctx, json{{"nodes", shown}, {"failed", failed}});
  return failed ? kExitFailed : kExitOk;
}

int RunNodeRm(Context& ctx, const Args& a) {
  auto names = NodeNames(a.target);
  if (!names.ok()) return UsageError(ctx, names.status().message());
  return ForEachNode(ctx, *names, [&](const std::string& name) -> Result<std::string> {
    auto r = ctx.client.Delete(NodePath(name) + (a.purge ? "?purge=true" : ""));
    if (!r.ok()) return r.status();
    return r->value("result", std::string("done"));
  });
}

int RunNodePower(Context& ctx, const Args& a) {
  auto names = NodeNames(a.target);
  if (!names.ok()) return UsageError(ctx, names.status().message());
  const json body = {{"action", a.action}};
  return ForEachNode(ctx, *names, [&](const std::string& name) -> Result<std::string> {
    auto r = ctx.client.Call("POST", NodePath(name) + "/power", &body, kPowerTimeoutS);
    if (!r.ok()) return r.status();
    return r->value("action", a.action) + " (" + r->value("result", std::string("done")) + ")";
  });
}

int RunNodeAdopt(Context& ctx, const Args& a) {
  const std::string path = NodePath(a.target) + "/adopt";
  std::string key = a.host_key.value_or("");
  if (key.empty()) {
    const json probe = json::object();
    auto shown = ctx.client.Call("POST", path, &probe, 120);
    if (!shown.ok()) return Fail(ctx, shown.status());
    key = Str(*shown, "host_key");
    ctx.out << a.target << " at " << Str(*shown, "ip") << " shows the host key\n  " << key << "\n  "
            << Str(*shown, "fingerprint") << "\n";
    if (!a.yes) {
      if (!ctx.interactive)
        return UsageError(ctx,
                          "not adopted: stdin is not a terminal, so there is no one to "
                          "confirm the key; pass --yes to take the key shown, or "
                          "--host-key KEY");
      ctx.out << "Is this the machine's key (ssh-keygen -lf on it shows it)? Adopt it? [y/N] "
              << std::flush;
      std::string answer;
      std::getline(ctx.in, answer);
      if (answer != "y" && answer != "Y" && answer != "yes") {
        ctx.err << "provisionctl: not adopted\n";
        return kExitFailed;
      }
    }
  }
  json body = {{"host_key", key}};
  if (a.password) {
    const std::string login = a.user.empty() ? "the SSH user" : a.user;
    std::string password;
    if (ctx.interactive) {
      // Asked on the terminal without echo, like ssh and sudo ask.
      ctx.out << login << "'s password on " << a.target
              << " (used once, kept nowhere): " << std::flush;
      termios before{};
      const bool tty = tcgetattr(STDIN_FILENO, &before) == 0;
      if (tty) {
        termios quiet = before;
        quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
      }
      std::getline(ctx.in, password);
      if (tty) tcsetattr(STDIN_FILENO, TCSAFLUSH, &before);
      ctx.out << "\n";
    } else {
      std::getline(ctx.in, password);  // one line on stdin
    }
    if (password.empty()) return UsageError(ctx, "not adopted: no password given");
    body["password"] = password;
    if (!a.user.empty()) body["user"] = a.user;
  } else if (!a.user.empty()) {
    return UsageError(ctx, "--user goes with --password");
  }
  auto r = ctx.client.Call("POST", path, &body, 300);
  if (!r.ok()) return Fail(ctx, r.status());
  if (a.json) {
    PrintJson(ctx, *r);
    return kExitOk;
  }
  ctx.out << a.target << ": adopted, " << Str(*r, "state")
          << (Str(*r, "reason").empty() ? "" : " (" + Str(*r, "reason") + ")")
          << (Str(*r, "profile").empty() ? "; no profile"
                                         : "; configured with profile " + Str(*r, "profile"))
          << " (provisionctl wait " << a.target << ")\n";
  return kExitOk;
}

int RunNodeStorageWipe(Context& ctx, const Args& a) {
  const std::string what =
      a.disks.empty() ? "every disk its profile's volumes take" : Join(a.disks, ", ");
  if (!a.yes) {
    if (!ctx.interactive)
      return UsageError(ctx,
                        "not allowed: stdin is not a terminal, so there is no one to confirm; "
                        "pass --yes");
    ctx.out << "At its next boot, " << a.target << " erases what " << what
            << " holds, unless it is the volume already. Allow? [y/N] " << std::flush;
    std::string answer;
    std::getline(ctx.in, answer);
    if (answer != "y" && answer != "Y" && answer != "yes") {
      ctx.err << "provisionctl: not allowed\n";
      return kExitFailed;
    }
  }
  json body = json::object();
  if (!a.disks.empty()) body["disks"] = a.disks;
  auto r = ctx.client.Post(NodePath(a.target) + "/storage/wipe", &body);
  if (!r.ok()) return Fail(ctx, r.status());
  if (a.json) {
    PrintJson(ctx, *r);
    return kExitOk;
  }
  ctx.out << a.target << ": wipe allowed at its next boot (" << what
          << "); boot it again to use it: provisionctl node power cycle " << a.target << "\n";
  return kExitOk;
}

}  // namespace

std::vector<Verb> NodeVerbs() {
  return {
      {"node list", "node list [HOSTLIST] [--state STATE] [--profile VERSION] [--limit N] [--json]",
       "List nodes, optionally only some of them",
       R"(Lists the nodes in the inventory as a table: HOSTNAME MAC IP STATE PROFILE IMAGE
LAST-SEEN. A failed node (or one in maintenance) has its reason at the end of the
line. HOSTLIST limits the list to the nodes it names, by hostname or MAC
(node[0-3,7], gpu[01-04]); --state and --profile filter further; --limit N shows
the first N (sorted by hostname, discovered nodes last). The list is fetched in
pages of 1,000. With --json: {"nodes": [...], "count": N, "total": MATCHING}.

Examples:
  provisionctl node list
  provisionctl node list 'node[0-3]' --state failed
  provisionctl node list --profile v0.2 --json | jq -r '.nodes[].hostname')",
       [](CLI::App& c, Args& a) {
         c.add_option("hostlist", a.target, "Only these nodes (hostlist, hostnames or MACs)")
             ->type_name("HOSTLIST");
         c.add_option("--state", a.state, "Only nodes in this state")
             ->type_name("STATE")
             ->check(CLI::IsMember(kNodeStates));
         c.add_option("--profile", a.profile, "Only nodes assigned this profile version")
             ->type_name("VERSION");
         c.add_option("--limit", a.limit, "Show at most N nodes")
             ->type_name("N")
             ->check(CLI::PositiveNumber);
         AddJsonFlag(c, a);
       },
       RunNodeList},

      {"node show", "node show NODE [--json]", "Show one node, its facts and its last 20 events",
       R"(Shows everything provisiond knows about one node, named by hostname or MAC: its
addresses, state (and why, when failed), profile and image, SSH host key, when it
was last seen, the facts it reported (CPU, memory, PCI devices...), and its last
20 events, so you can see where it stopped. --json prints the node object alone.

Examples:
  provisionctl node show node0
  provisionctl node show 52:54:00:12:34:56 --json)",
       [](CLI::App& c, Args& a) {
         c.add_option("node", a.target, "Hostname or MAC")->type_name("NODE")->required();
         AddJsonFlag(c, a);
       },
       RunNodeShow},

      {"node why", "node why NODE [--json]",
       "Show how far a node's latest boot got, and what provisiond waits for",
       R"(Shows the node's latest boot attempt stage by stage, as provisiond saw it: dhcp
(its DHCP request), then either ipxe-binary (its firmware fetched iPXE) and script
(iPXE asked for its boot script), or the signed chain of UEFI machines: shim
(its firmware fetched shim), grub (shim fetched grub) and grub-config (grub read
the node's config), all by TFTP; then kernel, initrd, network (the initrd's
DHCP), overlay (the initrd fetched its root and
overlay) and hello (the booted system phoned home), each with the time since
the attempt began and what was seen (an address, a file). Boot errors of the
attempt follow, then the kernel command line the node is given (its token
hidden), and last one sentence saying where the node stopped and what
provisiond waits for next. A stage earlier than the last one starts a new
attempt, so only the latest is shown; 'provisionctl events --node NODE' has the
history.

Examples:
  provisionctl node why node0
  provisionctl node why 52:54:00:12:34:56 --json | jq -r .next_stage)",
       [](CLI::App& c, Args& a) {
         c.add_option("node", a.target, "Hostname or MAC")->type_name("NODE")->required();
         AddJsonFlag(c, a);
       },
       RunNodeWhy},

      {"node console", "node console NODE [--boot N] [--follow] [--json]",
       "Print what a node printed as it booted (the network console)",
       R"(Prints the node's network console: what its kernel printed (netconsole), with
the initrd's steps and the journal of the booted system, which both go to the
kernel log, and a line for each boot stage provisiond served or saw (its
source is provisiond: Debian's iPXE and grub send no console of their own).
One line each: TIME (local, milliseconds) SOURCE (provisiond, kernel, initrd,
system) TEXT. Without --boot the latest boot; boots are numbered from 1 and
the newest few are kept (console.keep_boots). --follow keeps printing lines as
they come, across reboots, until Ctrl-C. --json prints one JSON object per line.
The kernel sends its lines once the initrd has the network (they include
everything it printed before); 'provisionctl node why' quotes the last ones.

Examples:
  provisionctl node console node0
  provisionctl node console node0 --follow
  provisionctl node console node0 --boot 3 --json)",
       [](CLI::App& c, Args& a) {
         c.add_option("node", a.target, "Hostname or MAC")->type_name("NODE")->required();
         c.add_option("--boot", a.boot, "That boot (1 the first kept), not the latest")
             ->type_name("N")
             ->check(CLI::Range(int64_t{1}, int64_t{1} << 52).description(""));
         c.add_flag("--follow,-f", a.follow, "Keep printing lines as they come (Ctrl-C stops)");
         AddJsonFlag(c, a);
       },
       RunNodeConsole},

      {"node add",
       "node add HOSTNAME --mac MAC [--ip ADDRESS] [--profile VERSION] [--power SPEC] "
       "[--uefi-loader grub|ipxe]",
       "Enroll a node by hostname and MAC",
       R"(Enrolls a node: provisiond will answer its netboot requests from now on. The MAC
may be written aa:bb:cc:dd:ee:ff, AA-BB-..., aabb.ccdd.eeff or bare hex. Without
--profile the node gets the applied profile when that profile covers it. A node
provisiond has only discovered on the network (or a retired one) is enrolled in
place, keeping its history. --power sets its power driver, as node set --power
does; provisiond refuses the node when the spec is wrong. --uefi-loader chooses the loader
its UEFI firmware gets, as node set --uefi-loader does.

Examples:
  provisionctl node add node0 --mac 52:54:00:12:34:56
  provisionctl node add node4 --mac 5254.0012.3457 --ip 10.0.0.14 --profile v0.2
  provisionctl node add node5 --mac 52:54:00:12:34:58 --power driver=ipmi,address=10.0.0.105
  provisionctl node add node6 --mac 52:54:00:12:34:59 --uefi-loader ipxe)",
       [](CLI::App& c, Args& a) {
         c.add_option("hostname", a.target, "The node's hostname")
             ->type_name("HOSTNAME")
             ->required();
         c.add_option("--mac", a.mac, "Its boot interface's MAC address")
             ->type_name("MAC")
             ->required();
         c.add_option("--ip", a.ip, "Its address, if it has a fixed one")->type_name("ADDRESS");
         c.add_option("--profile", a.profile, "Assign this profile version")->type_name("VERSION");
         c.add_option("--power", a.power,
                      "Power driver and its settings (driver=NAME,KEY=VALUE...), or none")
             ->type_name("SPEC");
         c.add_option("--uefi-loader", a.uefi_loader,
                      "What its UEFI firmware loads: grub (signed), ipxe, or default")
             ->type_name("LOADER");
       },
       RunNodeAdd},

      {"node set",
       "node set HOSTLIST [--ip ADDRESS] [--hostname NAME] [--profile VERSION | --no-profile] "
       "[--state STATE [--reason TEXT]] [--host-key KEY] [--power SPEC] "
       "[--uefi-loader grub|ipxe|default]",
       "Change nodes: address, name, profile, operator state, host key, power driver, loader",
       R"(Changes each node the hostlist names. --ip and --hostname apply to one node only.
--profile assigns a profile version, --no-profile releases the node from its
profile. --state sets one of the states an operator may set (enrolled,
maintenance, retired; the others follow from what provisiond observes), with
--reason saying why. --host-key replaces the SSH host key provisiond pins for the
node (after a reinstall). --power sets how provisiond powers the node (node
power): driver=NAME and the driver's settings as key=value, a bare word for a
driver without settings, or "none" to remove it; on=, off=, cycle= and status=
chain drivers per action, tried in order until one succeeds (off=ssh+webhook).
provisiond has the drivers and checks the spec (docs/power.md lists them and
their settings: Wake-on-LAN, the node's own OS over SSH, smart plugs over
HTTP, IPMI, Redfish, a program); its error is printed as it comes. Secrets are
named (secret=NAME, set with provisionctl secret set), never given.
--uefi-loader chooses what the node's UEFI firmware loads by PXE: grub (shim
and grub, signed: boots with Secure Boot on or off) or ipxe (Secure Boot off);
default goes back to its profile's uefi_loader, else provisiond's
dhcp.uefi_loader. BIOS firmware always gets iPXE. Each
node's result or error is printed; a failure of one node does not stop the
others, and the exit status is 1 if any failed.

Examples:
  provisionctl node set 'node[0-3]' --state maintenance --reason 'recabling rack 2'
  provisionctl node set 'node[0-3]' --state enrolled
  provisionctl node set node2 --ip 10.0.0.12
  provisionctl node set 'node[4-7]' --no-profile
  provisionctl node set 'node[0-3]' --power wol
  provisionctl node set node4 --power driver=ipmi,address=10.0.0.104
  provisionctl node set node5 --power driver=webhook,preset=tasmota,host=10.0.0.50,on=wol+webhook
  provisionctl node set 'node[8-9]' --uefi-loader ipxe)",
       [](CLI::App& c, Args& a) {
         c.add_option("hostlist", a.target, "The nodes to change (hostlist, hostname or MAC)")
             ->type_name("HOSTLIST")
             ->required();
         c.add_option("--ip", a.ip, "New address (one node only)")->type_name("ADDRESS");
         c.add_option("--hostname", a.hostname, "New hostname (one node only)")->type_name("NAME");
         auto* profile = c.add_option("--profile", a.profile, "Assign this profile version")
                             ->type_name("VERSION");
         c.add_flag("--no-profile", a.no_profile, "Release the nodes from their profile")
             ->excludes(profile);
         // Any state name parses; provisiond refuses the states only it may
         // set (ready, failed...) and says why, which is not a usage error.
         auto* state = c.add_option("--state", a.state,
                                    "Set an operator state: enrolled, maintenance or retired")
                           ->type_name("STATE")
                           ->check(CLI::IsMember(kNodeStates).description(""));
         c.add_option("--reason", a.reason, "Why (with --state)")->type_name("TEXT")->needs(state);
         c.add_option("--host-key", a.host_key, "The node's SSH host key, as in known_hosts")
             ->type_name("KEY");
         c.add_option("--power", a.power,
                      "Power driver and its settings (driver=NAME,KEY=VALUE...), or none")
             ->type_name("SPEC");
         c.add_option("--uefi-loader", a.uefi_loader,
                      "What its UEFI firmware loads: grub (signed), ipxe, or default")
             ->type_name("LOADER");
       },
       RunNodeSet},

      {"node check", "node check HOSTLIST [--timeout SECONDS] [--json]",
       "Run the nodes' health checks now, and keep their results",
       R"(Runs the health checks of each node's profile on the nodes of HOSTLIST (all of
them, not only up to the first failure, as configure does), as a run of kind
"health" per node. The results are kept on the node's row (node show, the web
page) and on the node itself: a line per check appended to
/var/log/provision-health.log and the status ("ok" or "failed: CHECKS") in
/var/log/provision-health.log.status, which `provisionctl gather` collects.
A node's state does not change. The exit status is 1 if any node failed a
check or could not be reached. HOSTLIST may also be "all" or "@VERSION".

Examples:
  provisionctl node check 'lab[0-1]'
  provisionctl node check all && provisionctl gather all /var/log/provision-health.log.status ./health)",
       [](CLI::App& c, Args& a) {
         c.add_option("hostlist", a.target, "The nodes to check")
             ->type_name("HOSTLIST")
             ->required();
         c.add_option("--timeout", a.timeout_s, "Stop watching after this long (default 3600)")
             ->type_name("SECONDS");
         AddJsonFlag(c, a);
       },
       RunNodeCheck},

      {"node power", "node power on|off|cycle|status HOSTLIST",
       "Power nodes on or off, cycle them (off, then on), or ask whether they are on",
       R"(Asks provisiond to power each node the hostlist names on, off, or cycle it,
or to say whether it is on, through the node's power drivers (node set --power;
node show prints which driver does what, and which one is tried next when it
fails). provisiond answers when the driver is done, and records each attempt
as a power event, with the driver that did it. Each node's result or error is
printed; a node whose driver fails (a BMC that does not answer) does not stop
the others, and the exit status is 1 if any failed. Cycling a node is how it
boots a newly assigned image (profile apply says which nodes need it).

Examples:
  provisionctl node power cycle node0
  provisionctl node power on 'node[0-7]'
  provisionctl node power off node3
  provisionctl node power status 'node[0-7]')",
       [](CLI::App& c, Args& a) {
         c.add_option("action", a.action,
                      "What to do: on, off, cycle (off, then on), or status (is it on?)")
             ->type_name("on|off|cycle|status")
             ->required()
             ->check(CLI::IsMember({"on", "off", "cycle", "status"}).description(""));
         c.add_option("hostlist", a.target, "The nodes (hostlist, hostname or MAC)")
             ->type_name("HOSTLIST")
             ->required();
       },
       RunNodePower},

      {"node adopt", "node adopt NODE [--host-key KEY | --yes] [--password [--user NAME]] [--json]",
       "Adopt a machine that boots its own installed OS, over SSH",
       R"(A machine that keeps its own OS (a workstation with a desktop, the control
node itself) is configured by its profile like a netbooted node, without being
netbooted. Enroll it with its address (node add NAME --mac MAC --ip ADDRESS
--profile VERSION) and put provisiond's control key in root's authorized_keys
on it (its public half is provisiond's data_dir/ssh/id_ed25519.pub), or give
--password: provisionctl asks for a password once (on stdin when it is not a
terminal) and provisiond logs in with it (as --user NAME, through sudo, when
root may not log in with a password) only to put its key there; the password
is kept nowhere. Then adopt it: provisiond connects, shows the host key the machine offers, and
once you confirm it (like ssh's first connection) pins it, collects the
machine's facts with provision-facts (sent over SSH, run, removed), and marks
it installed: it is never netbooted (its boot script, if it asks, boots its
disk). It goes booted, then configuring: its profile's image-stage (bake)
playbooks run on it first, as it has no image to bake them into, then the
node-stage ones and its health checks, to ready.

Examples:
  provisionctl node add node0 --mac 52:54:00:aa:00:01 --ip 10.0.0.10 --profile nvidia-slurm
  provisionctl node adopt node0
  provisionctl node adopt node0 --host-key "ssh-ed25519 AAAAC3Nza..."
  provisionctl node adopt node0 --password --user admin)",
       [](CLI::App& c, Args& a) {
         c.add_option("node", a.target, "The node (hostname or MAC)")
             ->type_name("NODE")
             ->required();
         c.add_option("--host-key", a.host_key, "The key the machine must show (its pub key line)")
             ->type_name("KEY");
         c.add_flag("-y,--yes", a.yes, "Take the key the machine shows without asking");
         c.add_flag("--password", a.password,
                    "Ask for a password to log in with once and install the control key");
         c.add_option("--user", a.user, "Log in as this user with --password (default: root)")
             ->type_name("NAME");
         c.add_flag("--json", a.json, "Print the node as JSON");
       },
       RunNodeAdopt},

      {"node storage wipe", "node storage wipe NODE [--disk BY-ID]... [--yes] [--json]",
       "Let a node's next boot wipe disks that hold something else",
       R"(A node whose profile has storage volumes (storage: in profile.yaml) never
formats a disk that holds anything but the volume: a partition table, another
filesystem, another array. Its boot then fails with the disk named (node why).
This allows its next boot to wipe those disks: the ones named by --disk (their
/dev/disk/by-id names, as node show lists them), or every disk its volumes take.
What they hold is erased; the permission is spent by that boot and recorded as
an event with who gave it. Boot the node again for it to take effect.

Examples:
  provisionctl node storage wipe node1 --disk nvme-Samsung_SSD_990_PRO_2TB_S7DNNJ0X
  provisionctl node storage wipe node1 --yes && provisionctl node power cycle node1)",
       [](CLI::App& c, Args& a) {
         c.add_option("node", a.target, "The node (hostname or MAC)")
             ->type_name("NODE")
             ->required();
         c.add_option("--disk", a.disks, "A disk's /dev/disk/by-id name (repeatable); none: all")
             ->type_name("BY-ID");
         c.add_flag("-y,--yes", a.yes, "Allow without asking");
         c.add_flag("--json", a.json, "Print the node as JSON");
       },
       RunNodeStorageWipe},

      {"node rm", "node rm HOSTLIST [--purge]", "Retire nodes, or remove them with --purge",
       R"(Retires each node the hostlist names: it keeps its row and history but is no
longer provisioned (enroll it again with node add). --purge deletes the row; its
events stay, by name. Each node's result or error is printed; the exit status is
1 if any failed.

Examples:
  provisionctl node rm node7
  provisionctl node rm 'node[4-7]' --purge)",
       [](CLI::App& c, Args& a) {
         c.add_option("hostlist", a.target, "The nodes (hostlist, hostname or MAC)")
             ->type_name("HOSTLIST")
             ->required();
         c.add_flag("--purge", a.purge, "Delete the nodes from the inventory");
       },
       RunNodeRm},
  };
}

}  // namespace prov::ctl
