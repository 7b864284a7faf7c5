#include "commands.h"

#include <signal.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <istream>
#include <ostream>

#include "base/hostlist.h"
#include "cli.h"
#include "images/image_catalog.h"
#include "output.h"
#include "power/power.h"
#include "store/node_state.h"

namespace prov::ctl {
namespace {

using json = nlohmann::json;

const std::string kApi = "/api/v1";

// provisiond answers a power request once the driver is done (ipmitool or the
// power command may take up to its 30 s timeout), and an import once both
// files are hashed and copied.
constexpr long kPowerTimeoutS = 120;
constexpr long kImportTimeoutS = 600;
// Verifying reads the image's os-release back over NFS.
constexpr long kVerifyTimeoutS = 120;
// Long polls of GET /events wait this long for an event.
constexpr long kEventWaitS = 25;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Prints a failed request's message, with a hint where the fix is on our side
// of the wire, and returns kExitFailed.
int Fail(Context& ctx, const Status& s, const std::string& prefix = "") {
  ctx.err << "provisionctl: " << prefix << s.message() << "\n";
  if (s.code() == Code::kUnauthorized)
    ctx.err << (ctx.token_source.empty()
                    ? "provisionctl: give a token with --token-file FILE or PROVISIOND_TOKEN "
                      "(provisiond writes one to <data_dir>/tokens on first start)\n"
                    : "provisionctl: the token from " + ctx.token_source +
                          " is not in provisiond's tokens file\n");
  return kExitFailed;
}

void PrintJson(Context& ctx, const json& j) {
  ctx.out << j.dump() << "\n";
}

std::string NodePath(const std::string& node) {
  return kApi + "/nodes/" + UrlEncode(node);
}
std::string ImagePath(const std::string& ref) {
  return kApi + "/images/" + UrlEncode(ref);
}
std::string ProfilePath(const std::string& version) {
  return kApi + "/profiles/" + UrlEncode(version);
}

// The nodes a hostlist names; a single name (or a MAC, which has colons but
// no brackets) is taken as it is.
Result<std::vector<std::string>> NodeNames(const std::string& text) {
  if (!IsHostlist(text)) return std::vector<std::string>{text};
  return ExpandHostlist(text);
}

// Runs `change` for each node, printing its line or its error; a failure of
// one node does not stop the others, but an unreachable daemon or a refused
// token stops all, as every other node would fail the same way. A 503 that
// provisiond answers (a node's BMC or power command failed) is that node's
// failure only; `change` must return the status of the client's last call.
int ForEachNode(Context& ctx, const std::vector<std::string>& names,
                const std::function<Result<std::string>(const std::string&)>& change) {
  size_t failed = 0;
  for (const auto& name : names) {
    auto line = change(name);
    if (line.ok()) {
      ctx.out << name << ": " << *line << "\n";
      continue;
    }
    const Code code = line.status().code();
    const bool unreachable = code == Code::kUnavailable && ctx.client.last_http_status() == 0;
    if (unreachable || code == Code::kUnauthorized) return Fail(ctx, line.status());
    Fail(ctx, line.status(), name + ": ");
    ++failed;
  }
  if (failed && names.size() > 1)
    ctx.err << "provisionctl: " << failed << " of " << names.size() << " nodes failed\n";
  return failed ? kExitFailed : kExitOk;
}

// The node as one line after a change: "maintenance (cabling), profile v0.2";
// `name` is how the node was named, so a rename shows.
std::string NodeSummary(const std::string& name, const json& node) {
  std::string out;
  std::string hostname = node.value("hostname", "");
  if (hostname != name && node.value("mac", "") != name) out = "now " + hostname + ", ";
  out += node.value("state", "");
  if (std::string reason = node.value("reason", ""); !reason.empty()) out += " (" + reason + ")";
  std::string profile = node.value("profile", "");
  out += profile.empty() ? ", no profile" : ", profile " + profile;
  if (std::string ip = node.value("ip", ""); !ip.empty()) out += ", ip " + ip;
  if (std::string power = FormatPowerSpec(node.value("power", json::object())); !power.empty())
    out += ", power " + power;
  return out;
}

// A path as provisiond, on the control node, should read it: absolute, so it
// does not depend on provisiond's working directory.
std::string AbsolutePath(const std::string& path) {
  std::error_code ec;
  std::filesystem::path absolute = std::filesystem::absolute(path, ec);
  return ec ? path : absolute.lexically_normal().string();
}

// ---- verbs ----

int RunStatus(Context& ctx, const Args& a) {
  auto r = ctx.client.Get(kApi + "/status");
  if (!r.ok()) return Fail(ctx, r.status());
  if (a.json)
    PrintJson(ctx, *r);
  else
    ctx.out << RenderStatus(*r, ctx.client.url());
  return kExitOk;
}

int RunNodeList(Context& ctx, const Args& a) {
  // The daemon checks the hostlist too; checking it here makes a typo a usage
  // error, as it is for node set and node rm.
  if (auto names = NodeNames(a.target); !a.target.empty() && !names.ok())
    return UsageError(ctx, names.status().message());
  auto r = ctx.client.Get(kApi + "/nodes" +
                          QueryString({{"state", a.state.value_or("")},
                                       {"profile", a.profile.value_or("")},
                                       {"hostlist", a.target}}));
  if (!r.ok()) return Fail(ctx, r.status());
  if (a.json) {
    PrintJson(ctx, *r);
  } else if (r->value("nodes", json::array()).empty()) {
    bool filtered = a.state || a.profile || !a.target.empty();
    ctx.out << (filtered ? "no nodes match\n"
                         : "no nodes (enroll one: provisionctl node add <hostname> --mac <MAC>)\n");
  } else {
    ctx.out << RenderNodeTable((*r)["nodes"], NowMs());
  }
  return kExitOk;
}

int RunNodeShow(Context& ctx, const Args& a) {
  auto node = ctx.client.Get(NodePath(a.target));
  if (!node.ok()) return Fail(ctx, node.status());
  if (a.json) {
    PrintJson(ctx, *node);
    return kExitOk;
  }
  auto events = ctx.client.Get(
      kApi + "/events" + QueryString({{"node", node->value("mac", a.target)}, {"last", "20"}}));
  if (!events.ok()) return Fail(ctx, events.status());
  ctx.out << RenderNode(*node, events->value("events", json::array()), NowMs());
  return kExitOk;
}

int RunNodeWhy(Context& ctx, const Args& a) {
  auto r = ctx.client.Get(NodePath(a.target) + "/why");
  if (!r.ok()) return Fail(ctx, r.status());
  if (a.json)
    PrintJson(ctx, *r);
  else
    ctx.out << RenderWhy(*r);
  return kExitOk;
}

int RunNodeAdd(Context& ctx, const Args& a) {
  json body = {{"hostname", a.target}, {"mac", a.mac}};
  if (a.ip) body["ip"] = *a.ip;
  if (a.profile) body["profile"] = *a.profile;
  std::optional<json> power;
  if (a.power) {
    auto parsed = ParsePowerSpec(*a.power);
    if (!parsed.ok())
      return UsageError(ctx, "--power '" + *a.power + "': " + parsed.status().message());
    if (!parsed->empty()) power = *parsed;
  }
  auto r = ctx.client.Post(kApi + "/nodes", &body);
  if (!r.ok()) return Fail(ctx, r.status());
  const std::string hostname = r->value("hostname", a.target);
  ctx.out << "enrolled " << hostname << " (" << r->value("mac", a.mac) << ")";
  if (std::string profile = r->value("profile", ""); !profile.empty())
    ctx.out << ", profile " << profile;
  if (power) {
    // POST /nodes takes no power driver: set it as node set would. The spec
    // was checked above, so this fails only when provisiond does.
    auto changed = ctx.client.Patch(NodePath(hostname), json{{"power", *power}});
    if (!changed.ok()) {
      ctx.out << "\n";
      return Fail(ctx, changed.status(),
                  "enrolled, but the power driver is not set (provisionctl node set " + hostname +
                      " --power " + *a.power + "): ");
    }
    ctx.out << ", power " << FormatPowerSpec(changed->value("power", json::object()));
  }
  ctx.out << "\n";
  return kExitOk;
}

int RunNodeSet(Context& ctx, const Args& a) {
  auto names = NodeNames(a.target);
  if (!names.ok()) return UsageError(ctx, names.status().message());
  json body = json::object();
  if (a.ip) body["ip"] = *a.ip;
  if (a.hostname) body["hostname"] = *a.hostname;
  if (a.profile) body["profile"] = *a.profile;
  if (a.no_profile) body["profile"] = "";
  if (a.state) body["state"] = *a.state;
  if (a.reason) body["reason"] = *a.reason;
  if (a.host_key) body["host_key"] = *a.host_key;
  if (a.power) {
    auto power = ParsePowerSpec(*a.power);
    if (!power.ok())
      return UsageError(ctx, "--power '" + *a.power + "': " + power.status().message());
    body["power"] = *power;
  }
  if (body.empty())
    return UsageError(ctx,
                      "nothing to change: give --ip, --hostname, --profile, --no-profile, "
                      "--state, --host-key or --power");
  if ((a.ip || a.hostname) && names->size() > 1)
    return UsageError(ctx, "--ip and --hostname name one node, but '" + a.target + "' names " +
                               std::to_string(names->size()));
  // A BMC address belongs to one node; giving it to several is a typo.
  if (body.contains("power") && body["power"].contains("address") && names->size() > 1)
    return UsageError(ctx, "--power with an address names one node's BMC, but '" + a.target +
                               "' names " + std::to_string(names->size()));
  return ForEachNode(ctx, *names, [&](const std::string& name) -> Result<std::string> {
    auto r = ctx.client.Patch(NodePath(name), body);
    if (!r.ok()) return r.status();
    return NodeSummary(name, *r);
  });
}

int RunNodeRm(Context& ctx, const Args& a) {
  auto names = NodeNames(a.target);
  if (!names.ok()) return UsageError(ctx, names.status().message());
  return ForEachNode(ctx, *names, [&](const std::string& name) -> Result<std::string> {
    auto r = ctx.client.Delete(NodePath(name) + (a.purge ? "?purge=true" : ""));
    if (!r.ok()) return r.status();
    return r->value("result", std::string("done"));
  });
}

int RunNodePower(Context& ctx, const Args& a) {
  auto names = NodeNames(a.target);
  if (!names.ok()) return UsageError(ctx, names.status().message());
  const json body = {{"action", a.action}};
  return ForEachNode(ctx, *names, [&](const std::string& name) -> Result<std::string> {
    auto r = ctx.client.Call("POST", NodePath(name) + "/power", &body, kPowerTimeoutS);
    if (!r.ok()) return r.status();
    return r->value("action", a.action) + " (" + r->value("result", std::string("done")) + ")";
  });
}

int RunPreflight(Context& ctx, const Args& a) {
  auto r = ctx.client.Get(kApi + "/preflight");
  if (!r.ok()) {
    if (r.status().code() != Code::kConflict) return Fail(ctx, r.status());
    // provisiond runs without a boot network: say what would give it one.
    ctx.err << "provisionctl: " << r.status().message() << "\n"
            << "provisionctl: there is no boot network to check; set 'interface' in provisiond's "
               "config to the cluster interface and restart it ('provisiond "
               "--describe-config' lists the settings)\n";
    return kExitFailed;
  }
  if (a.json)
    PrintJson(ctx, *r);
  else
    ctx.out << RenderPreflight(*r);
  return r->value("ok", false) ? kExitOk : kExitFailed;
}

int RunImageList(Context& ctx, const Args& a) {
  auto r = ctx.client.Get(kApi + "/images");
  if (!r.ok()) return Fail(ctx, r.status());
  if (a.json)
    PrintJson(ctx, *r);
  else
    ctx.out << RenderImageTable(*r);
  return kExitOk;
}

int RunImageImport(Context& ctx, const Args& a) {
  // A name with a '/' would not even reach the route: check it here.
  if (Status valid = ValidateImageName(a.target); !valid.ok())
    return UsageError(ctx, valid.message());
  if (a.kernel.empty() || a.initrd.empty())
    return UsageError(ctx, "--kernel and --initrd need a path");
  // provisiond reads the files itself: absolute paths do not depend on its
  // working directory (they are right when provisionctl runs on the control
  // node, as relative paths are meant).
  const json body = {{"kernel", AbsolutePath(a.kernel)}, {"initrd", AbsolutePath(a.initrd)}};
  auto r = ctx.client.Call("POST", kApi + "/images/" + UrlEncode(a.target) + "/import", &body,
                           kImportTimeoutS);
  if (!r.ok()) return Fail(ctx, r.status());
  if (a.json) {
    PrintJson(ctx, *r);
    return kExitOk;
  }
  ctx.out << "imported " << r->value("ref", a.target + "@" + r->value("version", std::string()))
          << " (kernel " << FormatSize(r->value("kernel_size", int64_t{0})) << ", initrd "
          << FormatSize(r->value("initrd_size", int64_t{0})) << ")\n";
  return kExitOk;
}

int RunProfileList(Context& ctx, const Args& a) {
  auto r = ctx.client.Get(kApi + "/profiles");
  if (!r.ok()) return Fail(ctx, r.status());
  if (a.json)
    PrintJson(ctx, *r);
  else
    ctx.out << RenderProfileTable(*r);
  return kExitOk;
}

int RunProfileShow(Context& ctx, const Args& a) {
  auto r = ctx.client.Get(ProfilePath(a.target));
  if (!r.ok()) return Fail(ctx, r.status());
  if (a.json)
    PrintJson(ctx, *r);
  else
    ctx.out << RenderProfile(*r);
  return kExitOk;
}

int RunProfilePlan(Context& ctx, const Args& a) {
  auto r = ctx.client.Get(ProfilePath(a.target) + "/plan");
  if (!r.ok()) return Fail(ctx, r.status());
  if (a.json)
    PrintJson(ctx, *r);
  else
    ctx.out << RenderPlan(*r);
  return kExitOk;
}

int RunProfileApply(Context& ctx, const Args& a) {
  auto plan = ctx.client.Get(ProfilePath(a.target) + "/plan");
  if (!plan.ok()) return Fail(ctx, plan.status());
  // Without changes, what apply answers says it all.
  if (plan->value("changes", true)) ctx.out << RenderPlan(*plan);
  // Nothing to assign still configures the profile's nodes that are up and
  // not configured with it (a run that was interrupted, a failed node).
  if (plan->value("changes", true) && !a.yes) {
    if (!ctx.interactive)
      return UsageError(ctx,
                        "not applied: stdin is not a terminal, so there is no one to confirm; "
                        "pass --yes to apply without asking");
    ctx.out << "Apply? [y/N] " << std::flush;
    std::string answer;
    std::getline(ctx.in, answer);
    if (answer != "y" && answer != "Y" && answer != "yes") {
      ctx.err << "provisionctl: not applied\n";
      return kExitFailed;
    }
  }
  auto applied = ctx.client.Post(ProfilePath(a.target) + "/apply");
  if (!applied.ok()) return Fail(ctx, applied.status());
  ctx.out << RenderApplied(*applied);
  std::vector<std::string> started;
  if (applied->contains("configure"))
    for (const auto& n : (*applied)["configure"].value("started", json::array()))
      started.push_back(n.get<std::string>());
  if (started.empty() || a.no_wait) return kExitOk;
  ctx.out << "configuring " << started.size() << " node(s) (Ctrl-C stops watching, not the runs):\n"
          << std::flush;
  return WaitForNodes(ctx, started, "ready", a.timeout_s > 0 ? a.timeout_s : 3600);
}

// Set by SIGINT while `events --follow` waits; the client polls it.
std::atomic<bool> g_interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free);
extern "C" void OnInterrupt(int) {
  g_interrupted.store(true);
}

// For its lifetime, the first Ctrl-C sets g_interrupted and abandons the
// client's request in flight, so a follow loop stops cleanly; the old handler
// comes back afterwards.
class InterruptScope {
 public:
  explicit InterruptScope(Client& client) : client_(client) {
    g_interrupted.store(false);
    struct sigaction sa {};
    sa.sa_handler = &OnInterrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_);
    client_.set_cancel_flag(&g_interrupted);
  }
  ~InterruptScope() {
    client_.set_cancel_flag(nullptr);
    sigaction(SIGINT, &old_, nullptr);
  }
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

