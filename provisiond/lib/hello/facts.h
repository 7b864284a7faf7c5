// What a node says about itself (its hello's facts) is checked where it comes
// in: facts flow into files on every node (known_hosts, /etc/hosts,
// slurm.conf), the inventory exports and the web page, so a node must not be
// able to add lines or markup through them.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "base/result.h"

namespace prov {

// Ok, or Invalid naming the field ("facts.pci[3].device: ..."): an object;
// no control character in any key or string and none longer than 4096
// bytes; at most 4096 elements in an array; the fields provisiond reads have
// their types (cpu.cores and cpu.threads, memory_bytes, disks[].size_bytes,
// nics[].speed_mbps: non-negative integers; ssh_host_key: one key line;
// image: NAME@VERSION characters; boot_id: IsBootId).
Status ValidateFacts(const nlohmann::json& facts);

// A boot id as Linux gives it (/proc/sys/kernel/random/boot_id): a UUID in
// lowercase hex, 8-4-4-4-12. Another one than the facts' means the machine
// has booted since.
bool IsBootId(std::string_view id);

}  // namespace prov
