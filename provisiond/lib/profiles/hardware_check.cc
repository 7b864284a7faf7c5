#include "profiles/hardware_check.h"

#include <algorithm>

#include "base/json_fields.h"
#include "base/strings.h"

namespace prov {
namespace {

std::string VendorName(const std::string& id) {
  if (id == "10de") return "nvidia";
  if (id == "1002" || id == "1022") return "amd";
  if (id == "8086") return "intel";
  return "";
}

bool IsAccelerator(const std::string& klass) {
  return klass.rfind("03", 0) == 0 || klass.rfind("12", 0) == 0 || klass == "1180";
}

}  // namespace

nlohmann::json Accelerators(const nlohmann::json& facts) {
  nlohmann::json out = nlohmann::json::array();
  if (!facts.contains("pci") || !facts["pci"].is_array()) return out;
  for (const auto& d : facts["pci"]) {
    if (!d.is_object()) continue;
    std::string vendor_id = JsonString(d, "vendor_id"), klass = JsonString(d, "class");
    std::string vendor = VendorName(vendor_id);
    if (vendor.empty() || !IsAccelerator(klass)) continue;
    out.push_back({{"vendor", vendor},
                   {"pci_id", vendor_id + ":" + JsonString(d, "device_id")},
                   {"name", JsonString(d, "device")},
                   {"slot", JsonString(d, "slot")}});
  }
  return out;
}

Status CheckHardware(const Profile& profile, const nlohmann::json& facts) {
  nlohmann::json seen = Accelerators(facts);
  std::string problems;
  for (const auto& want : profile.accelerators) {
    long found = 0;
    for (const auto& a : seen) {
      bool match =
          want.pci_ids.empty()
              ? a["vendor"] == want.vendor &&
                    Lower(a["name"].get<std::string>()).find(Lower(want.model)) != std::string::npos
              : std::find(want.pci_ids.begin(), want.pci_ids.end(),
                          a["pci_id"].get<std::string>()) != want.pci_ids.end();
      if (match) ++found;
    }
    if (found != want.count) {
      std::string ids;
      for (const auto& id : want.pci_ids) ids += (ids.empty() ? "" : ", ") + id;
      problems += std::string(problems.empty() ? "" : "; ") + "expected " +
                  std::to_string(want.count) + " x " + want.vendor + " " + want.model +
                  (ids.empty() ? "" : " (" + ids + ")") + ", found " + std::to_string(found);
    }
  }
  if (profile.min_memory_gib > 0) {
    uint64_t bytes = JsonUint(facts, "memory_bytes");
    // MemTotal is a little under the installed size; allow 10 %.
    if (bytes < static_cast<uint64_t>(profile.min_memory_gib) * (1ULL << 30) * 9 / 10)
      problems += std::string(problems.empty() ? "" : "; ") + "expected at least " +
                  std::to_string(profile.min_memory_gib) + " GiB of memory, found " +
                  std::to_string(bytes >> 30) + " GiB";
  }
  if (problems.empty()) return Status::Ok();
  std::string list;
  for (const auto& a : seen)
    list += (list.empty() ? "" : ", ") + a["pci_id"].get<std::string>() + " " +
            a["name"].get<std::string>();
  return Status::Invalid(problems +
                         "; GPUs and accelerators seen: " + (list.empty() ? "none" : list));
}

Status CheckStorageOutcome(const Profile& profile, const nlohmann::json& facts) {
  if (profile.storage.empty()) return Status::Ok();
  auto it = facts.find("storage");
  if (it == facts.end() || !it->is_object())
    return Status::Invalid(
        "storage: the node reported no storage outcome (its image lacks "
        "provision-storage.service, or the unit did not run: journalctl -u provision-storage)");
  if (it->value("state", "") == "ready") return Status::Ok();
  return Status::Invalid("storage: " + it->value("reason", std::string("failed, no reason given")));
}

Status CheckStorageFits(const Profile& profile, const nlohmann::json& facts) {
  if (profile.storage.empty() || !facts.is_object() || !facts.contains("disks"))
    return Status::Ok();
  auto matched = MatchVolumes(profile.storage, facts["disks"]);
  return matched.ok() ? Status::Ok() : matched.status();
}

}  // namespace prov