 private:
  Client& client_;
  struct sigaction old_ {};
};

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
  constexpr long kWaitS = kEventWaitS;
  const std::string limit = a.limit > 0 ? std::to_string(a.limit) : "";
  InterruptScope interrupt(ctx.client);
  while (!g_interrupted.load()) {
    auto r = ctx.client.Get(kApi + "/events" +
                                QueryString({{"after", std::to_string(after)},
                                             {"limit", limit},
                                             {"node", node},
                                             {"wait", std::to_string(kWaitS)}}),
                            kWaitS + 15);
    if (g_interrupted.load()) break;
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

// The image name of a ref: "lab@0123" -> "lab".
std::string ImageName(const std::string& ref) {
  return ref.substr(0, ref.find('@'));
}

// Checks the name part of a ref here, so a typo is a usage error and a '/'
// never reaches the route.
int CheckImageRef(Context& ctx, const std::string& ref) {
  if (Status valid = ValidateImageName(ImageName(ref)); !valid.ok())
    return UsageError(ctx, valid.message());
  if (size_t at = ref.find('@'); at != std::string::npos && at + 1 == ref.size())
    return UsageError(ctx, "'" + ref + "' has no version after '@'");
  return kExitOk;
}

// "  " before every line of `text` after the first.
std::string IndentRest(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  for (size_t nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', nl + 1))
    text.insert(nl + 1, "  ");
  return text;
}

// Follows the events of the build of `name` after event `after`, printing its
// progress, until it ends or Ctrl-C.
int FollowBuild(Context& ctx, const std::string& name, int64_t after) {
  InterruptScope interrupt(ctx.client);
  std::optional<int64_t> start;  // the time of the build's first event
  while (!g_interrupted.load()) {
    auto r = ctx.client.Get(
        kApi + "/events" +
            QueryString({{"after", std::to_string(after)}, {"wait", std::to_string(kEventWaitS)}}),
        kEventWaitS + 15);
    if (g_interrupted.load()) break;
    if (!r.ok())
      return Fail(ctx, r.status(),
                  "lost the build of " + name + " (provisionctl image show " + name +
                      " tells whether it goes on): ");
    for (const auto& event : r->value("events", json::array())) {
      auto build = ParseImageBuildEvent(event);
      if (!build || build->image != name) continue;
      if (!start) start = build->time_ms;
      const int64_t elapsed = build->time_ms - *start;
      if (build->kind == "image-build") {
        ctx.out << RenderBuildProgress(build->text, elapsed) << std::flush;
      } else if (build->kind == "image-built") {
        ctx.out << "built " << build->text << " in " << FormatDuration(elapsed) << "\n";
        return kExitOk;
      } else {
        ctx.err << "provisionctl: image " << name << " was not built: " << IndentRest(build->text)
                << "\n";
        return kExitFailed;
      }
    }
    after = r->value("next", after);
  }
  ctx.err << (ctx.interactive ? "\n" : "") << "provisionctl: stopped following; the build of "
          << name << " goes on in provisiond ('provisionctl events --follow' shows it, "
          << "'provisionctl image show " << name << "' its result)\n";
  return kExitInterrupted;
}

int RunImageBuild(Context& ctx, const Args& a) {
  if (Status valid = ValidateImageName(a.target); !valid.ok())
    return UsageError(ctx, valid.message());
  // The cursor from before the build starts, so none of its events is missed.
  int64_t after = 0;
  if (!a.no_follow) {
    auto status = ctx.client.Get(kApi + "/status");
    if (!status.ok()) return Fail(ctx, status.status());
    after = status->value("last_event", int64_t{0});
  }
  auto r = ctx.client.Post(ImagePath(a.target) + "/build");
  if (!r.ok()) {
    int rc = Fail(ctx, r.status());
    if (r.status().code() == Code::kConflict)
      ctx.err << "provisionctl: 'provisionctl events --follow' shows its progress\n";
    return rc;
  }
  if (a.no_follow) {
    ctx.out << "building " << a.target
            << " in provisiond: 'provisionctl events --follow' shows its progress, "
               "'provisionctl image show "
            << a.target << "' its result\n";
    return kExitOk;
  }
  return FollowBuild(ctx, a.target, after);
}

int RunImageShow(Context& ctx, const Args& a) {
  if (int rc = CheckImageRef(ctx, a.target); rc != kExitOk) return rc;
  auto r = ctx.client.Get(ImagePath(a.target));
  if (!r.ok()) return Fail(ctx, r.status());
  if (a.json) {
    PrintJson(ctx, *r);
    return kExitOk;
  }
  // Whether this is the version its name stands for: a bare name is; for
  // NAME@VERSION, ask what NAME stands for (nothing, after its current
  // version was removed).
  json current = *r;
  if (a.target.find('@') != std::string::npos && !r->contains("current")) {
    auto named = ctx.client.Get(ImagePath(r->value("name", ImageName(a.target))));
    if (named.ok())
      current = *named;
    else if (named.status().code() == Code::kNotFound)
      current = nullptr;
    else
      return Fail(ctx, named.status());
  }
  ctx.out << RenderImage(*r, current);
  return kExitOk;
}

int RunImageVerify(Context& ctx, const Args& a) {
  if (int rc = CheckImageRef(ctx, a.target); rc != kExitOk) return rc;
  auto r = ctx.client.Call("POST", ImagePath(a.target) + "/verify", nullptr, kVerifyTimeoutS);
  if (!r.ok()) return Fail(ctx, r.status());
  if (a.json)
    PrintJson(ctx, *r);
  else
    ctx.out << RenderImageVerify(*r);
  return ImageVerified(*r) ? kExitOk : kExitFailed;
}

int RunImageRm(Context& ctx, const Args& a) {
  if (int rc = CheckImageRef(ctx, a.target); rc != kExitOk) return rc;
  // Resolved first, so the version removed is the one printed, even when a
  // build changes what NAME stands for meanwhile.
  auto image = ctx.client.Get(ImagePath(a.target));
  if (!image.ok()) return Fail(ctx, image.status());
  const std::string name = image->value("name", ImageName(a.target));
  const std::string ref = image->value("ref", a.target);
  bool was_current = a.target.find('@') == std::string::npos;
  if (!was_current) {
    auto named = ctx.client.Get(ImagePath(name));
    was_current = named.ok() && named->value("version", "") == image->value("version", "");
  }
  auto r = ctx.client.Delete(ImagePath(ref));
  if (!r.ok()) return Fail(ctx, r.status());
  ctx.out << "removed " << r->value("removed", ref) << "\n";
  if (was_current) {
    // What the name stands for now is provisiond's to say.
    auto now = ctx.client.Get(ImagePath(name));
    if (now.ok())
      ctx.out << name << " now stands for " << now->value("ref", name) << "\n";
    else if (now.status().code() == Code::kNotFound)
      ctx.out << name << " stands for no version until the next 'provisionctl image build " << name
              << "' or import\n";
  }
  return kExitOk;
}

int RunDoc(Context& ctx, const Args&) {
  ctx.out << RenderDoc(ctx.cli);
  return kExitOk;
}

// ---- option helpers shared by the table ----

std::vector<std::string> StateNames() {
  std::vector<std::string> names;
  for (NodeState s : AllNodeStates()) names.emplace_back(ToString(s));
  return names;
}

void AddJson(CLI::App& c, Args& a) {
  c.add_flag("--json", a.json, "Print the API's JSON reply instead of text");
}

}  // namespace

int FailRequest(Context& ctx, const Status& s) {
  return Fail(ctx, s);
}

void AddJsonFlag(CLI::App& c, Args& a) {
  AddJson(c, a);
}

struct WaitScope::Impl {
  explicit Impl(Client& client) : scope(client) {}
  InterruptScope scope;
};
WaitScope::WaitScope(Client& client) : impl_(std::make_unique<Impl>(client)) {}
WaitScope::~WaitScope() = default;
bool WaitScope::interrupted() const {
  return g_interrupted.load();
}

int UsageError(Context& ctx, const std::string& message) {
  ctx.err << "provisionctl: " << message << "\nRun with --help for more information.\n";
  return kExitUsage;
}

const std::vector<Verb>& Verbs() {
  static const std::vector<Verb> verbs = WithRunVerbs({
      {"status", "status [--json]",
       "Show provisiond's version, node counts, the applied profile and the profiles",
       R"(Asks provisiond for its status: the service version, how many nodes are in each
state, which profile version is applied (with the first 12 digits of its content
hash, when and by whom), the profiles it can load, and any profile that failed to
load. Use it first to check that provisionctl reaches the daemon.

Examples:
  provisionctl status
  PROVISIOND_URL=http://10.0.0.1:8080 provisionctl status --json)",
       [](CLI::App& c, Args& a) { AddJson(c, a); }, RunStatus},

      {"preflight", "preflight [--json]",
       "Check that this machine is ready to serve the boot network",
       R"(Runs provisiond's checks of the boot network now, on the control node: the
cluster interface and its address, the DHCP range against the enrolled nodes
(full DHCP mode), whether nodes can reach provisiond's listen address, the iPXE
binaries, dnsmasq, whether dnsmasq (which runs as nobody) can reach the data
directory, and other DHCP servers on the interface (one DHCPDISCOVER, answers
awaited for a second or two). Each check prints as "ok" or "FAIL", its name and
what was found, and the last line counts the failures, naming those that would
keep provisiond from starting (it runs the same checks at start). The exit
status is 1 if any check failed, so a script can gate on it. Without an
'interface' in its config provisiond serves no boot network, and preflight says
so and exits 1.

Examples:
  provisionctl preflight
  provisionctl preflight --json | jq -r '.checks[] | select(.ok | not) | .name')",
       [](CLI::App& c, Args& a) { AddJson(c, a); }, RunPreflight},

      {"node list", "node list [HOSTLIST] [--state STATE] [--profile VERSION] [--json]",
       "List nodes, optionally only some of them",
       R"(Lists the nodes in the inventory as a table: HOSTNAME MAC IP STATE PROFILE IMAGE
LAST-SEEN. A failed node (or one in maintenance) has its reason at the end of the
line. HOSTLIST limits the list to the nodes it names, by hostname or MAC
(node[0-3,7], gpu[01-04]); --state and --profile filter further. With --json the
reply is the API's {"nodes": [...], "count": N}.

Examples:
  provisionctl node list
  provisionctl node list 'node[0-3]' --state failed
  provisionctl node list --profile v0.2 --json | jq -r '.nodes[].hostname')",
       [](CLI::App& c, Args& a) {
         c.add_option("hostlist", a.target, "Only these nodes (hostlist, hostnames or MACs)")
             ->type_name("HOSTLIST");
         c.add_option("--state", a.state, "Only nodes in this state")
             ->type_name("STATE")
             ->check(CLI::IsMember(StateNames()));
         c.add_option("--profile", a.profile, "Only nodes assigned this profile version")
             ->type_name("VERSION");
         AddJson(c, a);
       },
       RunNodeList},

      {"node show", "node show NODE [--json]", "Show one node, its facts and its last 20 events",
       R"(Shows everything provisiond knows about one node, named by hostname or MAC: its
addresses, state (and why, when failed), profile and image, SSH host key, when it
was last seen, the facts it reported (CPU, memory, PCI devices...), and its last
20 events, so you can see where it stopped. --json prints the node object alone.

Examples:
  provisionctl node show node0
  provisionctl node show 52:54:00:12:34:56 --json)",
       [](CLI::App& c, Args& a) {
         c.add_option("node", a.target, "Hostname or MAC")->type_name("NODE")->required();
         AddJson(c, a);
       },
       RunNodeShow},

      {"node why", "node why NODE [--json]",
       "Show how far a node's latest boot got, and what provisiond waits for",
       R"(Shows the node's latest boot attempt stage by stage, as provisiond saw it: dhcp
(its DHCP request), ipxe-binary (its firmware fetched iPXE), script (iPXE asked
for its boot script), kernel, initrd, overlay (the initrd fetched its root and
overlay) and hello (the booted system phoned home), each with the time since
the attempt began and what was seen (an address, a file). Boot errors of the
attempt follow, then the kernel command line the node is given (its token
hidden), and last one sentence saying where the node stopped and what
provisiond waits for next. A stage earlier than the last one starts a new
attempt, so only the latest is shown; 'provisionctl events --node NODE' has the
history.

Examples:
  provisionctl node why node0
  provisionctl node why 52:54:00:12:34:56 --json | jq -r .next_stage)",
       [](CLI::App& c, Args& a) {
         c.add_option("node", a.target, "Hostname or MAC")->type_name("NODE")->required();
         AddJson(c, a);
       },
       RunNodeWhy},

      {"node add", "node add HOSTNAME --mac MAC [--ip ADDRESS] [--profile VERSION] [--power SPEC]",
       "Enroll a node by hostname and MAC",
       R"(Enrolls a node: provisiond will answer its netboot requests from now on. The MAC
may be written aa:bb:cc:dd:ee:ff, AA-BB-..., aabb.ccdd.eeff or bare hex. Without
--profile the node gets the applied profile when that profile covers it. A node
provisiond has only discovered on the network (or a retired one) is enrolled in
place, keeping its history. --power sets its power driver, as node set --power
does (wol, command, driver=ipmi,address=BMC).

Examples:
  provisionctl node add node0 --mac 52:54:00:12:34:56
  provisionctl node add node4 --mac 5254.0012.3457 --ip 10.0.0.14 --profile v0.2
  provisionctl node add node5 --mac 52:54:00:12:34:58 --power driver=ipmi,address=10.0.0.105)",
       [](CLI::App& c, Args& a) {
         c.add_option("hostname", a.target, "The node's hostname")
             ->type_name("HOSTNAME")
             ->required();
         c.add_option("--mac", a.mac, "Its boot interface's MAC address")
             ->type_name("MAC")
             ->required();
         c.add_option("--ip", a.ip, "Its address, if it has a fixed one")->type_name("ADDRESS");
         c.add_option("--profile", a.profile, "Assign this profile version")->type_name("VERSION");
         c.add_option("--power", a.power,
                      "Power driver: wol, command, driver=ipmi,address=BMC, or none")
             ->type_name("SPEC");
       },
       RunNodeAdd},

      {"node set",
       "node set HOSTLIST [--ip ADDRESS] [--hostname NAME] [--profile VERSION | --no-profile] "
       "[--state STATE [--reason TEXT]] [--host-key KEY] [--power SPEC]",
       "Change nodes: address, name, profile, operator state, host key, power driver",
       R"(Changes each node the hostlist names. --ip and --hostname apply to one node only.
--profile assigns a profile version, --no-profile releases the node from its
profile. --state sets one of the states an operator may set (enrolled,
maintenance, retired; the others follow from what provisiond observes), with
--reason saying why. --host-key replaces the SSH host key provisiond pins for the
node (after a reinstall). --power sets how provisiond powers the node (node
power): "wol" (Wake-on-LAN on the cluster interface; power on only),
"driver=ipmi,address=BMC" (ipmitool against the node's BMC, one node at a time,
credentials from provisiond's ipmi_credentials_file), "command" (provisiond's
power.command program), or "none" to remove it; a bare word is the driver. Each
node's result or error is printed; a failure of one node does not stop the
others, and the exit status is 1 if any failed.

Examples:
  provisionctl node set 'node[0-3]' --state maintenance --reason 'recabling rack 2'
  provisionctl node set 'node[0-3]' --state enrolled
  provisionctl node set node2 --ip 10.0.0.12
  provisionctl node set 'node[4-7]' --no-profile
  provisionctl node set 'node[0-3]' --power wol
  provisionctl node set node4 --power driver=ipmi,address=10.0.0.104)",
       [](CLI::App& c, Args& a) {
         c.add_option("hostlist", a.target, "The nodes to change (hostlist, hostname or MAC)")
             ->type_name("HOSTLIST")
             ->required();
         c.add_option("--ip", a.ip, "New address (one node only)")->type_name("ADDRESS");
         c.add_option("--hostname", a.hostname, "New hostname (one node only)")->type_name("NAME");
         auto* profile = c.add_option("--profile", a.profile, "Assign this profile version")
                             ->type_name("VERSION");
         c.add_flag("--no-profile", a.no_profile, "Release the nodes from their profile")
             ->excludes(profile);
         // Any state name parses; provisiond refuses the states only it may
         // set (ready, failed...) and says why, which is not a usage error.
         auto* state = c.add_option("--state", a.state,
                                    "Set an operator state: enrolled, maintenance or retired")
                           ->type_name("STATE")
                           ->check(CLI::IsMember(StateNames()).description(""));
         c.add_option("--reason", a.reason, "Why (with --state)")->type_name("TEXT")->needs(state);
         c.add_option("--host-key", a.host_key, "The node's SSH host key, as in known_hosts")
             ->type_name("KEY");
         c.add_option("--power", a.power,
                      "Power driver: wol, command, driver=ipmi,address=BMC, or none")
             ->type_name("SPEC");
       },
       RunNodeSet},

      {"node power", "node power on|off|cycle HOSTLIST",
       "Power nodes on or off, or cycle them (off, then on)",
       R"(Asks provisiond to power each node the hostlist names on, off, or cycle it,
through the node's power driver (node set --power): wol sends a Wake-on-LAN
packet and can only power on; ipmi runs ipmitool against the node's BMC; command
runs provisiond's power.command program. provisiond answers when the driver is
done, and records each attempt as a power event. Each node's result or error is
printed; a node whose driver fails (a BMC that does not answer) does not stop
the others, and the exit status is 1 if any failed. Cycling a node is how it
boots a newly assigned image (profile apply says which nodes need it).

Examples:
  provisionctl node power cycle node0
  provisionctl node power on 'node[0-7]'
  provisionctl node power off node3)",
       [](CLI::App& c, Args& a) {
         c.add_option("action", a.action, "What to do: on, off, or cycle (off, then on)")
             ->type_name("on|off|cycle")
             ->required()
             ->check(CLI::IsMember({"on", "off", "cycle"}).description(""));
         c.add_option("hostlist", a.target, "The nodes (hostlist, hostname or MAC)")
             ->type_name("HOSTLIST")
             ->required();
       },
       RunNodePower},

      {"node rm", "node rm HOSTLIST [--purge]", "Retire nodes, or remove them with --purge",
       R"(Retires each node the hostlist names: it keeps its row and history but is no
longer provisioned (enroll it again with node add). --purge deletes the row; its
events stay, by name. Each node's result or error is printed; the exit status is
1 if any failed.

Examples:
  provisionctl node rm node7
  provisionctl node rm 'node[4-7]' --purge)",
       [](CLI::App& c, Args& a) {
         c.add_option("hostlist", a.target, "The nodes (hostlist, hostname or MAC)")
             ->type_name("HOSTLIST")
             ->required();
         c.add_flag("--purge", a.purge, "Delete the nodes from the inventory");
       },
       RunNodeRm},

      {"image list", "image list [--json]", "List the boot images provisiond can serve",
       R"(Lists every version in provisiond's image store as a table: NAME, VERSION (the
first 16 hex digits of the hash of its content: the root tree of a built image,
the kernel and initrd of an imported one), CURRENT ("yes" on the version NAME
stands for: the one built or imported last), the sizes of KERNEL and INITRD,
ROOT (whether it has a root tree to serve over NFS) and CREATED. A profile
names an image as NAME, its current version, or as NAME@VERSION.

