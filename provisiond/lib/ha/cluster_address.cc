#include "ha/cluster_address.h"

#include <chrono>
#include <thread>

#include "base/netinfo.h"
#include "base/process.h"

namespace prov {
namespace {

// iproute2's ip, as on every Debian machine.
Status RunIp(const std::vector<std::string>& args, const std::string& what,
             const std::string& tolerated) {
  ProcessSpec spec;
  spec.argv = {"/sbin/ip"};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  auto r = RunProcess(spec, 10000);
  if (!r.ok()) return r.status();
  if (r->exit_code == 0 || r->output.find(tolerated) != std::string::npos) return Status::Ok();
  return Status::Internal(what + ": ip said: " + r->output.substr(0, 500));
}

}  // namespace

Result<ClusterAddress> ParseClusterAddress(const std::string& cidr, const std::string& interface) {
  const size_t slash = cidr.find('/');
  ClusterAddress a;
  a.interface = interface;
  a.address = cidr.substr(0, slash);
  if (!ParseIpv4(a.address).ok() || slash == std::string::npos)
    return Status::Invalid("control.address: '" + cidr +
                           "' is not an IPv4 address with its prefix length (10.99.0.1/24)");
  try {
    size_t used = 0;
    a.prefix = std::stoi(cidr.substr(slash + 1), &used);
    if (used != cidr.size() - slash - 1) throw std::invalid_argument("trailing");
  } catch (const std::exception&) {
    a.prefix = -1;
  }
  if (a.prefix < 8 || a.prefix > 30)
    return Status::Invalid("control.address: the prefix length of '" + cidr +
                           "' must be 8 to 30 (the boot network's subnet)");
  return a;
}

Status ClaimClusterAddress(const ClusterAddress& a, int announcements) {
  if (Status s =
          RunIp({"-4", "address", "add", a.cidr(), "dev", a.interface},
                "adding the cluster address " + a.cidr() + " to " + a.interface, "File exists");
      !s.ok())
    return s;
  for (int i = 0; i < announcements; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (Status s = SendGratuitousArp(a.interface, a.address); !s.ok()) return s;
  }
  return Status::Ok();
}

Status ReleaseClusterAddress(const ClusterAddress& a) {
  return RunIp({"-4", "address", "del", a.cidr(), "dev", a.interface},
               "removing the cluster address " + a.cidr() + " from " + a.interface,
               "Cannot assign requested address");
}

bool HoldsClusterAddress(const ClusterAddress& a) {
  return LookupInterface(a.interface, a.address).ok();
}

}  // namespace prov
