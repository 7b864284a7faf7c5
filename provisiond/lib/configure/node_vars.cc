#include "configure/node_vars.h"

#include <cctype>
#include <cstdint>

namespace prov {

using json = nlohmann::json;

namespace {

std::string Str(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : "";
}

int64_t Count(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_number_integer() ? it->get<int64_t>() : -1;
}

// os-release's ID as Ansible names the distribution, and its family.
struct Distro {
  const char* id;
  const char* name;
  const char* family;
};
constexpr Distro kDistros[] = {
    {"debian", "Debian", "Debian"},
    {"ubuntu", "Ubuntu", "Debian"},
    {"linuxmint", "Linux Mint", "Debian"},
    {"pop", "Pop!_OS", "Debian"},
    {"raspbian", "Debian", "Debian"},
    {"rhel", "RedHat", "RedHat"},
    {"centos", "CentOS", "RedHat"},
    {"rocky", "Rocky", "RedHat"},
    {"almalinux", "AlmaLinux", "RedHat"},
    {"fedora", "Fedora", "RedHat"},
    {"ol", "OracleLinux", "RedHat"},
    {"amzn", "Amazon", "RedHat"},
    {"opensuse-leap", "openSUSE Leap", "Suse"},
    {"sles", "SLES", "Suse"},
    {"arch", "Archlinux", "Archlinux"},
};

// The distribution facts from os-release (facts.os_release), else from the
// pretty name older agents sent ("Debian GNU/Linux 12 (bookworm)").
void Distribution(const json& facts, json& out) {
  json release = facts.contains("os_release") && facts["os_release"].is_object()
                     ? facts["os_release"]
                     : json::object();
  std::string id = Str(release, "id");
  std::string version = Str(release, "version_id");
  std::string codename = Str(release, "version_codename");
  const std::string pretty = Str(facts, "os");
  if (id.empty() && !pretty.empty()) {
    std::string first = pretty.substr(0, pretty.find(' '));
    for (auto& c : first) c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
    id = first == "red" ? "rhel" : first;
    size_t digit = pretty.find_first_of("0123456789");
    if (digit != std::string::npos) {
      size_t end = pretty.find_first_not_of("0123456789.", digit);
      version = pretty.substr(digit, end == std::string::npos ? std::string::npos : end - digit);
    }
    size_t open = pretty.find('('), close = pretty.find(')');
    if (open != std::string::npos && close != std::string::npos && close > open)
      codename = pretty.substr(open + 1, close - open - 1);
  }
  if (id.empty()) return;
  std::string name = Str(release, "name"), family;
  for (const auto& d : kDistros)
    if (id == d.id) {
      name = d.name;
      family = d.family;
    }
  if (family.empty()) {
    // ID_LIKE names the family of a derivative ("ubuntu debian").
    std::string like = Str(release, "id_like");
    for (const auto& d : kDistros)
      if (like.find(d.id) != std::string::npos && family.empty()) family = d.family;
  }
  if (name.empty()) name = id;
  out["distribution"] = name;
  out["os_family"] = family.empty() ? name : family;
  if (!version.empty()) {
    out["distribution_version"] = version;
    out["distribution_major_version"] = version.substr(0, version.find('.'));
  }
  if (!codename.empty()) out["distribution_release"] = codename;
  const std::string f = out["os_family"];
  if (f == "Debian") out["pkg_mgr"] = "apt";
  if (f == "RedHat") out["pkg_mgr"] = "dnf";
  if (f == "Suse") out["pkg_mgr"] = "zypper";
  if (f == "Archlinux") out["pkg_mgr"] = "pacman";
}

}  // namespace

json AnsibleFacts(const NodeRecord& node, const json& facts) {
  json out = json::object();
  const std::string name = node.name();
  const size_t dot = name.find('.');
  out["hostname"] = name.substr(0, dot);
  out["nodename"] = name;
  out["fqdn"] = name;
  out["domain"] = dot == std::string::npos ? "" : name.substr(dot + 1);
  out["system"] = "Linux";
  Distribution(facts, out);
  if (std::string arch = Str(facts, "arch"); !arch.empty()) {
    out["architecture"] = arch;
    out["machine"] = arch;
  }
  if (std::string kernel = Str(facts, "kernel"); !kernel.empty()) out["kernel"] = kernel;
  if (int64_t mem = Count(facts, "memory_bytes"); mem >= 0) out["memtotal_mb"] = mem / 1048576;
  if (facts.contains("cpu") && facts["cpu"].is_object()) {
    const json& cpu = facts["cpu"];
    const int64_t threads = Count(cpu, "threads"), cores = Count(cpu, "cores");
    const int64_t sockets = std::max<int64_t>(1, Count(cpu, "sockets"));
    if (threads > 0) {
      out["processor_vcpus"] = threads;
      out["processor_nproc"] = threads;
    }
    if (cores > 0) {
      out["processor_cores"] = cores / sockets;
      out["processor_count"] = sockets;
      if (threads > 0) out["processor_threads_per_core"] = threads / cores;
    }
  }
  if (facts.contains("firmware") && facts["firmware"].is_object() &&
      facts["firmware"].contains("uefi") && facts["firmware"]["uefi"].is_boolean())
    out["efi"] = facts["firmware"]["uefi"].get<bool>();
  out["service_mgr"] = "systemd";
  if (!node.ip.empty()) {
    json v4 = {{"address", node.ip}};
    if (!node.mac.empty()) v4["macaddress"] = node.mac;
    if (facts.contains("nics") && facts["nics"].is_array())
      for (const auto& nic : facts["nics"])
        if (nic.is_object() && Str(nic, "mac") == node.mac) v4["interface"] = Str(nic, "name");
    out["default_ipv4"] = v4;
    out["all_ipv4_addresses"] = json::array({node.ip});
  }
  return out;
}

std::shared_ptr<const NodeVarsBuilder::Parsed> NodeVarsBuilder::Facts(const NodeRecord& node) {
  const std::string key = node.facts + '\0' + node.name() + '\0' + node.ip + '\0' + node.mac;
  {
    std::lock_guard lock(mu_);
    auto it = parsed_.find(node.id);
    if (it != parsed_.end() && it->second->text == key) return it->second;
  }
  // Facts come from the node: text that is not a JSON object reads as none.
  json f = json::parse(node.facts, nullptr, false);
  if (f.is_discarded() || !f.is_object()) f = json::object();
  auto parsed = std::make_shared<Parsed>();
  parsed->text = key;
  parsed->ansible = std::make_shared<const json>(AnsibleFacts(node, f));
  parsed->facts = std::make_shared<const json>(std::move(f));
  std::lock_guard lock(mu_);
  ++parses_;
  parsed_[node.id] = parsed;
  return parsed;
}

json NodeVarsBuilder::For(const NodeRecord& node, const std::vector<NodeRecord>& group) {
  json all = json::array();
  json hostvars = json::object();
  auto add = [&](const NodeRecord& n) {
    all.push_back(n.name());
    auto p = Facts(n);
    json h = {{"ansible_host", n.ip},
              {"provisiond_mac", n.mac},
              {"provisiond_facts", *p->facts},
              {"ansible_facts", *p->ansible}};
    for (const auto& [k, v] : p->ansible->items()) h["ansible_" + k] = v;
    hostvars[n.name()] = std::move(h);
  };
  for (const auto& n : group) add(n);
  if (!hostvars.contains(node.name())) add(node);
  json groups = {{"all", all}, {"ungrouped", json::array()}};
  if (!node.profile_version.empty()) groups[node.profile_version] = all;
  auto mine = Facts(node);
  json vars = {{"inventory_hostname", node.name()},
               {"inventory_hostname_short", node.name().substr(0, node.name().find('.'))},
               {"ansible_host", node.ip},
               {"groups", groups},
               {"hostvars", hostvars},
               {"provisiond_facts", *mine->facts},
               {"provisiond_mac", node.mac},
               {"provisiond_profile", node.profile_version},
               {"provisiond_stage", "node"},
               {"provisiond_control_key", control_key_},
               {"ansible_facts", *mine->ansible}};
  for (const auto& [k, v] : mine->ansible->items()) vars["ansible_" + k] = v;
  return vars;
}

int64_t NodeVarsBuilder::parses() const {
  std::lock_guard lock(mu_);
  return parses_;
}

}  // namespace prov
