#include "profiles/storage.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "base/json_fields.h"

namespace prov {
namespace {

using json = nlohmann::json;

const char* const kTransports[] = {"nvme", "sata", "sas", "usb", "virtio", "scsi", "mmc"};

std::string ShortId(std::string id) {
  const std::string prefix = "/dev/disk/by-id/";
  if (id.rfind(prefix, 0) == 0) id = id.substr(prefix.size());
  return id;
}

// A disk as messages name it: its by-id name, else its kernel name.
std::string DiskName(const json& d) {
  std::string id = JsonString(d, "by_id");
  return id.empty() ? JsonString(d, "name") : ShortId(id);
}

bool HasId(const json& d, const std::string& wanted) {
  if (ShortId(JsonString(d, "by_id")) == wanted) return true;
  auto ids = d.find("ids");
  if (ids != d.end() && ids->is_array())
    for (const auto& i : *ids)
      if (i.is_string() && ShortId(i.get<std::string>()) == wanted) return true;
  return false;
}

bool Takes(const DiskRule& r, const json& d) {
  if (!d.is_object() || d.value("system", false)) return false;
  if (!r.ids.empty()) {
    for (const auto& id : r.ids)
      if (HasId(d, ShortId(id))) return true;
    return false;
  }
  if (!r.transport.empty() && JsonString(d, "transport") != r.transport) return false;
  if (!r.model.empty() && !GlobMatch(r.model, JsonString(d, "model"))) return false;
  uint64_t size = d.value("size_bytes", uint64_t{0});
  if (size < r.min_bytes || (r.max_bytes && size > r.max_bytes)) return false;
  if (r.rotational >= 0 && d.value("rotational", false) != (r.rotational == 1)) return false;
  return true;
}

std::string RuleText(const DiskRule& r) {
  std::vector<std::string> parts;
  if (!r.ids.empty()) {
    std::string ids;
    for (const auto& i : r.ids) ids += (ids.empty() ? "" : ", ") + ShortId(i);
    parts.push_back("ids " + ids);
  }
  if (!r.transport.empty()) parts.push_back("transport " + r.transport);
  if (!r.model.empty()) parts.push_back("model '" + r.model + "'");
  if (r.min_bytes) parts.push_back("at least " + FormatByteSize(r.min_bytes));
  if (r.max_bytes) parts.push_back("at most " + FormatByteSize(r.max_bytes));
  if (r.rotational >= 0) parts.push_back(r.rotational ? "rotational" : "solid state");
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out.empty() ? "any disk" : out;
}

Result<std::vector<json>> Match(const StorageVolume& v, const json& disks,
                                const std::set<std::string>& taken) {
  std::vector<json> found;
  if (disks.is_array())
    for (const auto& d : disks)
      if (Takes(v.disks, d) && !taken.count(DiskName(d))) found.push_back(d);
  std::sort(found.begin(), found.end(),
            [](const json& a, const json& b) { return DiskName(a) < DiskName(b); });
  size_t need = v.disks.count > 0                    ? static_cast<size_t>(v.disks.count)
                : v.layout == StorageLayout::kSingle ? 1
                                                     : 2;
  if (!v.disks.ids.empty() && v.disks.count == 0) need = v.disks.ids.size();
  if (found.size() < need) {
    std::string have;
    if (disks.is_array())
      for (const auto& d : disks)
        if (d.is_object())
          have += std::string(have.empty() ? "" : "; ") + DiskName(d) + " (" +
                  (JsonString(d, "transport").empty() ? "?" : JsonString(d, "transport")) + ", " +
                  FormatByteSize(d.value("size_bytes", uint64_t{0})) +
                  (d.value("system", false) ? ", holds the system" : "") +
                  (taken.count(DiskName(d)) ? ", taken by an earlier volume" : "") + ")";
    return Status::NotFound("volume " + v.name + " needs " + std::to_string(need) + " disk" +
                            (need == 1 ? "" : "s") + " (" + RuleText(v.disks) + "), found " +
                            std::to_string(found.size()) +
                            "; the node's disks: " + (have.empty() ? "none" : have));
  }
  if (v.disks.count > 0 || v.layout == StorageLayout::kSingle) found.resize(need);
  return found;
}

}  // namespace

const char* ToString(StorageLayout l) {
  switch (l) {
    case StorageLayout::kSingle:
      return "single";
    case StorageLayout::kRaid0:
      return "raid0";
    case StorageLayout::kRaid1:
      return "raid1";
  }
  return "?";
}

Result<StorageLayout> ParseStorageLayout(const std::string& text) {
  for (auto l : {StorageLayout::kSingle, StorageLayout::kRaid0, StorageLayout::kRaid1})
    if (text == ToString(l)) return l;
  return Status::Invalid("layout '" + text + "' is not one of single, raid0, raid1");
}

std::string StorageLabel(const StorageVolume& v) {
  return "pv-" + v.name;
}

Status ValidateStorageVolume(const StorageVolume& v) {
  if (v.name.empty() || v.name.size() > 9 ||
      v.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") != std::string::npos ||
      v.name[0] == '-')
    return Status::Invalid("volume name '" + v.name +
                           "' must be 1-9 of a-z, 0-9 and '-' (it becomes the filesystem label " +
                           "pv-NAME, which XFS limits to 12 characters)");
  auto path_ok = [](const std::string& p) {
    return !p.empty() && p[0] == '/' && p != "/" &&
           p.find_first_of(std::string(" \t\n\r\"'$`\\\0", 10)) == std::string::npos &&
           p.find("/../") == std::string::npos && p.find("/./") == std::string::npos &&
           (p.size() < 3 || p.compare(p.size() - 3, 3, "/..") != 0);
  };
  if (!path_ok(v.mount))
    return Status::Invalid("volume " + v.name + ": mount '" + v.mount +
                           "' must be an absolute path other than / without spaces, quotes, "
                           "'$', '`', '\\' or '..'");
  for (const char* system : {"/usr", "/etc", "/boot", "/proc", "/sys", "/dev", "/run", "/bin",
                             "/sbin", "/lib", "/lib64"})
    if (v.mount == system || v.mount.rfind(std::string(system) + "/", 0) == 0)
      return Status::Invalid("volume " + v.name + ": mount '" + v.mount + "' is inside " + system +
                             ", which belongs to the image");
  if (v.filesystem != "ext4" && v.filesystem != "xfs")
    return Status::Invalid("volume " + v.name + ": filesystem '" + v.filesystem +
                           "' is not one of ext4, xfs");
  if (v.layout != StorageLayout::kSingle && v.disks.count == 1)
    return Status::Invalid("volume " + v.name + ": " + ToString(v.layout) +
                           " needs at least 2 disks, count is 1");
  if (v.layout == StorageLayout::kSingle && v.disks.count > 1)
    return Status::Invalid("volume " + v.name + ": layout single takes one disk, count is " +
                           std::to_string(v.disks.count) + " (raid0 or raid1 for more)");
  if (v.layout == StorageLayout::kSingle && v.disks.ids.size() > 1)
    return Status::Invalid("volume " + v.name + ": layout single takes one disk, ids names " +
                           std::to_string(v.disks.ids.size()));
  if (!v.disks.transport.empty() && std::find(std::begin(kTransports), std::end(kTransports),
                                              v.disks.transport) == std::end(kTransports))
    return Status::Invalid("volume " + v.name + ": transport '" + v.disks.transport +
                           "' is not one of nvme, sata, sas, usb, virtio, scsi, mmc");
  if (v.disks.max_bytes && v.disks.max_bytes < v.disks.min_bytes)
    return Status::Invalid("volume " + v.name + ": max_size is below min_size");
  for (const auto& id : v.disks.ids)
    if (ShortId(id).empty() || ShortId(id).find('/') != std::string::npos)
      return Status::Invalid("volume " + v.name + ": disk id '" + id +
                             "' must be a name under /dev/disk/by-id");
  for (const auto& b : v.binds) {
    if (!path_ok(b.path))
      return Status::Invalid("volume " + v.name + ": bind '" + b.path +
                             "' must be an absolute path other than / without spaces, quotes, "
                             "'$', '`', '\\' or '..'");
    if (b.path == v.mount || b.path.rfind(v.mount + "/", 0) == 0 ||
        v.mount.rfind(b.path + "/", 0) == 0)
      return Status::Invalid("volume " + v.name + ": bind '" + b.path +
                             "' overlaps the mount point " + v.mount);
    if (!b.mode.empty() &&
        (b.mode.size() > 4 || b.mode.find_first_not_of("01234567") != std::string::npos))
      return Status::Invalid("volume " + v.name + ": bind " + b.path + ": mode '" + b.mode +
                             "' must be octal, like \"0755\"");
    if (b.owner.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                  "0123456789_-.:") != std::string::npos)
      return Status::Invalid("volume " + v.name + ": bind " + b.path + ": owner '" + b.owner +
                             "' must be USER or USER:GROUP");
  }
  return Status::Ok();
}

