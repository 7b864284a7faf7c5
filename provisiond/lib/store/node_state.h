// The node life cycle. Only provisiond changes a node's state, and only along
// the edges of this table; every change is stored together with its event.
//
//   discovered -> enrolled -> booting -> booted -> configuring -> ready
//   plus failed (with a reason), maintenance and retired.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/mac.h"  // NormalizeMac moved there; its callers still include this header
#include "base/result.h"

namespace prov {

enum class NodeState {
  kDiscovered,
  kEnrolled,
  kBooting,
  kBooted,
  kConfiguring,
  kReady,
  kFailed,
  kMaintenance,
  kRetired,
};

const std::vector<NodeState>& AllNodeStates();
std::string_view ToString(NodeState s);
std::optional<NodeState> ParseNodeState(std::string_view s);

// True when a node may move from `from` to `to`.
bool CanTransition(NodeState from, NodeState to);

// Ok, or a Conflict that names both states and the states reachable from
// `from`.
Status CheckTransition(NodeState from, NodeState to);

// States an operator may ask for through the API or CLI; the others are
// reached only by what provisiond observes (a boot request, a hello, a run).
bool IsOperatorState(NodeState s);

// Hostnames: RFC 1123 labels plus '_' (seed 000 names its control node
// control_0_1), at most 63 characters.
Status ValidateHostname(std::string_view name);

// A node's address: one IPv4 address in dotted-quad form ("10.99.0.10"), as
// dnsmasq's hosts file, /etc/hosts and the inventory exports write it.
Status ValidateNodeIp(std::string_view ip);

// A pinned host key: one OpenSSH public key line ("ssh-ed25519 AAAA...
// [comment]"), a known key type, base64 key data, a printable comment.
Status ValidateHostKey(std::string_view key);
// "SHA256:<base64 of the key blob's SHA-256, unpadded>", as ssh-keygen -lf
// and ssh's first-connection prompt show a key; "" when it does not parse.
std::string HostKeyFingerprint(const std::string& key);

}  // namespace prov
