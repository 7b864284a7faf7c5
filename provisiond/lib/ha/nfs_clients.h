// The NFS clients of a control node, across a takeover (docs/ha.md, "How
// running nodes keep their root").
//
// A node's NFS client keeps one TCP connection to the cluster address. When
// the active dies, the node's TCP resends what it had sent at its growing
// retransmission interval (0.2 s, doubled each time), and finds out that the
// connection is gone only when a resend reaches the new active: seconds after
// the new active serves. So the active reports the connections its NFS server
// holds (with its other facts, ha/control_nodes.h), and the new active, which
// holds the cluster address now, sends each client a "tickle": one TCP ACK
// from the connection's own address and port with numbers the client cannot
// expect. The client answers with an ACK that says where it is (RFC 5961's
// challenge ACK); this machine's kernel has no such connection and resets it;
// the client reconnects at once, to the new server.
#ifndef PROVISION_HA_NFS_CLIENTS_H_
#define PROVISION_HA_NFS_CLIENTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "ha/control_nodes.h"

namespace prov {

// The port nodes mount from (images/nfs/ganesha.conf.in's NFS_Port).
inline constexpr uint16_t kNfsPort = 2049;

// One IPv4 TCP connection as this machine sees it.
struct TcpConnection {
  std::string local;  // dotted quad
  uint16_t local_port = 0;
  std::string remote;
  uint16_t remote_port = 0;

  // "10.99.0.1:2049>10.99.0.101:872", as control_nodes.nfs_clients holds it.
  std::string ToString() const;
  // The inverse of ToString; anything else is an error naming the text.
  static Result<TcpConnection> Parse(const std::string& text);
  bool operator==(const TcpConnection&) const = default;
};

// The established IPv4 connections to local port `port`: from `proc_net_tcp`
// (the format of /proc/net/tcp) and, IPv4-mapped, from `proc_net_tcp6` (a
// server listening on :: holds its IPv4 clients' connections there). IPv6
// connections are not listed.
std::vector<TcpConnection> EstablishedTo(uint16_t port,
                                         const std::string& proc_net_tcp = "/proc/net/tcp",
                                         const std::string& proc_net_tcp6 = "/proc/net/tcp6");
// Whether a socket listens on `port` (IPv4 or IPv6, any address).
bool ListensOn(uint16_t port, const std::string& proc_net_tcp = "/proc/net/tcp",
               const std::string& proc_net_tcp6 = "/proc/net/tcp6");

// The most connections a new active tells (a cluster's worth; the reports
// are the database's word, not this machine's).
inline constexpr size_t kMaxTickles = 10000;

// What a new active holding `address` tells: the connections the other
// control nodes (not `me`) reported whose local side is address:kNfsPort,
// at most kMaxTickles. An entry that is not a connection is left out and
// named in `refused`.
std::vector<TcpConnection> ConnectionsToTell(const std::vector<ControlNodeReport>& nodes,
                                             const std::string& me, const std::string& address,
                                             std::vector<std::string>* refused = nullptr);

// The tickle for `c`: a 20-byte TCP header from c.local:c.local_port to
// c.remote:c.remote_port with only ACK set, sequence and acknowledgment 0, its
// checksum over the IPv4 pseudo-header.
std::string TickleSegment(const TcpConnection& c);

// Sends each connection's tickle over a raw socket (root), from its local
// address, which this machine must hold. The number sent; a connection whose
// send fails is skipped and named in `failures`.
Result<int> SendTickles(const std::vector<TcpConnection>& connections,
                        std::vector<std::string>* failures = nullptr);

}  // namespace prov

#endif  // PROVISION_HA_NFS_CLIENTS_H_
