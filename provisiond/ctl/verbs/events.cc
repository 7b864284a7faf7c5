// provisionctl events: the event history, or following it as it happens.
#include <CLI/CLI.hpp>

#include <ostream>

#include "../output/events.h"
#include "common.h"
#include "table.h"

namespace prov::ctl {
namespace {

using json = nlohmann::json;

void PrintEvents(Context& ctx, const Args& a, const json& events) {
  for (const auto& e : events) ctx.out << (a.json ? e.dump() + "\n" : RenderEvent(e));
  ctx.out << std::flush;
}

int FollowEvents(Context& ctx, const Args& a) {
  int64_t after = 0;
  if (a.since) {
    after = *a.since;
  } else {
    // From now: the history can be long, and --since 0 asks for it.
    auto status = ctx.client.Get(kApi + "/status");
    if (!status.ok()) return Fail(ctx, status.status());
    after = status->value("last_event", int64_t{0});
  }
  // provisiond filters by node, and its cursor ("next") moves past the
  // events of other nodes, so a long poll waits for this node's only. The
  // node is followed by its MAC, which a rename does not change.
  std::string node;
  if (!a.node.empty()) {
    auto found = ctx.client.Get(NodePath(a.node));
    if (!found.ok()) return Fail(ctx, found.status());
    node = found->value("mac", a.node);
  }
  const std::string limit = a.limit > 0 ? std::to_string(a.limit) : "";
  InterruptScope interrupt(ctx.client);
  while (!interrupt.interrupted()) {
    auto r = ctx.client.Get(kApi + "/events" +
                                QueryString({{"after", std::to_string(after)},
                                             {"limit", limit},
                                             {"node", node},
                                             {"wait", std::to_string(kEventWaitS)}}),
                            kEventWaitS + 15);
    if (interrupt.interrupted()) break;
    if (!r.ok()) return Fail(ctx, r.status());
    PrintEvents(ctx, a, r->value("events", json::array()));
    after = r->value("next", after);
  }
  return kExitOk;
}

int RunEvents(Context& ctx, const Args& a) {
  if (a.follow) return FollowEvents(ctx, a);
  const int64_t after = a.since.value_or(0);
  auto r = ctx.client.Get(kApi + "/events" +
                          QueryString({{"after", std::to_string(after)},
                                       {"limit", a.limit > 0 ? std::to_string(a.limit) : ""},
                                       {"node", a.node}}));
  if (!r.ok()) return Fail(ctx, r.status());
  const json events = r->value("events", json::array());
  PrintEvents(ctx, a, events);
  const int64_t page = a.limit > 0 ? a.limit : 1000;  // the API's default limit
  if (static_cast<int64_t>(events.size()) >= page)
    ctx.err << "provisionctl: there may be more: provisionctl events --since "
            << r->value("next", after) << "\n";
  return kExitOk;
}

}  // namespace

std::vector<Verb> EventsVerbs() {
  return {
      {"events", "events [--node NODE] [--since ID] [--limit N] [--follow] [--json]",
       "Print the event history, or follow it as it happens",
       R"(Prints events (every state change, enrollment, profile assignment...) oldest
first, one per line: TIME (local, ISO 8601, milliseconds) NODE KIND DETAIL (who).
--node limits them to one node (by hostname or MAC; --follow follows that
node's events only), --since to events after that event ID, --limit
to that many (the API returns at most 1000 unless told). --follow keeps waiting
for new events (long polls of 25 s) until interrupted with Ctrl-C; without
--since it starts from now (--since 0 prints the history first). --json prints
one JSON object per line (JSON Lines).

Examples:
  provisionctl events --node node0
  provisionctl events --follow
  provisionctl events --follow --node node0
  provisionctl events --since 120 --limit 50 --json)",
       [](CLI::App& c, Args& a) {
         c.add_option("--node", a.node, "Only events of this node (hostname or MAC)")
             ->type_name("NODE");
         c.add_option("--since", a.since, "Only events after this event ID")
             ->type_name("ID")
             ->check(CLI::Range(int64_t{0}, int64_t{1} << 52).description(""));
         c.add_option("--limit", a.limit, "At most this many events (per request)")
             ->type_name("N")
             ->check(CLI::Range(int64_t{1}, int64_t{100000}));
         c.add_flag("-f,--follow", a.follow, "Keep printing new events until Ctrl-C");
         AddJsonFlag(c, a);
       },
       RunEvents},
  };
}

}  // namespace prov::ctl