Examples:
  provisionctl image list
  provisionctl image list --json | jq -r '.images[] | select(.current) | .ref')",
       [](CLI::App& c, Args& a) { AddJson(c, a); }, RunImageList},

      {"image show", "image show REF [--json]", "Show one image version and how it was built",
       R"(Shows one version of an image, named as NAME (the version NAME stands for) or
NAME@VERSION: whether it is NAME's current version (and if not, which one is),
the sizes of its kernel (with the kernel's file name) and initrd, whether it has
a root tree, its content hash, when it was made, and whether a build of NAME
runs now. For a built image it shows how it was built, from its image.json: the
suite and mirror, the packages of the manifest, the files and size of the root
tree, how long the build took, and the hash of the manifest it was built from;
an imported image says so instead. --json prints the API's image object.

Examples:
  provisionctl image show lab
  provisionctl image show lab@0123456789abcdef
  provisionctl image show lab --json | jq .build.packages)",
       [](CLI::App& c, Args& a) {
         c.add_option("ref", a.target, "The image: NAME or NAME@VERSION")
             ->type_name("REF")
             ->required();
         AddJson(c, a);
       },
       RunImageShow},

      {"image build", "image build NAME [--no-follow]",
       "Build an image from its manifest (images/NAME/image.yaml) and follow the build",
       R"(Asks provisiond to build the image NAME from its manifest in provisiond's images
directory (images/NAME/image.yaml: distribution, suite, mirror, packages,
files): mmdebstrap makes a root tree, provisiond adds its phone-home agent and
builds a netboot initrd for it, and the result becomes a new version of NAME
and the one NAME stands for (building unchanged content again gives the same
version). The build runs in provisiond, in the background, and takes minutes.

provisionctl follows it: each progress line is printed with the time since the
build started, "[ 12.3s] mmdebstrap: I: downloading packages with apt...", until
the build ends with "built NAME@VERSION in 3m05s" (exit status 0) or with the
reason it failed (exit status 1). Ctrl-C stops following (exit status 130), not
the build, which goes on in provisiond; 'provisionctl events --follow' shows its
progress, 'provisionctl image show NAME' its result. --no-follow starts the build
and returns at once. A build of an image that is being built already is refused.

Examples:
  provisionctl image build lab
  provisionctl image build debian-amd-npu --no-follow)",
       [](CLI::App& c, Args& a) {
         c.add_option("name", a.target, "The image's name (its manifest is images/NAME/image.yaml)")
             ->type_name("NAME")
             ->required();
         c.add_flag("--no-follow", a.no_follow,
                    "Start the build and return, without following its progress");
       },
       RunImageBuild},

      {"image import", "image import NAME --kernel PATH --initrd PATH [--json]",
       "Import a kernel and an initrd as a version of a boot image",
       R"(Copies a kernel and an initrd into provisiond's image store as a version of the
image NAME (letters, digits, '.', '_', '-'), named by the hash of both files,
and makes it the version NAME stands for. Importing the same files again
changes nothing. provisiond reads the files itself, so the paths are paths on
the control node; relative ones are made absolute against the current
directory before they are sent.

Examples:
  provisionctl image import lab --kernel /boot/vmlinuz-6.1.0-18-amd64 --initrd build/initrd.img
  provisionctl image import debian-amd-npu --kernel out/vmlinuz --initrd out/initrd.img)",
       [](CLI::App& c, Args& a) {
         c.add_option("name", a.target, "The image's name")->type_name("NAME")->required();
         c.add_option("--kernel", a.kernel, "The kernel (a path on the control node)")
             ->type_name("PATH")
             ->required();
         c.add_option("--initrd", a.initrd, "The initrd (a path on the control node)")
             ->type_name("PATH")
             ->required();
         AddJson(c, a);
       },
       RunImageImport},

      {"image verify", "image verify REF [--json]",
       "Check that an image version can be served: kernel, initrd, root, NFS export",
       R"(Asks provisiond to check one version of an image (NAME, the version NAME stands
for, or NAME@VERSION) as nodes would use it: its kernel and its initrd are
there, whether it has a root tree, and for one with a root tree whether
provisiond's NFS server exports it (its os-release is read back over NFS). Each
check prints as "ok", "FAIL" or "-" (does not apply: an image without a root
tree, or provisiond without an NFS server), with what was found, then the
kernel arguments that mount the root, and a last line saying whether the image
can be served. The exit status is 1 when it cannot, so a script can gate on it.

