// What a node tells provisiond about itself when it phones home: CPU, memory,
// kernel, PCI devices (with names from pci.ids), NICs, disks and its SSH host
// key. Read from /proc and /sys under a root directory, so tests use a fake
// tree.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace prov::agent {

// `root` is "/" on a node; tests pass a directory laid out like one.
nlohmann::json CollectFacts(const std::string& root);
// The `disks` part alone: each block device that is a disk (not loop, ram,
// md, dm), with its stable /dev/disk/by-id name, model, serial, size,
// transport, what its first sectors hold (empty, gpt, mbr, md, ext4, xfs,
// ...) and whether the running system stands on it.
nlohmann::json CollectDisks(const std::string& root);

// "Intel Corporation" / "DG2 [Arc A770]" from a pci.ids text.
struct PciNames {
  std::string vendor;
  std::string device;
};
PciNames LookupPciNames(const std::string& pci_ids_text, const std::string& vendor_id,
                        const std::string& device_id);

}  // namespace prov::agent
