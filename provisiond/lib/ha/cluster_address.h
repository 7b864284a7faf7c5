// The boot network's address when several control nodes share one
// PostgreSQL inventory (control.address): the nodes' DHCP answers, boot
// scripts and NFS root all name it, and it moves with the lease. The active
// adds it to its interface and announces it with gratuitous ARP (the
// neighbours' ARP caches point at its hardware address at once, rather than
// after their entries for the old active go stale); an active that fences
// itself, or stops, removes it first; a standby starts by removing it, should
// an earlier run on this machine have left it. Why not keepalived's VRRP: the
// lease in the database already decides who is active; a second election
// (VRRP's, over the network) could disagree with it.
#pragma once

#include <string>

#include "base/result.h"

namespace prov {

struct ClusterAddress {
  std::string interface;
  std::string address;  // 10.99.0.1
  int prefix = 24;

  std::string cidr() const { return address + "/" + std::to_string(prefix); }
};

// "10.99.0.1/24" -> address and prefix; an error that says what is wrong.
Result<ClusterAddress> ParseClusterAddress(const std::string& cidr, const std::string& interface);

// Adds the address to the interface (already there: fine), then announces it
// `announcements` times, 100 ms apart.
Status ClaimClusterAddress(const ClusterAddress& a, int announcements = 3);
// Removes it (not there: fine).
Status ReleaseClusterAddress(const ClusterAddress& a);
// Whether the interface has it now.
bool HoldsClusterAddress(const ClusterAddress& a);

}  // namespace prov
