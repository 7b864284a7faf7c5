// Whether a node's facts match what its profile expects: the accelerators
// (by PCI id, or vendor and model name) and the memory. A mismatch is the
// reason the node is `failed` instead of `ready`.
#pragma once

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "profiles/profile.h"

namespace prov {

// Ok, or Invalid with a message like "expected 1 x intel Arc A770 (8086:56a0),
// found 0; GPUs and accelerators seen: none".
Status CheckHardware(const Profile& profile, const nlohmann::json& facts);

// The node's storage as its agent set it up at this boot (facts.storage):
// OK when the profile has none or every volume is mounted; otherwise
// "storage: " and the agent's reason (or that it reported nothing: an image
// without provision-storage.service).
Status CheckStorageOutcome(const Profile& profile, const nlohmann::json& facts);

// The disks each of the profile's volumes would take on a node with these
// facts: OK, or why not ("volume scratch needs 2 disks ..."). Facts without
// disks (a node that never phoned home) pass: nothing is known yet.
Status CheckStorageFits(const Profile& profile, const nlohmann::json& facts);

// The accelerators among the PCI devices of `facts`: display controllers
// (class 03xx) and processing accelerators (12xx, 1180) of NVIDIA, AMD and
// Intel, as [{"vendor","pci_id","name"}].
nlohmann::json Accelerators(const nlohmann::json& facts);

}  // namespace prov
