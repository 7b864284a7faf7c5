#include "api/runs.h"

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "api/exports.h"
#include "base/file_util.h"
#include "configure/configurator.h"
#include "playbook/runner_choice.h"
#include "profiles/inventory.h"

namespace prov {

using json = nlohmann::json;

HttpResponse ListRuns(const ApiContext& ctx, const HttpRequest& r) {
  Inventory& inv = *ctx.inventory;
  RunFilter filter;
  if (std::string node = r.Query("node"); !node.empty()) {
    auto n = inv.store().FindNode(node);
    if (!n.ok()) return HttpResponse::FromStatus(n.status());
    filter.node_id = n->id;
  }
  if (std::string status = r.Query("status"); !status.empty()) {
    filter.status = ParseRunStatus(status);
    if (!filter.status)
      return HttpResponse::Error(400, "status '" + status +
                                          "' must be running, ok, failed, unreachable, "
                                          "interrupted or rebooted");
  }
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
    if (run.status == RunStatus::kRunning) {
      auto tasks = inv.store().RunTasks(run.id);
      if (!tasks.empty()) j["last_task"] = tasks.back().task;
    }
    list.push_back(std::move(j));
  }
  return HttpResponse::Json(200, {{"runs", list}});
}

HttpResponse ShowRun(const ApiContext& ctx, const HttpRequest& r) {
  Store& store = ctx.inventory->store();
  const std::string id = r.Param("id");
  if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos || id.size() > 15)
    return HttpResponse::Error(400, "run id must be a number");
  auto run = store.GetRun(std::stoll(id));
  if (!run.ok()) return HttpResponse::FromStatus(run.status());
  json j = ToJson(*run);
  json tasks = json::array();
  for (const auto& t : store.RunTasks(run->id)) tasks.push_back(ToJson(t));
  j["tasks"] = tasks;
  return HttpResponse::Json(200, j);
}

HttpResponse ConfigureNode(const ApiContext& ctx, const HttpRequest& r) {
  auto body = ParseJsonObject(r.body.empty() ? "{}" : r.body, {"force"});
  if (!body.ok()) return HttpResponse::FromStatus(body.status());
  if (body->contains("force") && !(*body)["force"].is_boolean())
    return HttpResponse::Error(400, "field 'force' must be true or false");
  bool force = body->value("force", false);
  std::string why;
  if (!ctx.configurator->Configure(r.Param("node"), r.who, force, &why))
    return HttpResponse::Error(409, why);
  return HttpResponse::Json(202, {{"node", r.Param("node")}, {"result", "queued"}});
}

namespace {

// The playbook a request names: a name inside playbooks_dir, or an absolute
// path (provisionctl sends them) that leads into playbooks_dir too. No route
// reads a file of the control node that the caller names, nor repeats its
// content.
Result<std::string> PlaybookOf(const ApiContext& ctx, const json& body) {
  if (!body.contains("playbook") || !body["playbook"].is_string())
    return Status::Invalid("field 'playbook' (a path) is required");
  std::string path = body["playbook"];
  namespace fs = std::filesystem;
  if (path.empty() || path[0] != '/') path = ctx.playbooks_dir + "/" + path;
  std::error_code ec;
  auto resolved = [&ec](const std::string& p) {
    fs::path r = fs::weakly_canonical(p, ec).lexically_normal();
    return r.has_filename() || r == r.root_path() ? r : r.parent_path();  // no trailing '/'
  };
  const fs::path root = resolved(ctx.playbooks_dir);
  const fs::path file = resolved(path);
  auto [end, rest] = std::mismatch(root.begin(), root.end(), file.begin(), file.end());
  if (ec || end != root.end() || rest == file.end())
    return Status::Error(Code::kForbidden,
                         "playbooks are run from playbooks_dir (" + ctx.playbooks_dir + ") only; " +
                             body["playbook"].get<std::string>() + " is outside it");
  if (!fs::is_regular_file(file))
    return Status::NotFound("no playbook " + file.string() + " in playbooks_dir (" +
                            ctx.playbooks_dir + ")");
  return file.string();
}

}  // namespace

HttpResponse CheckPlaybook(const ApiContext& ctx, const HttpRequest& r) {
  auto body = ParseJsonObject(r.body, {"playbook", "runner"});
  if (!body.ok()) return HttpResponse::FromStatus(body.status());
  auto path = PlaybookOf(ctx, *body);
  if (!path.ok()) return HttpResponse::FromStatus(path.status());
  auto wanted = ParsePlaybookRunner(body->value("runner", std::string("auto")));
  if (!wanted.ok()) return HttpResponse::FromStatus(wanted.status());
  const AnsibleTool& ansible = ctx.inventory->ansible();
  auto choice = ReadAndChoosePlaybookRunner(*path, *wanted, ansible.roles_path);
  Status verdict = choice.ok() ? CheckWithAnsible(*path, *choice, ansible) : choice.status();
  if (!verdict.ok())
    return HttpResponse::Json(
        200, {{"playbook", *path}, {"accepted", false}, {"error", verdict.message()}});
  return HttpResponse::Json(200, {{"playbook", *path},
                                  {"accepted", true},
                                  {"runner", ToString(choice->runner)},
                                  {"reason", choice->reason}});
}

HttpResponse StartHealthChecks(const ApiContext& ctx, const HttpRequest& r) {
  auto body = ParseJsonObject(r.body, {"nodes"});
  if (!body.ok()) return HttpResponse::FromStatus(body.status());
  auto nodes = SelectNodesField(*ctx.inventory, *body);
  if (!nodes.ok()) return HttpResponse::FromStatus(nodes.status());
  auto runs = ctx.configurator->StartHealthChecks(*nodes, r.who);
  if (!runs.ok()) return HttpResponse::FromStatus(runs.status());
  json list = json::array();
  for (const auto& run : *runs) list.push_back(ToJson(run));
  return HttpResponse::Json(202, {{"runs", list}});
}

HttpResponse StartPlaybookRuns(const ApiContext& ctx, const HttpRequest& r) {
  auto body = ParseJsonObject(r.body, {"playbook", "nodes", "extra_vars", "runner"});
  if (!body.ok()) return HttpResponse::FromStatus(body.status());
  auto file = PlaybookOf(ctx, *body);
  if (!file.ok()) return HttpResponse::FromStatus(file.status());
  std::string path = *file;
  json extra = body->value("extra_vars", json::object());
  if (!extra.is_object()) return HttpResponse::Error(400, "field 'extra_vars' must be an object");
  auto nodes = SelectNodesField(*ctx.inventory, *body);
  if (!nodes.ok()) return HttpResponse::FromStatus(nodes.status());
  auto wanted = ParsePlaybookRunner(body->value("runner", std::string("auto")));
  if (!wanted.ok()) return HttpResponse::FromStatus(wanted.status());
  RunnerChoice choice;
  auto runs = ctx.configurator->StartPlaybook(path, *nodes, extra, r.who, *wanted, &choice);
  if (!runs.ok()) return HttpResponse::FromStatus(runs.status());
  json list = json::array();
  for (const auto& run : *runs) list.push_back(ToJson(run));
  return HttpResponse::Json(
      202, {{"runs", list}, {"runner", ToString(choice.runner)}, {"reason", choice.reason}});
}

}  // namespace prov
