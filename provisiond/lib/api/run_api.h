// API routes of the configuration over SSH: runs and their tasks, commands
// on many nodes, playbooks run by hand, configure a node, and the exports
// (hostfile, hostfile-ip, ansible-inventory, slurm-nodes).
#pragma once

#include <string>

#include "configure/configurator.h"
#include "http/http.h"
#include "profiles/inventory.h"

namespace prov {

void AddRunApiRoutes(Router& router, Inventory& inventory, Configurator& configurator,
                     const std::string& playbooks_dir);

// The node names a request's hostlist selects: a hostlist ("lab[01-04]"),
// a comma list, "all" (every enrolled node with an address) or "@<profile>".
Result<std::vector<std::string>> SelectNodes(Inventory& inventory, const std::string& selector);

// Renders one of the export formats over `nodes`.
Result<std::string> Export(const std::string& format, const std::vector<NodeRecord>& nodes);

}  // namespace prov
