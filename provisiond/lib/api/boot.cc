#include "api/boot.h"

#include "api/events.h"
#include "boot/boot.h"
#include "hello/phonehome.h"
#include "images/image_catalog.h"
#include "profiles/inventory.h"
#include "store/boot_history.h"
#include "store/timeline.h"

namespace prov {
namespace {

using json = nlohmann::json;

// A node's events read for its boots: enough for many boots with the runs
// and health checks between them; a node with more shows the boots within.
constexpr int64_t kBootEventsRead = 20000;

std::string StageName(const std::optional<BootStage>& stage) {
  return stage ? std::string(ToString(*stage)) : std::string();
}

json StageNames() {
  json names = json::array();
  for (BootStage s : AllBootStages()) names.push_back(ToString(s));
  return names;
}

}  // namespace

HttpResponse ServeBootScript(const ApiContext& ctx, const HttpRequest& r) {
  const std::string& script = r.Param("script");
  auto name = ctx.boot->loader().ParseScriptName(script);
  if (!name) return ctx.boot->LoaderFile(r, script);  // UEFI HTTP boot: the loader itself
  if (name->start) return ctx.boot->StartScript();
  return ctx.boot->NodeScript(name->node, r.remote);
}

HttpResponse ServeBootFile(const ApiContext& ctx, const HttpRequest& r) {
  return ctx.boot->NodeFile(r, r.Param("mac"), r.Param("file"));
}

HttpResponse NodeHello(const ApiContext& ctx, const HttpRequest& r) {
  if (Status d = CheckJsonDepth(r.body); !d.ok()) return HttpResponse::FromStatus(d);
  auto facts = json::parse(r.body, nullptr, false);
  if (facts.is_discarded() || !facts.is_object())
    return HttpResponse::Error(400, "the hello body must be a JSON object of facts");
  auto node = ctx.phonehome->Hello(r.Param("node"), NodeCaller::From(r), facts);
  if (!node.ok()) return HttpResponse::FromStatus(node.status());
  if (node->state == NodeState::kBooted && ctx.on_booted) ctx.on_booted(*node);
  return HttpResponse::Json(200, {{"node", node->name()},
                                  {"state", std::string(ToString(node->state))},
                                  {"reason", node->reason}});
}

HttpResponse NodeReport(const ApiContext& ctx, const HttpRequest& r) {
  auto body = ParseJsonObject(r.body, {"ticket", "stage", "error"});
  if (!body.ok()) return HttpResponse::FromStatus(body.status());
  auto str = [&](const char* k) {
    return body->contains(k) && (*body)[k].is_string() ? (*body)[k].get<std::string>() : "";
  };
  NodeCaller caller = NodeCaller::From(r);
  if (caller.ticket.empty()) caller.ticket = str("ticket");  // the initrd sends it in the body
  Status s = ctx.phonehome->Report(r.Param("node"), caller, str("stage").substr(0, 100),
                                   str("error").substr(0, 2000));
  if (!s.ok()) return HttpResponse::FromStatus(s);
  return HttpResponse::Json(200, {{"recorded", true}});
}

HttpResponse NodeWhy(const ApiContext& ctx, const HttpRequest& r) {
  Store& store = ctx.inventory->store();
  auto node = store.FindNode(r.Param("node"));
  if (!node.ok()) return HttpResponse::FromStatus(node.status());
  auto events = store.ListEvents(0, node->id, 100000);
  BootTimeline t = ComputeBootTimeline(*node, events);
  json steps = json::array();
  int64_t start = t.steps.empty() ? 0 : t.steps.front().time_ms;
  for (const auto& s : t.steps)
    steps.push_back({{"stage", ToString(s.stage)},
                     {"time", s.time_ms},
                     {"after_ms", s.time_ms - start},
                     {"detail", s.detail}});
  json out = {{"node", node->name()},
              {"mac", node->mac},
              {"state", std::string(ToString(node->state))},
              {"stages", StageNames()},
              {"steps", steps},
              {"errors", t.errors},
              {"last_stage", StageName(t.last_stage)},
              {"next_stage", StageName(t.next_stage)},
              {"summary", t.summary}};
  if (!node->reason.empty()) out["reason"] = node->reason;
  // Its last power actions (an operator's, or its recovery's: why it was
  // cycled, which try it was), newest last.
  json power = json::array();
  for (const auto& e : events)
    if (e.kind == "power")
      power.push_back({{"time", e.time_ms}, {"detail", e.detail}, {"who", e.who}});
  if (power.size() > 3) power.erase(power.begin(), power.end() - 3);
  out["power"] = power;
  // What the node printed last (the network console): where it stopped, in
  // its own words, and the failing line when it is further up.
  if (ctx.console_log) {
    ConsoleLine error;
    json tail = json::array();
    for (const auto& l : ctx.console_log->Tail(node->id, 8, &error)) tail.push_back(ToJson(l));
    out["console"] = tail;
    if (error.id != 0) out["console_error"] = ToJson(error);
  }
  if (!node->image_version.empty()) {
    auto image = ctx.images->Resolve(node->image_version);
    out["image"] =
        image.ok() ? image->ref() : node->image_version + " (" + image.status().message() + ")";
    if (image.ok()) {
      // As the loader of this boot writes it: the signed chain's when the
      // node went through shim and grub, iPXE's otherwise.
      bool signed_chain = false;
      for (const auto& s : t.steps) signed_chain |= ChainOf(s.stage) == BootChain::kSigned;
      out["kernel_cmdline"] = ctx.boot->KernelCommandLine(
          *node, *image, signed_chain ? ctx.boot->uefi_loader() : ctx.boot->loader());
    }
  }
  return HttpResponse::Json(200, out);
}

HttpResponse NodeBoots(const ApiContext& ctx, const HttpRequest& r) {
  auto count = r.QueryInt("count", 2, 1, 10);
  if (!count.ok()) return HttpResponse::FromStatus(count.status());
  Store& store = ctx.inventory->store();
  auto node = store.FindNode(r.Param("node"));
  if (!node.ok()) return HttpResponse::FromStatus(node.status());
  std::vector<EventRecord> events = store.LastEvents(node->id, kBootEventsRead);
  const bool more = static_cast<int64_t>(events.size()) == kBootEventsRead;
  json boots = json::array();
  for (const BootTimeline& t : RecentBoots(*node, std::move(events), static_cast<size_t>(*count))) {
    json steps = json::array();
    const int64_t start = t.steps.front().time_ms;
    int64_t previous = start;
    for (const auto& s : t.steps) {
      steps.push_back({{"stage", ToString(s.stage)},
                       {"time", s.time_ms},
                       {"after_ms", s.time_ms - start},
                       {"took_ms", s.time_ms - previous},
                       {"detail", s.detail}});
      previous = s.time_ms;
    }
    boots.push_back({{"start", start},
                     {"steps", steps},
                     {"errors", t.errors},
                     {"last_stage", StageName(t.last_stage)},
                     {"next_stage", StageName(t.next_stage)},
                     {"complete", t.last_stage == BootStage::kHello}});
  }
  return HttpResponse::Json(200, {{"node", node->name()},
                                  {"state", std::string(ToString(node->state))},
                                  {"stages", StageNames()},
                                  {"boots", boots},
                                  {"events_read_all", !more}});
}

}  // namespace prov
