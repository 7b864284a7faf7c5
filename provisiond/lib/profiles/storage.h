// Local storage on nodes whose root is not on a disk: a profile's `storage:`
// section names volumes, each made of the node's disks that match a rule (by
// transport, model, size, rotation, or by-id name), laid out as one disk or
// an md RAID-0/RAID-1, with a filesystem, a mount point and folders bound
// onto it. The node assembles and mounts them at every boot (the agent's
// `provision-facts storage`, before the services that use them start); what
// already carries the volume is mounted, never formatted again; what carries
// anything else is left alone unless the operator said to wipe it.
//
// This unit is the part the daemon and the node's agent share: the volumes,
// their JSON (the node receives them in its overlay), and which of the
// node's disks (its facts' `disks`) a volume takes. It uses no YAML and no
// I/O, so the static agent builds it too.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"

namespace prov {

enum class StorageLayout { kSingle, kRaid0, kRaid1 };
const char* ToString(StorageLayout l);
Result<StorageLayout> ParseStorageLayout(const std::string& text);

// Which disks a volume takes. Every field set must hold; `ids` alone, when
// given, names the disks exactly.
struct DiskRule {
  std::vector<std::string> ids{};  // by-id names (with or without /dev/disk/by-id/)
  std::string transport{};         // nvme, sata, sas, usb, virtio, scsi, mmc; empty: any
  std::string model{};             // a glob on the model; empty: any
  uint64_t min_bytes = 0;
  uint64_t max_bytes = 0;  // 0: no upper bound
  int rotational = -1;     // -1: either; 0: solid state; 1: spinning
  int count = 0;           // how many; 0: every disk that matches
};

struct StorageVolume {
  std::string name{};  // 1-9 of [a-z0-9-]: the md array's name, the label "pv-<name>"
  DiskRule disks{};
  StorageLayout layout = StorageLayout::kSingle;
  std::string filesystem = "ext4";  // ext4 or xfs
  std::string mount{};              // absolute
  // Folders bound onto the volume (their content lives at
  // <mount>/.binds/<path without its leading '/'>).
  struct Bind {
    std::string path{};
    std::string owner{};  // user[:group], applied when the user exists; empty: root
    std::string mode{};   // octal; empty: 0755
  };
  std::vector<Bind> binds{};
  // The profile allows wiping a disk the rule takes that holds something
  // else (a partition table, another filesystem). Off: such a disk fails the
  // node until `provisionctl node storage wipe`.
  bool wipe = false;
  int line = 0;  // in the profile, for messages
};

// The filesystem label that marks a volume provisiond made.
std::string StorageLabel(const StorageVolume& v);
// Checks one volume on its own (name, mount point, layout against count,
// filesystem, binds): the first problem, or OK.
Status ValidateStorageVolume(const StorageVolume& v);
// Sizes as written in profiles: a number with an optional unit, K/M/G/T/P
// (powers of 1000, as disks are sold) or KiB/MiB/GiB/TiB/PiB; "500G", "1.5T".
Result<uint64_t> ParseByteSize(const std::string& text);
// "1.9 TB", "512 GB": a size as people read disk sizes.
std::string FormatByteSize(uint64_t bytes);

nlohmann::json ToJson(const StorageVolume& v);
Result<StorageVolume> StorageVolumeFromJson(const nlohmann::json& j);

// Glob match with * and ?.
bool GlobMatch(const std::string& pattern, const std::string& text);

// The disks of `disks` (a node's facts: objects with by_id, ids, transport,
// model, size_bytes, rotational, system) that `v` takes, in by-id order;
// disks that hold the node's own system (`system: true`) are never taken.
// Fails, naming what is missing, when fewer match than the volume needs (a
// RAID needs two, RAID-1 exactly `count` when given).
Result<std::vector<nlohmann::json>> MatchDisks(const StorageVolume& v, const nlohmann::json& disks);
// The disks several volumes take: no disk in two volumes.
Result<std::vector<std::vector<nlohmann::json>>> MatchVolumes(
    const std::vector<StorageVolume>& volumes, const nlohmann::json& disks);

}  // namespace prov
