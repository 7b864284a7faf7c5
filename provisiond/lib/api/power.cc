#include "api/power.h"

#include "power/power.h"
#include "profiles/inventory.h"

namespace prov {

using json = nlohmann::json;

HttpResponse PowerNode(const ApiContext& ctx, const HttpRequest& r) {
  auto body = ParseJsonObject(r.body, {"action"});
  if (!body.ok()) return HttpResponse::FromStatus(body.status());
  if (!body->contains("action") || !(*body)["action"].is_string())
    return HttpResponse::Error(400, "field 'action' is required: on, off or cycle");
  const std::string action = (*body)["action"];
  auto node = ctx.inventory->store().FindNode(r.Param("node"));
  if (!node.ok()) return HttpResponse::FromStatus(node.status());
  auto power = json::parse(node->power, nullptr, false);
  auto result = PowerAction(ctx.power, power, action, node->hostname, node->mac);
  EventRecord e{
      .node_id = node->id,
      .node = node->name(),
      .kind = "power",
      .detail = action + ": " + (result.ok() ? *result : "failed: " + result.status().message()),
      .who = r.who};
  ctx.inventory->store().RecordEvent(e);
  if (!result.ok()) return HttpResponse::FromStatus(result.status());
  return HttpResponse::Json(200, {{"node", node->name()}, {"action", action}, {"result", *result}});
}

}  // namespace prov