Examples:
  provisionctl image verify lab
  provisionctl image verify lab@0123456789abcdef --json | jq -r .nfs)",
       [](CLI::App& c, Args& a) {
         c.add_option("ref", a.target, "The image: NAME or NAME@VERSION")
             ->type_name("REF")
             ->required();
         AddJson(c, a);
       },
       RunImageVerify},

      {"image rm", "image rm REF", "Remove an image version that nothing uses",
       R"(Removes one version of an image from provisiond's image store: NAME@VERSION, or
NAME for the version NAME stands for. provisiond refuses (exit status 1, with
the reason) while a profile names that version or a node is assigned it or runs
it; apply another profile or move the nodes first. The version removed is
printed in full; when it was the version NAME stood for, what NAME stands for
now is printed too.

Examples:
  provisionctl image rm lab@0123456789abcdef
  provisionctl image list --json | jq -r '.images[] | select(.current | not) | .ref' |
    xargs -n1 provisionctl image rm)",
       [](CLI::App& c, Args& a) {
         c.add_option("ref", a.target, "The version to remove: NAME@VERSION, or NAME")
             ->type_name("REF")
             ->required();
       },
       RunImageRm},

      {"profile list", "profile list [--json]",
       "List the profiles provisiond can load, and which is applied",
       R"(Lists the versioned hardware profiles (profiles/<version>/profile.yaml) as a
table: VERSION APPLIED SHA256 (first 12 digits of the content hash, which covers
the playbooks it names) IMAGE NODES DESCRIPTION. "yes*" marks an applied profile
whose files changed since. Profiles that fail to load are listed with their
errors. --json adds the history of applied versions.

Examples:
  provisionctl profile list
  provisionctl profile list --json | jq '.history')",
       [](CLI::App& c, Args& a) { AddJson(c, a); }, RunProfileList},

      {"profile show", "profile show VERSION [--json]", "Show a profile in full",
       R"(Shows one profile: the hardware it expects per node (accelerators, memory), the
image, kernel arguments, overlay files, the playbooks in order with their
variables, the health checks that gate the ready state, and the nodes it covers.

Examples:
  provisionctl profile show v0.2
  provisionctl profile show lab --json)",
       [](CLI::App& c, Args& a) {
         c.add_option("version", a.target, "Profile version")->type_name("VERSION")->required();
         AddJson(c, a);
       },
       RunProfileShow},

      {"profile plan", "profile plan VERSION [--json]",
       "Show what applying a profile would change, node by node",
       R"(Shows what `profile apply VERSION` would do, without changing anything: the
version and hash applied now against this one, then per node its action and why:
assign (gets the profile; an image change means a reboot, then its playbooks
run), unchanged, release (no longer covered), or missing (named by the profile
but not enrolled).

Examples:
  provisionctl profile plan v0.2
  provisionctl profile plan v0.1 --json)",
       [](CLI::App& c, Args& a) {
         c.add_option("version", a.target, "Profile version")->type_name("VERSION")->required();
         AddJson(c, a);
       },
       RunProfilePlan},

      {"profile apply", "profile apply VERSION [--yes]",
       "Apply a profile: show the plan, confirm, assign and release nodes",
       R"(Shows the plan, asks for confirmation (or takes --yes), then applies the
profile: provisiond records the version with its content hash and assigns and
releases nodes in one transaction, and the result is printed per node. Applying
a version that is applied and unchanged does nothing; applying the previous
version is the rollback. Without a terminal on stdin, --yes is required.

provisiond records the assignment and serves a node its new image at its next
network boot, but does not restart nodes by itself: the output names each node
whose image changes, with the command that reboots it (node power cycle).
Nodes that are up (booted, ready or failed) are configured at once over SSH:
configuring, the profile's playbooks in order, its health checks, then ready
(or failed with the task and output that failed); provisionctl shows each
node's progress until all are done (--no-wait returns at once). Nodes that are
down are configured when they phone home. A node already configured with the
same profile content since its last boot runs nothing; applying an unchanged
version again still finishes interrupted or failed configurations.

Examples:
  provisionctl profile apply v0.2
  provisionctl profile apply v0.1 --yes)",
       [](CLI::App& c, Args& a) {
         c.add_option("version", a.target, "Profile version")->type_name("VERSION")->required();
         c.add_flag("-y,--yes", a.yes, "Apply without asking");
         c.add_flag("--no-wait", a.no_wait, "Do not wait for the nodes being configured");
         c.add_option("--timeout", a.timeout_s, "Stop waiting after this many seconds")
             ->type_name("SECONDS");
       },
       RunProfileApply},

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
         AddJson(c, a);
       },
       RunEvents},

      {"doc", "doc", "Describe every command at length",
       R"(Prints this long-form description of every command, its options and examples;
the same text --help shows per command comes from the same table.

Example:
  provisionctl doc | less)",
       [](CLI::App&, Args&) {}, RunDoc},
  });
  return verbs;
}

}  // namespace prov::ctl
