// GET /api/v1/export/{format}: the nodes as a hostfile, a hostfile of
// addresses, an Ansible inventory or slurm.conf NodeName lines. Also how a
// request names nodes (a hostlist, "all", "@<profile>"), which cmd and
// playbook runs share.
#pragma once

#include <string>
#include <vector>

#include "api/context.h"
#include "store/store.h"

namespace prov {

HttpResponse GetExport(const ApiContext& context, const HttpRequest& request);

// GET /api/v1/sd/prometheus[?exporter=node|dcgm]: Prometheus HTTP service
// discovery of the nodes' exporters (every enrolled node with an address):
// node_exporter on 9100, and NVIDIA's DCGM exporter on 9400 where the facts
// show an NVIDIA GPU, each target labelled with hostname, mac, profile,
// state, accelerator (the models, "none") and exporter.
HttpResponse GetPrometheusTargets(const ApiContext& context, const HttpRequest& request);

// The service discovery answer over `nodes` (exporter "" : all of them).
nlohmann::json PrometheusTargets(const std::vector<NodeRecord>& nodes, const std::string& exporter);

// The node names a request's selector selects: a hostlist ("lab[01-04]"),
// a comma list, "all" (every enrolled node with an address) or "@<profile>".
Result<std::vector<std::string>> SelectNodes(Inventory& inventory, const std::string& selector);

// The nodes a body's "nodes" field (a selector, required) selects.
Result<std::vector<std::string>> SelectNodesField(Inventory& inventory, const nlohmann::json& body);

// Renders one of the export formats over `nodes`.
Result<std::string> Export(const std::string& format, const std::vector<NodeRecord>& nodes);

}  // namespace prov
