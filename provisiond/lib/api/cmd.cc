#include "api/cmd.h"

#include "api/exports.h"
#include "base/json_fields.h"
#include "configure/configurator.h"
#include "profiles/inventory.h"

namespace prov {

using json = nlohmann::json;

HttpResponse RunCommand(const ApiContext& ctx, const HttpRequest& r) {
  auto body = ParseJsonObject(r.body, {"nodes", "command", "user", "timeout_s"});
  if (!body.ok()) return HttpResponse::FromStatus(body.status());
  auto nodes = SelectNodesField(*ctx.inventory, *body);
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
  auto results = ctx.configurator->Command(*nodes, command, user, timeout_s * 1000);
  json list = json::array();
  int failed = 0;
  for (const auto& c : results) {
    if (c.status != "ok") ++failed;
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
  EventRecord e{0, 0, 0, "", "cmd", detail, r.who};
  ctx.inventory->store().AppendEvent(e);
  return HttpResponse::Json(200, {{"results", list}, {"failed", failed}});
}

}  // namespace prov
