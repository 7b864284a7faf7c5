#include "api/run_api.h"

#include <filesystem>
#include <map>
#include <sstream>

#include "base/hostlist.h"
#include "base/json_fields.h"

namespace prov {
namespace {

using json = nlohmann::json;
using Access = Router::Access;

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

HttpResponse ListRuns(Inventory& inv, const HttpRequest& r) {
  RunFilter filter;
  if (std::string node = r.Query("node"); !node.empty()) {
    auto n = inv.store().FindNode(node);
    if (!n.ok()) return HttpResponse::FromStatus(n.status());
    filter.node_id = n->id;
  }
  filter.status = r.Query("status");
  if (std::string ids = r.Query("ids"); !ids.empty()) {
    std::stringstream ss(ids);
    std::string id;
    while (std::getline(ss, id, ',')) {
      if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos || id.size() > 15)
        return HttpResponse::Error(400,
                                   "query parameter 'ids' must be numbers separated by commas");
      filter.ids.push_back(std::stoll(id));
    }
  }
  if (std::string limit = r.Query("limit"); !limit.empty()) {
    if (limit.find_first_not_of("0123456789") != std::string::npos || limit.size() > 6)
      return HttpResponse::Error(400, "query parameter 'limit' must be a number");
    filter.limit = std::stoll(limit);
  }
  json list = json::array();
  for (const auto& run : inv.store().ListRuns(filter)) {
    json j = ToJson(run);
    if (run.status == "running") {
      auto tasks = inv.store().RunTasks(run.id);
      if (!tasks.empty()) j["last_task"] = tasks.back().task;
    }
    list.push_back(std::move(j));
  }
  return HttpResponse::Json(200, {{"runs", list}});
}

HttpResponse ShowRun(Inventory& inv, const HttpRequest& r) {
  const std::string id = r.Param("id");
  if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos || id.size() > 15)
    return HttpResponse::Error(400, "run id must be a number");
  auto run = inv.store().GetRun(std::stoll(id));
  if (!run.ok()) return HttpResponse::FromStatus(run.status());
  json j = ToJson(*run);
  json tasks = json::array();
  for (const auto& t : inv.store().RunTasks(run->id)) tasks.push_back(ToJson(t));
  j["tasks"] = tasks;
  return HttpResponse::Json(200, j);
}

Result<std::vector<std::string>> NodesField(Inventory& inv, const json& body) {
  if (!body.contains("nodes") || !body["nodes"].is_string() ||
      body["nodes"].get<std::string>().empty())
    return Status::Invalid("field 'nodes' (a hostlist) is required");
  return SelectNodes(inv, body["nodes"].get<std::string>());
}

HttpResponse RunCommand(Inventory& inv, Configurator& conf, const HttpRequest& r) {
  auto body = ParseJsonObject(r.body, {"nodes", "command", "user", "timeout_s"});
  if (!body.ok()) return HttpResponse::FromStatus(body.status());
  auto nodes = NodesField(inv, *body);
  if (!nodes.ok()) return HttpResponse::FromStatus(nodes.status());
  if (!body->contains("command") || !(*body)["command"].is_string() ||
      (*body)["command"].get<std::string>().empty())
    return HttpResponse::Error(400, "field 'command' is required");
  if (body->contains("user") && !(*body)["user"].is_string())
    return HttpResponse::Error(400, "field 'user' must be a string");
  std::string user = JsonString(*body, "user");
  int timeout_s = 600;
  if (body->contains("timeout_s")) {
    // At most a day: the milliseconds must fit an int.
    const json& t = (*body)["timeout_s"];
    if (!t.is_number_integer() || t.get<int64_t>() < 1 || t.get<int64_t>() > 86400)
      return HttpResponse::Error(400, "field 'timeout_s' must be a number of seconds, 1 to 86400");
    timeout_s = t.get<int>();
  }
  const std::string command = (*body)["command"];
  auto results = conf.Command(*nodes, command, user, timeout_s * 1000);
  json list = json::array();
  int failed = 0;
  for (const auto& c : results) {
    if (c.status != "ok") ++failed;
    list.push_back(ToJson(c));
  }
  EventRecord e{
      0,
      0,
      0,
      "",
      "cmd",
      "on " + std::to_string(results.size()) + " node(s)" + (user.empty() ? "" : " as " + user) +
          ": " + (command.size() > 200 ? command.substr(0, 200) + "..." : command) + ": " +
          std::to_string(results.size() - failed) + " ok, " + std::to_string(failed) + " failed",
      r.who};
  inv.store().AppendEvent(e);
  return HttpResponse::Json(200, {{"results", list}, {"failed", failed}});
}