Result<uint64_t> ParseByteSize(const std::string& text) {
  size_t end = 0;
  double number = 0;
  try {
    number = std::stod(text, &end);
  } catch (...) {
    end = 0;
  }
  std::string unit = text.substr(end);
  unit.erase(0, unit.find_first_not_of(' '));
  if (end == 0 || number < 0 || std::isnan(number))
    return Status::Invalid("size '" + text + "' is not a number with a unit, like 500G or 2TiB");
  static const std::pair<const char*, double> kUnits[] = {{"", 1},
                                                          {"B", 1},
                                                          {"K", 1e3},
                                                          {"KB", 1e3},
                                                          {"M", 1e6},
                                                          {"MB", 1e6},
                                                          {"G", 1e9},
                                                          {"GB", 1e9},
                                                          {"T", 1e12},
                                                          {"TB", 1e12},
                                                          {"P", 1e15},
                                                          {"PB", 1e15},
                                                          {"KiB", 1024.0},
                                                          {"MiB", 1048576.0},
                                                          {"GiB", 1073741824.0},
                                                          {"TiB", 1099511627776.0},
                                                          {"PiB", 1125899906842624.0}};
  for (const auto& [name, factor] : kUnits)
    if (unit == name) {
      double bytes = number * factor;
      if (bytes > 1.8e19) return Status::Invalid("size '" + text + "' is too large");
      return static_cast<uint64_t>(std::llround(bytes));
    }
  return Status::Invalid("size '" + text + "': unknown unit '" + unit +
                         "' (K, M, G, T, P or KiB, MiB, GiB, TiB, PiB)");
}

