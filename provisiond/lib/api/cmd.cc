#include "api/cmd.h"

#include "api/exports.h"
#include "base/json_fields.h"
#include "configure/configurator.h"
#include "profiles/inventory.h"

namespace prov {

using json = nlohmann::json;

namespace {

constexpr int64_t kGatherAnswerBytes = int64_t{256} << 20;

// The fields cmd and gather share: the nodes, "user", "timeout_s".
struct NodeJob {
  std::vector<std::string> nodes;
  std::string user;
  int timeout_s = 600;
};

Result<NodeJob> ReadNodeJob(const ApiContext& ctx, const json& body) {
  NodeJob job;
  auto nodes = SelectNodesField(*ctx.inventory, body);
  if (!nodes.ok()) return nodes.status();
  job.nodes = std::move(*nodes);
  if (body.contains("user") && !body["user"].is_string())
    return Status::Invalid("field 'user' must be a string");
  job.user = JsonString(body, "user");
  if (body.contains("timeout_s")) {
    // At most a day: the milliseconds must fit an int.
    const json& t = body["timeout_s"];
    if (!t.is_number_integer() || t.get<int64_t>() < 1 || t.get<int64_t>() > 86400)
      return Status::Invalid("field 'timeout_s' must be a number of seconds, 1 to 86400");
    job.timeout_s = t.get<int>();
  }
  return job;
}

}  // namespace

HttpResponse RunCommand(const ApiContext& ctx, const HttpRequest& r) {
  auto body = ParseJsonObject(r.body, {"nodes", "command", "user", "timeout_s"});
  if (!body.ok()) return HttpResponse::FromStatus(body.status());
  auto job = ReadNodeJob(ctx, *body);
  if (!job.ok()) return HttpResponse::FromStatus(job.status());
  if (!body->contains("command") || !(*body)["command"].is_string() ||
      (*body)["command"].get<std::string>().empty())
    return HttpResponse::Error(400, "field 'command' is required");
  const std::vector<std::string>& nodes = job->nodes;
  const std::string& user = job->user;
  const int timeout_s = job->timeout_s;
  const std::string command = (*body)["command"];
  auto results = ctx.configurator->Command(nodes, command, user, timeout_s * 1000);
  json list = json::array();
  int failed = 0;
  for (const auto& c : results) {
    if (c.status != CommandStatus::kOk) ++failed;
    list.push_back(ToJson(c));
  }
  // Built with append: GCC 12 at -O2 warns (-Warray-bounds, a false
  // positive) on the same text built with operator+.
  std::string detail = "on " + std::to_string(results.size()) + " node(s)";
  if (!user.empty()) detail.append(" as ").append(user);
  detail.append(": ").append(command, 0, 200);
  if (command.size() > 200) detail.append("...");
  detail.append(": ")
      .append(std::to_string(results.size() - failed))
      .append(" ok, ")
      .append(std::to_string(failed))
      .append(" failed");
  EventRecord e{.kind = "cmd", .detail = detail, .who = r.who};
  ctx.inventory->store().RecordEvent(e);
  return HttpResponse::Json(200, {{"results", list}, {"failed", failed}});
}

HttpResponse GatherFiles(const ApiContext& ctx, const HttpRequest& r) {
  auto body = ParseJsonObject(r.body, {"nodes", "path", "user", "timeout_s"});
  if (!body.ok()) return HttpResponse::FromStatus(body.status());
  auto job = ReadNodeJob(ctx, *body);
  if (!job.ok()) return HttpResponse::FromStatus(job.status());
  if (!body->contains("path") || !(*body)["path"].is_string())
    return HttpResponse::Error(400, "field 'path' is required");
  const std::string path = (*body)["path"];
  if (Status s = ValidateGatherPath(path); !s.ok()) return HttpResponse::FromStatus(s);
  auto results = ctx.configurator->Gather(job->nodes, path, job->user, job->timeout_s * 1000);
  json list = json::array();
  int failed = 0;
  int64_t bytes = 0;
  for (auto& g : results) {
    // One answer carries at most kGatherAnswerBytes of files: the nodes past
    // it fail with a message rather than growing it without end.
    if (g.status == CommandStatus::kOk && bytes + g.size > kGatherAnswerBytes) {
      g.status = CommandStatus::kFailed;
      g.error = "not sent: the answer would pass " + std::to_string(kGatherAnswerBytes >> 20) +
                " MiB; gather from fewer nodes at once";
      g.base64.clear();
      g.size = 0;
    }
    if (g.status != CommandStatus::kOk) ++failed;
    bytes += g.size;
    list.push_back(ToJson(g));
  }
  std::string detail = path + " from " + std::to_string(results.size()) + " node(s)";
  if (!job->user.empty()) detail.append(" as ").append(job->user);
  detail.append(": ")
      .append(std::to_string(results.size() - failed))
      .append(" ok (")
      .append(std::to_string(bytes))
      .append(" bytes), ")
      .append(std::to_string(failed))
      .append(" failed");
  EventRecord e{.kind = "gather", .detail = detail, .who = r.who};
  ctx.inventory->store().RecordEvent(e);
  return HttpResponse::Json(200, {{"results", list}, {"failed", failed}});
}

}  // namespace prov
