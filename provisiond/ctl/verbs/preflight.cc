// provisionctl preflight: provisiond's checks of the boot network, run now.
#include <CLI/CLI.hpp>

#include "../output/preflight.h"
#include "common.h"
#include "table.h"

namespace prov::ctl {
namespace {

int RunPreflight(Context& ctx, const Args& a) {
  auto r = ctx.client.Get(kApi + "/preflight");
  if (!r.ok()) {
    if (r.status().code() != Code::kConflict) return Fail(ctx, r.status());
    // provisiond runs without a boot network: say what would give it one.
    ctx.err << "provisionctl: " << r.status().message() << "\n"
            << "provisionctl: there is no boot network to check; set 'interface' in provisiond's "
               "config to the cluster interface and restart it ('provisiond "
               "--describe-config' lists the settings)\n";
    return kExitFailed;
  }
  if (a.json)
    PrintJson(ctx, *r);
  else
    ctx.out << RenderPreflight(*r);
  return r->value("ok", false) ? kExitOk : kExitFailed;
}

}  // namespace

std::vector<Verb> PreflightVerbs() {
  return {
      {"preflight", "preflight [--json]",
       "Check that this machine is ready to serve the boot network",
       R"(Runs provisiond's checks of the boot network now, on the control node: the
cluster interface and its address, the DHCP range against the enrolled nodes
(full DHCP mode), whether nodes can reach provisiond's listen address, the iPXE
binaries, dnsmasq, whether dnsmasq (which runs as nobody) can reach the data
directory, and other DHCP servers on the interface (one DHCPDISCOVER, answers
awaited for a second or two). Each check prints as "ok" or "FAIL", its name and
what was found, and the last line counts the failures, naming those that would
keep provisiond from starting (it runs the same checks at start). The exit
status is 1 if any check failed, so a script can gate on it. Without an
'interface' in its config provisiond serves no boot network, and preflight says
so and exits 1.

Examples:
  provisionctl preflight
  provisionctl preflight --json | jq -r '.checks[] | select(.ok | not) | .name')",
       [](CLI::App& c, Args& a) { AddJsonFlag(c, a); }, RunPreflight},
  };
}

}  // namespace prov::ctl
