// provisionctl profile list|show|plan|apply: the versioned hardware profiles,
// and applying one (plan, confirm, assign, then follow the configuration).
#include <CLI/CLI.hpp>

#include <istream>
#include <ostream>

#include "../output/format.h"
#include "../output/profile.h"
#include "common.h"
#include "table.h"
#include "wait.h"

namespace prov::ctl {
namespace {

using json = nlohmann::json;

std::string ProfilePath(const std::string& version) {
  return kApi + "/profiles/" + UrlEncode(version);
}

int RunProfileList(Context& ctx, const Args& a) {
  auto r = ctx.client.Get(kApi + "/profiles");
  if (!r.ok()) return Fail(ctx, r.status());
  if (a.json)
    PrintJson(ctx, *r);
  else
    ctx.out << RenderProfileTable(*r);
  return kExitOk;
}

int RunProfileShow(Context& ctx, const Args& a) {
  auto r = ctx.client.Get(ProfilePath(a.target));
  if (!r.ok()) return Fail(ctx, r.status());
  if (a.json)
    PrintJson(ctx, *r);
  else
    ctx.out << RenderProfile(*r);
  return kExitOk;
}

int RunProfilePlan(Context& ctx, const Args& a) {
  auto r = ctx.client.Get(ProfilePath(a.target) + "/plan");
  if (!r.ok()) return Fail(ctx, r.status());
  if (a.json)
    PrintJson(ctx, *r);
  else
    ctx.out << RenderPlan(*r);
  return kExitOk;
}

// Builds the derived image of a profile that bakes, following its progress;
// nothing to do when it is built.
int Bake(Context& ctx, const std::string& version) {
  auto status = ctx.client.Get(kApi + "/status");
  if (!status.ok()) return Fail(ctx, status.status());
  const int64_t after = status->value("last_event", int64_t{0});
  auto bake = ctx.client.Post(ProfilePath(version) + "/bake");
  if (!bake.ok()) return Fail(ctx, bake.status());
  const std::string ref = Str(*bake, "image");
  if (Bool(*bake, "built")) {
    ctx.out << "image reused: " << ref << " (baked from " << Str(*bake, "base") << ")\n";
    return kExitOk;
  }
  ctx.out << "baking " << ref << " from " << Str(*bake, "base")
          << " (the profile's image stage; 'provisionctl events --follow' shows it too)\n";
  return FollowBuild(ctx, ref.substr(0, ref.find('@')), after);
}

int RunProfileBake(Context& ctx, const Args& a) {
  return Bake(ctx, a.target);
}

int RunProfileApply(Context& ctx, const Args& a) {
  auto plan = ctx.client.Get(ProfilePath(a.target) + "/plan");
  if (!plan.ok()) return Fail(ctx, plan.status());
  // Without changes, what apply answers says it all.
  if (plan->value("changes", true)) ctx.out << RenderPlan(*plan);
  // Nothing to assign still configures the profile's nodes that are up and
  // not configured with it (a run that was interrupted, a failed node).
  if (plan->value("changes", true) && !a.yes) {
    if (!ctx.interactive)
      return UsageError(ctx,
                        "not applied: stdin is not a terminal, so there is no one to confirm; "
                        "pass --yes to apply without asking");
    ctx.out << "Apply? [y/N] " << std::flush;
    std::string answer;
    std::getline(ctx.in, answer);
    if (answer != "y" && answer != "Y" && answer != "yes") {
      ctx.err << "provisionctl: not applied\n";
      return kExitFailed;
    }
  }
  // A profile that bakes: its derived image is built first when its hash is
  // new (provisiond refuses to point nodes at an image that is not there).
  if (plan->contains("image") && Str((*plan)["image"], "action") == "rebuild") {
    int rc = Bake(ctx, a.target);
    if (rc != kExitOk) return rc;
  }
  auto applied = ctx.client.Post(ProfilePath(a.target) + "/apply");
  if (!applied.ok()) return Fail(ctx, applied.status());
  ctx.out << RenderApplied(*applied);
  std::vector<std::string> started;
  if (applied->contains("configure"))
    for (const auto& n : (*applied)["configure"].value("started", json::array()))
      started.push_back(n.get<std::string>());
  if (started.empty() || a.no_wait) return kExitOk;
  ctx.out << "configuring " << started.size() << " node(s) (Ctrl-C stops watching, not the runs):\n"
          << std::flush;
  return WaitForNodes(ctx, started, "ready", a.timeout_s > 0 ? a.timeout_s : 3600);
}

}  // namespace

std::vector<Verb> ProfileVerbs() {
  return {
      {"profile list", "profile list [--json]",
       "List the profiles provisiond can load, and which is applied",
       R"(Lists the versioned hardware profiles (profiles/<version>/profile.yaml) as a
table: VERSION APPLIED SHA256 (first 12 digits of the content hash, which covers
the playbooks it names) IMAGE NODES DESCRIPTION. "yes*" marks an applied profile
whose files changed since. Profiles that fail to load are listed with their
errors. --json adds the history of applied versions.

Examples:
  provisionctl profile list
  provisionctl profile list --json | jq '.history')",
       [](CLI::App& c, Args& a) { AddJsonFlag(c, a); }, RunProfileList},

      {"profile show", "profile show VERSION [--json]", "Show a profile in full",
       R"(Shows one profile: the hardware it expects per node (accelerators, memory), the
image, kernel arguments, overlay files, the playbooks in order with their
variables, the health checks that gate the ready state, and the nodes it covers.

Examples:
  provisionctl profile show v0.2
  provisionctl profile show lab --json)",
       [](CLI::App& c, Args& a) {
         c.add_option("version", a.target, "Profile version")->type_name("VERSION")->required();
         AddJsonFlag(c, a);
       },
       RunProfileShow},

