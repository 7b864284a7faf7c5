// provisionctl export: the inventory in another tool's format.
#include <CLI/CLI.hpp>

#include "common.h"
#include "table.h"

namespace prov::ctl {
namespace {

int RunExport(Context& ctx, const Args& a) {
  auto r = ctx.client.Get(kApi + "/export/" + UrlEncode(a.format) +
                          QueryString({{"nodes", a.target}, {"json", "1"}}));
  if (!r.ok()) return Fail(ctx, r.status());
  ctx.out << r->value("text", "");
  return kExitOk;
}

}  // namespace

std::vector<Verb> ExportVerbs() {
  return {
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
}

}  // namespace prov::ctl
