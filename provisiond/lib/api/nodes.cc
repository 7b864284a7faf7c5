#include "api/nodes.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <unordered_set>

#include "base/hostlist.h"
#include "configure/configurator.h"
#include "configure/ssh_client.h"
#include "hello/facts.h"
#include "profiles/inventory.h"

namespace prov {
namespace {

using json = nlohmann::json;

// Reads an optional string field; a wrong type is a 400 naming the field.
Status OptionalString(const json& body, const char* field, std::optional<std::string>& out) {
  if (!body.contains(field)) return Status::Ok();
  if (!body[field].is_string())
    return Status::Invalid(std::string("field '") + field + "' must be a string");
  out = body[field].get<std::string>();
  return Status::Ok();
}

Status RequiredString(const json& body, const char* field, std::string& out) {
  std::optional<std::string> v;
  Status s = OptionalString(body, field, v);
  if (!s.ok()) return s;
  if (!v || v->empty()) return Status::Invalid(std::string("field '") + field + "' is required");
  out = *v;
  return Status::Ok();
}

}  // namespace

std::string NodeListCache::Json(const NodePtr& node) {
  {
    std::lock_guard lock(mu_);
    auto it = by_id_.find(node->id);
    if (it != by_id_.end() && it->second.first == node) return it->second.second;
  }
  std::string text = ToJson(*node).dump(-1, ' ', false, json::error_handler_t::replace);
  std::lock_guard lock(mu_);
  // Deleted nodes' entries are dropped now and then.
  if (by_id_.size() > 100000) by_id_.clear();
  by_id_[node->id] = {node, text};
  return text;
}

HttpResponse ListNodes(const ApiContext& ctx, const HttpRequest& r) {
  constexpr int64_t kMaxLimit = 100000;
  NodeFilter filter;
  if (std::string state = r.Query("state"); !state.empty()) {
    auto s = ParseNodeState(state);
    if (!s) return HttpResponse::Error(400, "unknown state '" + state + "'");
    filter.state = *s;
  }
  if (std::string profile = r.Query("profile"); !profile.empty()) filter.profile_version = profile;
  std::vector<std::string> names;
  if (std::string hl = r.Query("hostlist"); !hl.empty()) {
    auto expanded = ExpandHostlist(hl);
    if (!expanded.ok()) return HttpResponse::FromStatus(expanded.status());
    names = std::move(*expanded);
  }
  int64_t limit = kMaxLimit;
  if (std::string l = r.Query("limit"); !l.empty()) {
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(l.c_str(), &end, 10);
    if (errno || !end || *end || l.size() > 7 || v < 1 || v > kMaxLimit)
      return HttpResponse::Error(400, "query parameter 'limit' must be a number from 1 to " +
                                          std::to_string(kMaxLimit) + ", not '" + l + "'");
    limit = v;
  }
  const std::string after = r.Query("after");
  std::unordered_set<std::string> wanted(names.begin(), names.end());
  auto list = ctx.inventory->store().NodeList();
  const auto& nodes = list->nodes;
  // The list's order: named nodes by hostname, then discovered ones (no
  // hostname) by MAC. `after` is a hostname, or the MAC of a discovered
  // node (it has colons; hostnames cannot).
  auto begin = nodes.begin();
  if (!after.empty()) {
    const bool mac = after.find(':') != std::string::npos;
    begin = std::partition_point(nodes.begin(), nodes.end(), [&](const NodePtr& n) {
      if (!mac) return !n->hostname.empty() && n->hostname <= after;
      return !n->hostname.empty() || n->mac <= after;
    });
  }
  std::string out = "{\"nodes\":[";
  int64_t count = 0, total = 0;
  std::string last, next;
  for (auto it = nodes.begin(); it != nodes.end(); ++it) {
    const NodeRecord& n = **it;
    if (!NodeMatches(n, filter)) continue;
    if (!wanted.empty() && !wanted.count(n.hostname) && !wanted.count(n.mac)) continue;
    ++total;
    if (it < begin) continue;
    if (count == limit) {
      if (next.empty()) next = last;
      continue;
    }
    if (count) out += ',';
    out += ctx.node_list ? ctx.node_list->Json(*it)
                         : ToJson(n).dump(-1, ' ', false, json::error_handler_t::replace);
    last = n.name();
    ++count;
  }
  // "count" last, as before pages: scripts read it at the end of the body.
  out += "],\"total\":" + std::to_string(total);
  if (!next.empty()) out += ",\"next\":" + json(next).dump();
  out += ",\"count\":" + std::to_string(count) + "}\n";
  return HttpResponse::Text(200, std::move(out), "application/json");
}

HttpResponse EnrollNode(const ApiContext& ctx, const HttpRequest& r) {
  auto body = ParseJsonObject(r.body, {"hostname", "mac", "ip", "profile", "power", "uefi_loader"});
  if (!body.ok()) return HttpResponse::FromStatus(body.status());
  EnrollRequest req;
  std::optional<std::string> ip, profile, uefi_loader;
  for (Status s :
       {RequiredString(*body, "hostname", req.hostname), RequiredString(*body, "mac", req.mac),
        OptionalString(*body, "ip", ip), OptionalString(*body, "profile", profile),
        OptionalString(*body, "uefi_loader", uefi_loader)})
    if (!s.ok()) return HttpResponse::FromStatus(s);
  req.ip = ip.value_or("");
  req.profile = profile.value_or("");
  req.uefi_loader = uefi_loader.value_or("");
  if (body->contains("power")) req.power = (*body)["power"];
  auto node = ctx.inventory->Enroll(req, r.who);
  if (!node.ok()) return HttpResponse::FromStatus(node.status());
  return HttpResponse::Json(201, ToJson(*node));
}

HttpResponse ShowNode(const ApiContext& ctx, const HttpRequest& r) {
  auto n = ctx.inventory->store().FindNode(r.Param("node"));
  if (!n.ok()) return HttpResponse::FromStatus(n.status());
  return HttpResponse::Json(200, ToJson(*n));
}

HttpResponse ChangeNode(const ApiContext& ctx, const HttpRequest& r) {
  auto body = ParseJsonObject(
      r.body, {"hostname", "ip", "profile", "state", "reason", "host_key", "power", "uefi_loader"});
  if (!body.ok()) return HttpResponse::FromStatus(body.status());
  NodeChange change;
  std::optional<std::string> state;
  for (Status s :
       {OptionalString(*body, "hostname", change.hostname), OptionalString(*body, "ip", change.ip),
        OptionalString(*body, "profile", change.profile), OptionalString(*body, "state", state),
        OptionalString(*body, "reason", change.reason),
        OptionalString(*body, "host_key", change.host_key),
        OptionalString(*body, "uefi_loader", change.uefi_loader)})
    if (!s.ok()) return HttpResponse::FromStatus(s);
  if (body->contains("power")) change.power = (*body)["power"];
  if (state) {
    auto st = ParseNodeState(*state);
    if (!st) return HttpResponse::Error(400, "unknown state '" + *state + "'");
    change.state = *st;
  }
  auto node = ctx.inventory->Change(r.Param("node"), change, r.who);
  if (!node.ok()) return HttpResponse::FromStatus(node.status());
  return HttpResponse::Json(200, ToJson(*node));
}

HttpResponse AdoptNode(const ApiContext& ctx, const HttpRequest& r) {
  auto body = ParseJsonObject(r.body.empty() ? "{}" : r.body, {"host_key", "user", "password"});
  if (!body.ok()) return HttpResponse::FromStatus(body.status());
  std::optional<std::string> confirmed, user, password;
  for (auto [key, value] : {std::pair{"host_key", &confirmed}, std::pair{"user", &user},
                            std::pair{"password", &password}})
    if (Status s = OptionalString(*body, key, *value); !s.ok()) return HttpResponse::FromStatus(s);
  if (user && !ValidUserName(*user)) return HttpResponse::Error(400, "user: not a user name");
  if (password && !confirmed)
    return HttpResponse::Error(400, "a password goes with the confirmed host_key only");
  auto node = ctx.inventory->store().FindNode(r.Param("node"));
  if (!node.ok()) return HttpResponse::FromStatus(node.status());
  if (!ctx.configurator) return HttpResponse::Error(503, "configuration over SSH is off");
  // First: the key the machine shows, for the operator to confirm; nothing
  // is stored.
  if (!confirmed) {
    auto key = ctx.configurator->ProbeHostKey(*node);
    if (!key.ok()) return HttpResponse::FromStatus(key.status());
    return HttpResponse::Json(200, {{"node", node->name()},
                                    {"ip", node->ip},
                                    {"host_key", *key},
                                    {"fingerprint", HostKeyFingerprint(*key)},
                                    {"adopted", false}});
  }
  if (Status k = ValidateHostKey(*confirmed); !k.ok()) return HttpResponse::FromStatus(k);
  // A one-time password: used once to put the control key in place, kept
  // nowhere; from then on the key.
  if (password) {
    Status installed =
        ctx.configurator->InstallControlKey(*node, *confirmed, user.value_or(""), *password);
    if (!installed.ok()) return HttpResponse::FromStatus(installed);
    EventRecord e{.node_id = node->id,
                  .node = node->name(),
                  .kind = "adopted",
                  .detail = "control key installed over SSH with a one-time password" +
                            (user ? " (as " + *user + ")" : std::string()),
                  .who = r.who};
    ctx.inventory->store().RecordEvent(e);
  }
  auto facts = ctx.configurator->CollectFacts(*node, *confirmed);
  if (!facts.ok()) return HttpResponse::FromStatus(facts.status());
  if (Status valid = ValidateFacts(*facts); !valid.ok())
    return HttpResponse::FromStatus(
        Status::Invalid(node->name() + "'s facts are refused: " + valid.message()));
  auto adopted = ctx.inventory->Adopt(node->name(), *confirmed, *facts, r.who);
  if (!adopted.ok()) return HttpResponse::FromStatus(adopted.status());
  if (adopted->state == NodeState::kBooted && !adopted->profile_version.empty())
    ctx.configurator->Configure(adopted->name(), r.who);
  nlohmann::json out = ToJson(*adopted);
  out["adopted"] = true;
  return HttpResponse::Json(200, out);
}

HttpResponse AllowStorageWipe(const ApiContext& ctx, const HttpRequest& r) {
  auto body = ParseJsonObject(r.body.empty() ? "{}" : r.body, {"disks"});
  if (!body.ok()) return HttpResponse::FromStatus(body.status());
  std::vector<std::string> disks;
  if (body->contains("disks")) {
    const auto& list = (*body)["disks"];
    if (!list.is_array()) return HttpResponse::Error(400, "'disks' must be a list of by-id names");
    for (const auto& d : list) {
      if (!d.is_string()) return HttpResponse::Error(400, "'disks' must be a list of by-id names");
      disks.push_back(d.get<std::string>());
    }
  }
  auto node = ctx.inventory->AllowStorageWipe(r.Param("node"), disks, r.who);
  if (!node.ok()) return HttpResponse::FromStatus(node.status());
  return HttpResponse::Json(200, ToJson(*node));
}

HttpResponse RetireNode(const ApiContext& ctx, const HttpRequest& r) {
  std::string purge = r.Query("purge");
  if (!purge.empty() && purge != "true" && purge != "false")
    return HttpResponse::Error(400, "query parameter 'purge' must be true or false");
  Status s = ctx.inventory->Retire(r.Param("node"), purge == "true", r.who);
  if (!s.ok()) return HttpResponse::FromStatus(s);
  return HttpResponse::Json(
      200, {{"node", r.Param("node")}, {"result", purge == "true" ? "purged" : "retired"}});
}

}  // namespace prov