      {"profile plan", "profile plan VERSION [--json]",
       "Show what applying a profile would change, node by node",
       R"(Shows what `profile apply VERSION` would do, without changing anything: the
version and hash applied now against this one, then per node its action and why:
assign (gets the profile; an image change means a reboot, then its playbooks
run), unchanged, release (no longer covered), or missing (named by the profile
but not enrolled). For a profile that bakes, it says whether its derived image
is reused or rebuilt, and what changed.

Examples:
  provisionctl profile plan v0.2
  provisionctl profile plan v0.1 --json)",
       [](CLI::App& c, Args& a) {
         c.add_option("version", a.target, "Profile version")->type_name("VERSION")->required();
         AddJsonFlag(c, a);
       },
       RunProfilePlan},

      {"profile bake", "profile bake VERSION",
       "Build the derived image of a profile's bake playbooks, ahead of apply",
       R"(A profile's `bake` playbooks run at image stage: once, inside a copy of its
base image's root tree on the control node; the result is the derived image
its nodes boot, named <image>.baked@<hash of the base version and of every
bake playbook, file, template and var>. `profile apply` builds it when that
hash is new; `profile bake` does only that, with its progress, so the build
can happen before the apply (or on a control node with an uplink). Building
an unchanged one again does nothing ("image reused").

Examples:
  provisionctl profile bake lab-slurm
  provisionctl profile plan lab-slurm      # "image reused" or "image rebuilt: ...")",
       [](CLI::App& c, Args& a) {
         c.add_option("version", a.target, "Profile version")->type_name("VERSION")->required();
       },
       RunProfileBake},

      {"profile apply", "profile apply VERSION [--yes]",
       "Apply a profile: show the plan, confirm, assign and release nodes",
       R"(Shows the plan, asks for confirmation (or takes --yes), then applies the
profile: provisiond records the version with its content hash and assigns and
releases nodes in one transaction, and the result is printed per node. Applying
a version that is applied and unchanged does nothing; applying the previous
version is the rollback. Without a terminal on stdin, --yes is required. A
profile with bake playbooks gets its derived image built first when it is new
(see profile bake), with the build's progress.

provisiond records the assignment and serves a node its new image at its next
network boot, but does not restart nodes by itself: the output names each node
whose image changes, with the command that reboots it (node power cycle).
Nodes that are up (booted, ready or failed) are configured at once over SSH:
configuring, the profile's playbooks in order, its health checks, then ready
(or failed with the task and output that failed); provisionctl shows each
node's progress until all are done (--no-wait returns at once). Nodes that are
down are configured when they phone home. A node already configured with the
same profile content since its last boot runs nothing; applying an unchanged
version again still finishes interrupted or failed configurations.

Examples:
  provisionctl profile apply v0.2
  provisionctl profile apply v0.1 --yes)",
       [](CLI::App& c, Args& a) {
         c.add_option("version", a.target, "Profile version")->type_name("VERSION")->required();
         c.add_flag("-y,--yes", a.yes, "Apply without asking");
         c.add_flag("--no-wait", a.no_wait, "Do not wait for the nodes being configured");
         c.add_option("--timeout", a.timeout_s, "Stop waiting after this many seconds")
             ->type_name("SECONDS");
       },
       RunProfileApply},
  };
}

}  // namespace prov::ctl