std::string FormatByteSize(uint64_t bytes) {
  static const char* const kNames[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  double v = static_cast<double>(bytes);
  int i = 0;
  while (v >= 1000 && i < 5) {
    v /= 1000;
    ++i;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, v < 10 && i > 0 ? "%.1f %s" : "%.0f %s", v, kNames[i]);
  return buf;
}

json ToJson(const StorageVolume& v) {
  json binds = json::array();
  for (const auto& b : v.binds)
    binds.push_back({{"path", b.path}, {"owner", b.owner}, {"mode", b.mode}});
  json disks = {{"ids", v.disks.ids},
                {"transport", v.disks.transport},
                {"model", v.disks.model},
                {"min_bytes", v.disks.min_bytes},
                {"max_bytes", v.disks.max_bytes},
                {"rotational", v.disks.rotational},
                {"count", v.disks.count}};
  return {{"name", v.name},
          {"disks", disks},
          {"layout", ToString(v.layout)},
          {"filesystem", v.filesystem},
          {"mount", v.mount},
          {"binds", binds},
          {"wipe", v.wipe}};
}

Result<StorageVolume> StorageVolumeFromJson(const json& j) {
  StorageVolume v;
  try {
    v.name = j.at("name").get<std::string>();
    const json& d = j.at("disks");
    v.disks.ids = d.value("ids", std::vector<std::string>{});
    v.disks.transport = d.value("transport", "");
    v.disks.model = d.value("model", "");
    v.disks.min_bytes = d.value("min_bytes", uint64_t{0});
    v.disks.max_bytes = d.value("max_bytes", uint64_t{0});
    v.disks.rotational = d.value("rotational", -1);
    v.disks.count = d.value("count", 0);
    auto layout = ParseStorageLayout(j.value("layout", "single"));
    if (!layout.ok()) return layout.status();
    v.layout = *layout;
    v.filesystem = j.value("filesystem", "ext4");
    v.mount = j.at("mount").get<std::string>();
    for (const auto& b : j.value("binds", json::array()))
      v.binds.push_back(
          {b.at("path").get<std::string>(), b.value("owner", ""), b.value("mode", "")});
    v.wipe = j.value("wipe", false);
  } catch (const json::exception& e) {
    return Status::Invalid(std::string("storage volume: ") + e.what());
  }
  Status valid = ValidateStorageVolume(v);
  if (!valid.ok()) return valid;
  return v;
}

bool GlobMatch(const std::string& pattern, const std::string& text) {
  size_t p = 0, t = 0, star = std::string::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

Result<std::vector<json>> MatchDisks(const StorageVolume& v, const json& disks) {
  return Match(v, disks, {});
}

Result<std::vector<std::vector<json>>> MatchVolumes(const std::vector<StorageVolume>& volumes,
                                                    const json& disks) {
  std::vector<std::vector<json>> out;
  std::set<std::string> taken;
  for (const auto& v : volumes) {
    auto found = Match(v, disks, taken);
    if (!found.ok()) return found.status();
    for (const auto& d : *found) taken.insert(DiskName(d));
    out.push_back(std::move(*found));
  }
  return out;
}

}  // namespace prov