HttpResponse RunPlaybook(Inventory& inv, Configurator& conf, const std::string& playbooks_dir,
                         const HttpRequest& r) {
  auto body = ParseJsonObject(r.body, {"playbook", "nodes", "extra_vars"});
  if (!body.ok()) return HttpResponse::FromStatus(body.status());
  if (!body->contains("playbook") || !(*body)["playbook"].is_string())
    return HttpResponse::Error(400, "field 'playbook' (a path) is required");
  std::string path = (*body)["playbook"];
  // A bare name is one of the shipped playbooks; a path is read as it is
  // (provisionctl sends absolute paths).
  if (path.find('/') == std::string::npos) path = playbooks_dir + "/" + path;
  if (!std::filesystem::is_regular_file(path))
    return HttpResponse::Error(
        404, "no playbook at " + path + " (provisiond reads it: give a path on the control node)");
  json extra = body->value("extra_vars", json::object());
  if (!extra.is_object()) return HttpResponse::Error(400, "field 'extra_vars' must be an object");
  auto nodes = NodesField(inv, *body);
  if (!nodes.ok()) return HttpResponse::FromStatus(nodes.status());
  auto runs = conf.StartPlaybook(path, *nodes, extra, r.who);
  if (!runs.ok()) return HttpResponse::FromStatus(runs.status());
  json list = json::array();
  for (const auto& run : *runs) list.push_back(ToJson(run));
  return HttpResponse::Json(202, {{"runs", list}});
}

HttpResponse ConfigureNode(Configurator& conf, const HttpRequest& r) {
  auto body = ParseJsonObject(r.body.empty() ? "{}" : r.body, {"force"});
  if (!body.ok()) return HttpResponse::FromStatus(body.status());
  if (body->contains("force") && !(*body)["force"].is_boolean())
    return HttpResponse::Error(400, "field 'force' must be true or false");
  bool force = body->value("force", false);
  std::string why;
  if (!conf.Configure(r.Param("node"), r.who, force, &why)) return HttpResponse::Error(409, why);
  return HttpResponse::Json(202, {{"node", r.Param("node")}, {"result", "queued"}});
}

HttpResponse ExportRoute(Inventory& inv, const HttpRequest& r) {
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

}  // namespace

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

void AddRunApiRoutes(Router& router, Inventory& inv, Configurator& conf,
                     const std::string& playbooks_dir) {
  const std::string v1 = "/api/v1";
  router.Add("GET", v1 + "/runs", Access::kRead,
             [&inv](const HttpRequest& r) { return ListRuns(inv, r); });
  router.Add("GET", v1 + "/runs/{id}", Access::kRead,
             [&inv](const HttpRequest& r) { return ShowRun(inv, r); });
  router.Add("POST", v1 + "/cmd", Access::kWrite,
             [&inv, &conf](const HttpRequest& r) { return RunCommand(inv, conf, r); });
  router.Add("POST", v1 + "/playbook-runs", Access::kWrite,
             [&inv, &conf, playbooks_dir](const HttpRequest& r) {
               return RunPlaybook(inv, conf, playbooks_dir, r);
             });
  router.Add("POST", v1 + "/nodes/{node}/configure", Access::kWrite,
             [&conf](const HttpRequest& r) { return ConfigureNode(conf, r); });
  router.Add("GET", v1 + "/export/{format}", Access::kRead,
             [&inv](const HttpRequest& r) { return ExportRoute(inv, r); });
}

}  // namespace prov
