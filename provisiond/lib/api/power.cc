#include "api/power.h"

#include "power/power.h"
#include "profiles/inventory.h"

namespace prov {

using json = nlohmann::json;

HttpResponse PowerNode(const ApiContext& ctx, const HttpRequest& r) {
  auto body = ParseJsonObject(r.body, {"action"});
  if (!body.ok()) return HttpResponse::FromStatus(body.status());
  if (!body->contains("action") || !(*body)["action"].is_string())
    return HttpResponse::Error(400, "field 'action' is required: on, off, cycle or status");
  const std::string action = (*body)["action"];
  auto op = ParsePowerOp(action);
  if (!op.ok()) return HttpResponse::FromStatus(op.status());
  auto node = ctx.inventory->store().FindNode(r.Param("node"));
  if (!node.ok()) return HttpResponse::FromStatus(node.status());
  auto result = NodePower(ctx.inventory->store(), ctx.power, *node, *op, r.who);
  if (!result.ok()) return HttpResponse::FromStatus(result.status());
  return HttpResponse::Json(200, {{"node", node->name()}, {"action", action}, {"result", *result}});
}

}  // namespace prov
