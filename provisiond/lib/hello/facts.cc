#include "hello/facts.h"

#include <cctype>
#include <string>
#include <string_view>

#include "store/node_state.h"

namespace prov {
namespace {

using json = nlohmann::json;

constexpr size_t kMaxString = 4096;
constexpr size_t kMaxArray = 4096;

Status Bad(const std::string& path, const std::string& why) {
  return Status::Invalid(path + ": " + why);
}

Status CheckText(const std::string& path, const std::string& text) {
  if (text.size() > kMaxString)
    return Bad(path, "longer than " + std::to_string(kMaxString) + " bytes");
  for (char c : text)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      return Bad(path, "has a control character");
  return Status::Ok();
}

// Every key and string below `v`.
Status CheckTree(const std::string& path, const json& v) {
  if (v.is_string()) return CheckText(path, v.get_ref<const std::string&>());
  if (v.is_array()) {
    if (v.size() > kMaxArray) return Bad(path, "more than " + std::to_string(kMaxArray) + " items");
    for (size_t i = 0; i < v.size(); ++i) {
      Status s = CheckTree(path + "[" + std::to_string(i) + "]", v[i]);
      if (!s.ok()) return s;
    }
  } else if (v.is_object()) {
    for (const auto& [key, item] : v.items()) {
      Status s = CheckText(path + " key", key);
      if (!s.ok()) return s;
      s = CheckTree(path + "." + key, item);
      if (!s.ok()) return s;
    }
  }
  return Status::Ok();
}

// Letters, digits and the characters of `extra` only.
bool IsWord(const std::string& text, std::string_view extra) {
  for (char c : text)
    if (!isalnum(static_cast<unsigned char>(c)) && extra.find(c) == std::string_view::npos)
      return false;
  return true;
}

Status Count(const std::string& path, const json& parent, const char* key) {
  if (!parent.is_object() || !parent.contains(key)) return Status::Ok();
  const json& v = parent[key];
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
    return Bad(path + "." + key, "must be a non-negative integer, not " + v.dump().substr(0, 40));
  return Status::Ok();
}

// Each element of the array `key` of `facts`, if it is one.
template <typename F>
Status EachOf(const json& facts, const char* key, F&& check) {
  if (!facts.contains(key)) return Status::Ok();
  const json& list = facts[key];
  if (!list.is_array()) return Bad(std::string("facts.") + key, "must be a list");
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string path = std::string("facts.") + key + "[" + std::to_string(i) + "]";
    if (!list[i].is_object()) return Bad(path, "must be an object");
    Status s = check(path, list[i]);
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

// A disk of the node (the agent's CollectDisks): its names are shown and
// matched against profiles' rules, so they are words.
Status CheckDisk(const std::string& path, const json& d) {
  Status s = Count(path, d, "size_bytes");
  if (!s.ok()) return s;
  s = Count(path, d, "partitions");
  if (!s.ok()) return s;
  auto text = [&](const char* key, std::string_view extra) -> Status {
    if (!d.contains(key)) return Status::Ok();
    if (!d[key].is_string() || !IsWord(d[key].get<std::string>(), extra))
      return Bad(path + "." + key, "must be letters, digits and '" + std::string(extra) + "'");
    return Status::Ok();
  };
  for (auto [key, extra] :
       {std::pair<const char*, std::string_view>{"name", ""}, {"transport", ""}, {"content", ""}}) {
    s = text(key, extra);
    if (!s.ok()) return s;
  }
  const std::string_view id_chars = "_.:+@-";
  if (d.contains("by_id")) {
    const std::string prefix = "/dev/disk/by-id/";
    if (!d["by_id"].is_string() || d["by_id"].get<std::string>().rfind(prefix, 0) != 0 ||
        !IsWord(d["by_id"].get<std::string>().substr(prefix.size()), id_chars) ||
        d["by_id"].get<std::string>().size() == prefix.size())
      return Bad(path + ".by_id", "must be /dev/disk/by-id/ and a name of letters, digits and '" +
                                      std::string(id_chars) + "'");
  }
  if (d.contains("ids")) {
    if (!d["ids"].is_array()) return Bad(path + ".ids", "must be a list");
    for (const auto& id : d["ids"])
      if (!id.is_string() || id.get<std::string>().empty() ||
          !IsWord(id.get<std::string>(), id_chars))
        return Bad(path + ".ids",
                   "must be names of letters, digits and '" + std::string(id_chars) + "'");
  }
  for (const char* key : {"rotational", "removable", "system"})
    if (d.contains(key) && !d[key].is_boolean())
      return Bad(path + "." + key, "must be true or false");
  return Status::Ok();
}

}  // namespace

bool IsBootId(std::string_view id) {
  if (id.size() != 36) return false;
  for (size_t i = 0; i < id.size(); ++i) {
    const char c = id[i];
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

Status ValidateFacts(const json& facts) {
  if (!facts.is_object()) return Status::Invalid("facts: must be a JSON object");
  Status s = CheckTree("facts", facts);
  if (!s.ok()) return s;
  if (facts.contains("cpu")) {
    if (!facts["cpu"].is_object()) return Bad("facts.cpu", "must be an object");
    for (const char* key : {"cores", "threads", "sockets"}) {
      s = Count("facts.cpu", facts["cpu"], key);
      if (!s.ok()) return s;
    }
  }
  for (const char* key : {"memory_bytes", "cpus"}) {
    s = Count("facts", facts, key);
    if (!s.ok()) return s;
  }
  if (facts.contains("ssh_host_key")) {
    if (!facts["ssh_host_key"].is_string()) return Bad("facts.ssh_host_key", "must be a string");
    s = ValidateHostKey(facts["ssh_host_key"].get<std::string>());
    if (!s.ok()) return Bad("facts.ssh_host_key", s.message());
  }
  if (facts.contains("image")) {
    if (!facts["image"].is_string()) return Bad("facts.image", "must be a string");
    if (!IsWord(facts["image"].get<std::string>(), "@.-_:+"))
      return Bad("facts.image", "must be NAME@VERSION");
  }
  if (facts.contains("os_release")) {
    const json& r = facts["os_release"];
    if (!r.is_object()) return Bad("facts.os_release", "must be an object");
    for (const auto& [key, value] : r.items()) {
      if (!value.is_string()) return Bad("facts.os_release." + key, "must be a string");
      // os-release's machine-readable fields are words (ID_LIKE a list of
      // them): they become file names and distribution facts in playbooks.
      if (key == "name") continue;
      if (!IsWord(value.get<std::string>(), key == "id_like" ? "._-~ " : "._-~"))
        return Bad("facts.os_release." + key, "must be letters, digits, '.', '_', '-' or '~'");
    }
  }
  if (facts.contains("boot_id")) {
    if (!facts["boot_id"].is_string() || !IsBootId(facts["boot_id"].get<std::string>()))
      return Bad("facts.boot_id", "must be a boot id as the kernel gives it (a lowercase UUID)");
  }
  if (facts.contains("arch")) {
    if (!facts["arch"].is_string()) return Bad("facts.arch", "must be a string");
    if (!IsWord(facts["arch"].get<std::string>(), "_"))
      return Bad("facts.arch", "must be letters, digits and '_' (x86_64, aarch64)");
  }
  if (facts.contains("firmware")) {
    const json& fw = facts["firmware"];
    if (!fw.is_object()) return Bad("facts.firmware", "must be an object");
    if (fw.contains("uefi") && !fw["uefi"].is_boolean())
      return Bad("facts.firmware.uefi", "must be true or false");
    if (fw.contains("secure_boot") && !fw["secure_boot"].is_boolean() &&
        !fw["secure_boot"].is_null())
      return Bad("facts.firmware.secure_boot", "must be true, false or null");
  }
  s = EachOf(facts, "disks", CheckDisk);
  if (!s.ok()) return s;
  if (facts.contains("storage")) {
    const json& st = facts["storage"];
    if (!st.is_object()) return Bad("facts.storage", "must be an object");
    const json state = st.value("state", json());
    if (state != "ready" && state != "failed")
      return Bad("facts.storage.state", "must be ready or failed");
  }
  // (A NIC's address is not checked as a MAC: InfiniBand ports have 20 bytes.)
  return EachOf(facts, "nics", [](const std::string& path, const json& n) {
    return Count(path, n, "speed_mbps");
  });
}

}  // namespace prov
