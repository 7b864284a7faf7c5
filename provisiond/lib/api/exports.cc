#include "api/exports.h"

#include <algorithm>
#include <map>

#include "base/hostlist.h"
#include "base/json_fields.h"
#include "profiles/hardware_check.h"
#include "profiles/inventory.h"

namespace prov {
namespace {

using json = nlohmann::json;

bool Selectable(const NodeRecord& n) {
  return n.state != NodeState::kDiscovered && n.state != NodeState::kRetired;
}

// GPUs in the facts' PCI list: NVIDIA (10de) display/3D controllers.
int NvidiaGpus(const json& facts) {
  int count = 0;
  if (!facts.contains("pci") || !facts["pci"].is_array()) return 0;
  for (const auto& d : facts["pci"]) {
    std::string vendor = JsonString(d, "vendor_id");
    std::string cls = JsonString(d, "class");
    if (vendor == "10de" && (cls.rfind("0300", 0) == 0 || cls.rfind("0302", 0) == 0)) ++count;
  }
  return count;
}

// The accelerators' models, for a label: "GeForce RTX 5090" from
// "GB202 [GeForce RTX 5090]", the PCI ID of one the node could not name;
// distinct, in PCI order, comma-separated; "none" without any.
std::string AcceleratorLabel(const json& facts) {
  std::vector<std::string> models;
  for (const auto& a : Accelerators(facts)) {
    std::string name = a.value("name", "");
    size_t open = name.find('['), close = name.rfind(']');
    if (open != std::string::npos && close != std::string::npos && close > open)
      name = name.substr(open + 1, close - open - 1);
    if (name.empty()) name = a.value("pci_id", "");
    if (std::find(models.begin(), models.end(), name) == models.end()) models.push_back(name);
  }
  std::string out;
  for (const auto& m : models) out += (out.empty() ? "" : ",") + m;
  return out.empty() ? "none" : out;
}

struct Exporter {
  const char* name;
  int port;
  bool (*wanted)(const json& facts);
};

constexpr Exporter kExporters[] = {
    {"node", 9100, [](const json&) { return true; }},
    {"dcgm", 9400, [](const json& facts) { return NvidiaGpus(facts) > 0; }},
};

}  // namespace

json PrometheusTargets(const std::vector<NodeRecord>& nodes, const std::string& exporter) {
  json groups = json::array();
  for (const auto& n : nodes) {
    if (!Selectable(n) || n.ip.empty()) continue;
    json facts = json::parse(n.facts, nullptr, false);
    if (!facts.is_object()) facts = json::object();
    for (const Exporter& e : kExporters) {
      if ((!exporter.empty() && exporter != e.name) || !e.wanted(facts)) continue;
      const bool v6 = n.ip.find(':') != std::string::npos;
      groups.push_back(
          {{"targets", {(v6 ? "[" + n.ip + "]" : n.ip) + ":" + std::to_string(e.port)}},
           {"labels",
            {{"hostname", n.name()},
             {"mac", n.mac},
             {"profile", n.profile_version},
             {"state", ToString(n.state)},
             {"accelerator", AcceleratorLabel(facts)},
             {"exporter", e.name}}}});
    }
  }
  return groups;
}

HttpResponse GetPrometheusTargets(const ApiContext& ctx, const HttpRequest& r) {
  const std::string exporter = r.Query("exporter");
  bool known = exporter.empty();
  for (const Exporter& e : kExporters) known |= exporter == e.name;
  if (!known)
    return HttpResponse::FromStatus(
        Status::Invalid("unknown exporter '" + exporter + "' (node, dcgm)"));
  return HttpResponse::Json(200, PrometheusTargets(ctx.inventory->store().ListNodes(), exporter));
}

HttpResponse GetExport(const ApiContext& ctx, const HttpRequest& r) {
  Inventory& inv = *ctx.inventory;
  std::string selector = r.Query("nodes");
  std::vector<NodeRecord> nodes;
  if (selector.empty()) selector = "all";
  auto names = SelectNodes(inv, selector);
  if (!names.ok()) return HttpResponse::FromStatus(names.status());
  for (const auto& name : *names) {
    auto n = inv.store().FindNode(name);
    if (n.ok()) nodes.push_back(*n);
  }
  auto text = Export(r.Param("format"), nodes);
  if (!text.ok()) return HttpResponse::FromStatus(text.status());
  if (r.Query("json") == "1")
    return HttpResponse::Json(200, {{"format", r.Param("format")}, {"text", *text}});
  return HttpResponse::Text(200, *text);
}

Result<std::vector<std::string>> SelectNodes(Inventory& inv, const std::string& selector) {
  std::vector<std::string> out;
  if (selector == "all" || selector.rfind('@', 0) == 0) {
    const std::string profile = selector == "all" ? "" : selector.substr(1);
    for (const auto& n : inv.store().ListNodes())
      if (Selectable(n) && !n.ip.empty() && (profile.empty() || n.profile_version == profile))
        out.push_back(n.name());
    if (out.empty())
      return Status::NotFound("no enrolled node with an address matches '" + selector + "'");
    return out;
  }
  auto names = ExpandHostlist(selector);
  if (!names.ok()) return names.status();
  for (const auto& name : *names) {
    auto n = inv.store().FindNode(name);
    if (!n.ok()) return n.status();
    out.push_back(n->name());
  }
  return out;
}

Result<std::vector<std::string>> SelectNodesField(Inventory& inv, const json& body) {
  if (!body.contains("nodes") || !body["nodes"].is_string() ||
      body["nodes"].get<std::string>().empty())
    return Status::Invalid("field 'nodes' (a hostlist) is required");
  return SelectNodes(inv, body["nodes"].get<std::string>());
}

Result<std::string> Export(const std::string& format, const std::vector<NodeRecord>& nodes) {
  std::string out;
  if (format == "hostfile") {
    for (const auto& n : nodes) out += n.name() + "\n";
    return out;
  }
  if (format == "hostfile-ip") {
    for (const auto& n : nodes)
      if (!n.ip.empty()) out += n.ip + "\n";
    return out;
  }
  if (format == "ansible-inventory") {
    // YAML inventory: every node in `all` and in a group named after its
    // profile, with ansible_host and the facts provisiond recorded.
    std::map<std::string, std::vector<std::string>> groups;
    out = "all:\n  hosts:\n";
    for (const auto& n : nodes) {
      json facts = json::parse(n.facts, nullptr, false);
      if (facts.is_discarded()) facts = json::object();
      out += "    " + n.name() + ":\n";
      if (!n.ip.empty()) out += "      ansible_host: " + n.ip + "\n";
      out += "      provisiond_mac: \"" + n.mac + "\"\n";
      // JSON is YAML: the facts go in flow style, on one line.
      out += "      provisiond_facts: " + facts.dump() + "\n";
      if (!n.profile_version.empty()) groups[n.profile_version].push_back(n.name());
    }
    if (!groups.empty()) {
      out += "  children:\n";
      for (const auto& [profile, names] : groups) {
        std::string group = profile;
        for (char& c : group)
          if (!isalnum(static_cast<unsigned char>(c))) c = '_';
        out += "    profile_" + group + ":\n      hosts:\n";
        for (const auto& name : names) out += "        " + name + ":\n";
      }
    }
    return out;
  }
  if (format == "slurm-nodes") {
    // slurm.conf NodeName lines from the recorded facts.
    for (const auto& n : nodes) {
      json facts = json::parse(n.facts, nullptr, false);
      if (facts.is_discarded()) facts = json::object();
      out += "NodeName=" + n.name();
      if (!n.ip.empty()) out += " NodeAddr=" + n.ip;
      if (facts.contains("cpu") && facts["cpu"].is_object()) {
        uint64_t cpus = JsonUint(facts["cpu"], "threads");
        if (cpus > 0) out += " CPUs=" + std::to_string(cpus);
      }
      // Slurm's RealMemory is in MiB; leave the OS some room.
      if (uint64_t bytes = JsonUint(facts, "memory_bytes"); bytes > 0)
        out += " RealMemory=" + std::to_string(bytes / (1024 * 1024) * 95 / 100);
      int gpus = NvidiaGpus(facts);
      if (gpus > 0) out += " Gres=gpu:" + std::to_string(gpus);
      out += " State=UNKNOWN\n";
    }
    return out;
  }
  return Status::Invalid("unknown export format '" + format +
                         "' (hostfile, hostfile-ip, ansible-inventory, slurm-nodes)");
}

}  // namespace prov
