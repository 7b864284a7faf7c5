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
#include "profiles/inventory.h"
#include "store/store.h"

namespace prov {

class PhoneHome {
 public:
  // `boot_url` gives the URL nodes reach provisiond at (known once the HTTP
  // server listens).
  PhoneHome(Inventory& inventory, std::string control_public_key,
            std::function<std::string()> boot_url)
      : inventory_(inventory),
        control_key_(std::move(control_public_key)),
        boot_url_(std::move(boot_url)) {}

  // The overlay archive for the node whose MAC is `mac`, if `token` is its
  // token (Forbidden otherwise, with an event).
  Result<std::string> Overlay(const std::string& mac, const std::string& token,
                              const std::string& remote);

  // The initrd (or the agent) reports a failed step.
  Status Report(const std::string& mac, const std::string& token, const std::string& stage,
                const std::string& error, const std::string& remote);

  // A booted node phones home with its facts.
  Result<NodeRecord> Hello(const std::string& mac, const std::string& token,
                           const nlohmann::json& facts, const std::string& remote);

 private:
  // The node, if `token` is its own; Forbidden with an event otherwise.
  Result<NodeRecord> Authenticate(const std::string& mac_text, const std::string& token,
                                  const std::string& what, const std::string& remote);

  Inventory& inventory_;
  std::string control_key_;
  std::function<std::string()> boot_url_;
};

}  // namespace prov
