// The last steps of a boot: the per-node overlay the initrd applies over the
// image (hostname, /etc/hosts of the cluster, the control node's key, the
// agent's settings, the profile's overlay files), the initrd's failure
// reports, and the phone-home (hello) with the node's facts, which pins its
// SSH host key, checks its hardware against the profile and makes it
// `booted` (or `failed`, with the reason).
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <string>

#include "base/result.h"
#include "http/http.h"
#include "profiles/inventory.h"
#include "store/store.h"

namespace prov {

// Who sent a node-facing request, and with which credentials.
struct NodeCaller {
  std::string token;   // the node's token (Authorization: Bearer), from its root-only agent.conf
  std::string ticket;  // this boot's ticket (boot/boot.h)
  std::string remote;  // the peer's address
  bool privileged_port = false;  // sent from a port below 1024 (root on the node)

  // From a request: the bearer token, the ticket (X-Provision-Ticket, or
  // ?ticket= for the overlay), the peer.
  static NodeCaller From(const HttpRequest& request);
};

// The rules, so a node's unprivileged users cannot act as the node:
//   overlay  the boot's outstanding ticket, from a privileged port;
//   report   the ticket or the token, from a privileged port;
//   hello    the token, from a privileged port. With the outstanding ticket
//            it is the boot's hello: the host key of this boot is pinned,
//            the ticket spent, the node `booted`. Without it, the facts of a
//            node that has booted are refreshed, and a host key other than
//            the pinned one is refused.
// Every refusal is a `refused` event (so `node why` shows it) and leaves the
// node as it was.
class PhoneHome {
 public:
  // `boot_url` gives the URL nodes reach provisiond at (known once the HTTP
  // server listens).
  PhoneHome(Inventory& inventory, std::string control_public_key,
            std::function<std::string()> boot_url)
      : inventory_(inventory),
        control_key_(std::move(control_public_key)),
        boot_url_(std::move(boot_url)) {}

  // The overlay archive for the node whose MAC is `mac`.
  Result<std::string> Overlay(const std::string& mac, const NodeCaller& caller);

  // The initrd (or the agent) reports a failed step.
  Status Report(const std::string& mac, const NodeCaller& caller, const std::string& stage,
                const std::string& error);

  // A booted node phones home with its facts.
  Result<NodeRecord> Hello(const std::string& mac, const NodeCaller& caller,
                           const nlohmann::json& facts);

 private:
  enum Credential { kTicket = 1, kToken = 2 };
  // The node, if `caller` holds one of the `accepted` credentials and sent
  // from a privileged port; Forbidden with an event otherwise.
  Result<NodeRecord> Authenticate(const std::string& mac_text, const NodeCaller& caller,
                                  int accepted, const std::string& what);
  Status Refuse(const NodeRecord& node, const std::string& what, const std::string& why,
                const NodeCaller& caller);

  Inventory& inventory_;
  std::string control_key_;
  std::function<std::string()> boot_url_;
};

}  // namespace prov
