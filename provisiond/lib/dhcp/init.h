// `provisiond init`: the first config of a control node, from its cluster
// interface. Reads the interface's address and subnet, probes for another
// DHCP server (one that leases: provisiond goes proxy; none: full, with a
// lease range in the subnet), writes the config through a temporary file
// and a rename, and makes the first admin token. An operator's config is
// never overwritten without --force (the package's untouched default is).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "base/result.h"
#include "dhcp/preflight.h"

namespace prov {

struct InitOptions {
  std::string interface;
  std::string config_path;     // where to write the config
  std::string default_config;  // the package's default: may be replaced without --force
  std::string data_dir;
  std::string dhcp_mode = "auto";  // auto (probe), full or proxy
  std::string range;               // FIRST-LAST in full mode; empty: from the subnet
  int port = 8080;
  bool force = false;
  int probe_ms = 4000;
  // The probe (ProbeDhcpServers) and the interface's address
  // (LookupInterface); tests give their own.
  std::function<Result<std::vector<DhcpServerSeen>>(const std::string&, int)> probe;
  std::function<Result<InterfaceAddress>(const std::string&)> lookup = [](const std::string& name) {
    return LookupInterface(name);
  };
};

struct InitResult {
  std::string config_text;
  DhcpMode mode = DhcpMode::kFull;
  std::string reason;  // why that mode, for people
  std::string range;   // full mode's lease range
  std::string tokens_file;
  bool token_created = false;
  std::string backup_of_old;       // where the replaced config went, if any
  std::vector<std::string> notes;  // warnings for the operator
  std::vector<std::string> next;   // the commands to run next
};

Result<InitResult> InitControlNode(const InitOptions& options);

}  // namespace prov
