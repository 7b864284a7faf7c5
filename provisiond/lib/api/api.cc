#include "api/api.h"

#include <sys/stat.h>

#include <chrono>

#include <set>

#include "base/hostlist.h"

namespace prov {
namespace {

using json = nlohmann::json;
using Access = Router::Access;

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

Result<int64_t> IntQuery(const HttpRequest& r, const char* name, int64_t fallback, int64_t min,
                         int64_t max) {
  std::string v = r.Query(name);
  if (v.empty()) return fallback;
  if (v.find_first_not_of("0123456789") != std::string::npos || v.size() > 15)
    return Status::Invalid(std::string("query parameter '") + name + "' must be a number");
  int64_t n = std::stoll(v);
  if (n < min || n > max)
    return Status::Invalid(std::string("query parameter '") + name + "' must be between " +
                           std::to_string(min) + " and " + std::to_string(max));
  return n;
}

HttpResponse ListNodes(Inventory& inv, const HttpRequest& r) {
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
  std::set<std::string> wanted(names.begin(), names.end());
  auto nodes = inv.store().ListNodes(filter);
  std::string out = "{\"nodes\":[";
  bool first = true;
  size_t count = 0;
  for (const auto& n : nodes) {
    if (!wanted.empty() && !wanted.count(n.hostname) && !wanted.count(n.mac)) continue;
    if (!first) out += ',';
    first = false;
    out += ToJson(n).dump(-1, ' ', false, json::error_handler_t::replace);
    ++count;
  }
  out += "],\"count\":" + std::to_string(count) + "}\n";
  return HttpResponse::Text(200, std::move(out), "application/json");
}

HttpResponse AddNode(Inventory& inv, const HttpRequest& r) {
  auto body = ParseJsonObject(r.body, {"hostname", "mac", "ip", "profile", "power"});
  if (!body.ok()) return HttpResponse::FromStatus(body.status());
  EnrollRequest req;
  std::optional<std::string> ip, profile;
  for (Status s :
       {RequiredString(*body, "hostname", req.hostname), RequiredString(*body, "mac", req.mac),
        OptionalString(*body, "ip", ip), OptionalString(*body, "profile", profile)})
    if (!s.ok()) return HttpResponse::FromStatus(s);
  req.ip = ip.value_or("");
  req.profile = profile.value_or("");
  if (body->contains("power")) req.power = (*body)["power"];
  auto node = inv.Enroll(req, r.who);
  if (!node.ok()) return HttpResponse::FromStatus(node.status());
  return HttpResponse::Json(201, ToJson(*node));
}

HttpResponse ChangeNode(Inventory& inv, const HttpRequest& r) {
  auto body = ParseJsonObject(
      r.body, {"hostname", "ip", "profile", "state", "reason", "host_key", "power"});
  if (!body.ok()) return HttpResponse::FromStatus(body.status());
  NodeChange change;
  std::optional<std::string> state;
  for (Status s :
       {OptionalString(*body, "hostname", change.hostname), OptionalString(*body, "ip", change.ip),
        OptionalString(*body, "profile", change.profile), OptionalString(*body, "state", state),
        OptionalString(*body, "reason", change.reason),
        OptionalString(*body, "host_key", change.host_key)})
    if (!s.ok()) return HttpResponse::FromStatus(s);
  if (body->contains("power")) change.power = (*body)["power"];
  if (state) {
    auto st = ParseNodeState(*state);
    if (!st) return HttpResponse::Error(400, "unknown state '" + *state + "'");
    change.state = *st;
  }
  auto node = inv.Change(r.Param("node"), change, r.who);
  if (!node.ok()) return HttpResponse::FromStatus(node.status());
  return HttpResponse::Json(200, ToJson(*node));
}

HttpResponse ListEvents(Inventory& inv, const ApiOptions& opt, const HttpRequest& r) {
  auto after = IntQuery(r, "after", 0, 0, INT64_MAX / 2);
  auto limit = IntQuery(r, "limit", 1000, 1, 100000);
  auto wait = IntQuery(r, "wait", 0, 0, 3600);
  for (const Status* s : {&after.status(), &limit.status(), &wait.status()})
    if (!s->ok()) return HttpResponse::FromStatus(*s);
  int64_t node_id = 0;
  if (std::string node = r.Query("node"); !node.empty()) {
    auto n = inv.store().FindNode(node);
    if (!n.ok()) return HttpResponse::FromStatus(n.status());
    node_id = n->id;
  }
  // last=N: the newest N events (oldest first), for "show me what happened".
  auto last = IntQuery(r, "last", 0, 0, 100000);
  if (!last.ok()) return HttpResponse::FromStatus(last.status());
  // The cursor up to which events have been scanned: with a node filter, the
  // events of other nodes are skipped by advancing it, so a long-poll never
  // spins on them.
  int64_t scanned = inv.store().LastEventId();
  auto events = *last > 0 ? inv.store().LastEvents(node_id, *last)
                          : inv.store().ListEvents(*after, node_id, *limit);
  if (events.empty() && *wait > 0 && *last == 0) {
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::milliseconds(std::min(*wait * 1000, opt.max_event_wait_ms));
    while (events.empty() && std::chrono::steady_clock::now() < deadline) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      // false: provisiond is stopping; answer with what there is.
      bool more = inv.store().WaitForEvents(std::max(*after, scanned), left.count());
      int64_t now_last = inv.store().LastEventId();
      events = inv.store().ListEvents(std::max(*after, scanned), node_id, *limit);
      scanned = now_last;
      if (!more) break;
    }
  }
  json list = json::array();
  for (const auto& e : events) list.push_back(ToJson(e));
  int64_t next = events.empty() ? std::max(*after, node_id ? scanned : *after) : events.back().id;
  return HttpResponse::Json(200, {{"events", list}, {"next", next}});
}

HttpResponse Status_(Inventory& inv, const ApiOptions& opt) {
  json counts = json::object();
  int64_t total = 0;
  for (const auto& [state, n] : inv.store().CountByState()) {
    counts[std::string(ToString(state))] = n;
    total += n;
  }
  json applied = nullptr;
  if (auto cur = inv.store().CurrentProfile())
    applied = {{"version", cur->version},
               {"sha256", cur->sha256},
               {"time", cur->time_ms},
               {"who", cur->who}};
  std::vector<std::string> errors;
  auto profiles = inv.ListProfiles(errors);
  json versions = json::array();
  for (const auto& [v, p] : profiles) versions.push_back(v);
  return HttpResponse::Json(200, {{"service", "provisiond"},
                                  {"version", opt.version},
                                  {"nodes", total},
                                  {"states", counts},
                                  {"applied_profile", applied},
                                  {"profiles", versions},
                                  {"profile_errors", errors},
                                  {"last_event", inv.store().LastEventId()}});
}

HttpResponse ListProfiles(Inventory& inv) {
  std::vector<std::string> errors;
  auto profiles = inv.ListProfiles(errors);
  auto current = inv.store().CurrentProfile();
  json list = json::array();
  for (const auto& [v, p] : profiles) {
    bool applied = current && current->version == v;
    list.push_back({{"version", v},
                    {"description", p.description},
                    {"sha256", p.sha256},
                    {"image", ImageRef(p)},
                    {"nodes", p.nodes.hostlist.empty() ? p.nodes.pattern : p.nodes.hostlist},
                    {"applied", applied},
                    {"applied_sha256_matches", applied && current->sha256 == p.sha256}});
  }
  json history = json::array();
  for (const auto& a : inv.store().AppliedProfiles())
    history.push_back(
        {{"version", a.version}, {"sha256", a.sha256}, {"time", a.time_ms}, {"who", a.who}});
  return HttpResponse::Json(200, {{"profiles", list}, {"errors", errors}, {"history", history}});
}

std::string Metrics(Inventory& inv, const Router& router) {
  std::string out =
      "# HELP provisiond_nodes Nodes in the inventory by state.\n"
      "# TYPE provisiond_nodes gauge\n";
  for (const auto& [state, n] : inv.store().CountByState())
    out += "provisiond_nodes{state=\"" + std::string(ToString(state)) + "\"} " + std::to_string(n) +
           "\n";
  out +=
      "# HELP provisiond_events_total Events recorded.\n"
      "# TYPE provisiond_events_total counter\n"
      "provisiond_events_total " +
      std::to_string(inv.store().LastEventId()) + "\n";
  return out + router.metrics().Prometheus();
}

}  // namespace

void AddApiRoutes(Router& router, Inventory& inv, const ApiOptions& opt) {
  const std::string v1 = "/api/v1";
  router.Add("GET", v1 + "/status", Access::kRead,
             [&inv, opt](const HttpRequest&) { return Status_(inv, opt); });
  router.Add("GET", v1 + "/nodes", Access::kRead,
             [&inv](const HttpRequest& r) { return ListNodes(inv, r); });
  router.Add("POST", v1 + "/nodes", Access::kWrite,
             [&inv](const HttpRequest& r) { return AddNode(inv, r); });
  router.Add("GET", v1 + "/nodes/{node}", Access::kRead, [&inv](const HttpRequest& r) {
    auto n = inv.store().FindNode(r.Param("node"));
    if (!n.ok()) return HttpResponse::FromStatus(n.status());
    return HttpResponse::Json(200, ToJson(*n));
  });
  router.Add("PATCH", v1 + "/nodes/{node}", Access::kWrite,
             [&inv](const HttpRequest& r) { return ChangeNode(inv, r); });
  router.Add("DELETE", v1 + "/nodes/{node}", Access::kWrite, [&inv](const HttpRequest& r) {
    std::string purge = r.Query("purge");
    if (!purge.empty() && purge != "true" && purge != "false")
      return HttpResponse::Error(400, "query parameter 'purge' must be true or false");
    Status s = inv.Retire(r.Param("node"), purge == "true", r.who);
    if (!s.ok()) return HttpResponse::FromStatus(s);
    return HttpResponse::Json(
        200, {{"node", r.Param("node")}, {"result", purge == "true" ? "purged" : "retired"}});
  });
  router.Add("GET", v1 + "/events", Access::kRead,
             [&inv, opt](const HttpRequest& r) { return ListEvents(inv, opt, r); });
  router.Add("GET", v1 + "/profiles", Access::kRead,
             [&inv](const HttpRequest&) { return ListProfiles(inv); });
  router.Add("GET", v1 + "/profiles/{version}", Access::kRead, [&inv](const HttpRequest& r) {
    auto p = inv.GetProfile(r.Param("version"));
    if (!p.ok()) return HttpResponse::FromStatus(p.status());
    return HttpResponse::Json(200, ToJson(*p));
  });
  router.Add("GET", v1 + "/profiles/{version}/plan", Access::kRead, [&inv](const HttpRequest& r) {
    auto p = inv.PlanProfile(r.Param("version"));
    if (!p.ok()) return HttpResponse::FromStatus(p.status());
    return HttpResponse::Json(200, ToJson(*p));
  });
  router.Add("POST", v1 + "/profiles/{version}/apply", Access::kWrite,
             [&inv, opt](const HttpRequest& r) {
               if (!r.body.empty()) {
                 auto body = ParseJsonObject(r.body, {});
                 if (!body.ok()) return HttpResponse::FromStatus(body.status());
               }
               auto p = inv.ApplyProfile(r.Param("version"), r.who);
               if (!p.ok()) return HttpResponse::FromStatus(p.status());
               json answer = ToJson(*p);
               if (opt.after_apply) answer["configure"] = opt.after_apply(*p, r.who);
               return HttpResponse::Json(200, answer);
             });
  router.Add("GET", "/metrics", Access::kRead, [&inv, &router](const HttpRequest&) {
    return HttpResponse::Text(200, Metrics(inv, router), "text/plain; version=0.0.4");
  });
}

namespace {
std::string ContentType(const std::string& name) {
  auto ends = [&](const char* ext) {
    std::string e(ext);
    return name.size() > e.size() && name.compare(name.size() - e.size(), e.size(), e) == 0;
  };
  if (ends(".html")) return "text/html; charset=utf-8";
  if (ends(".js")) return "text/javascript; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  if (ends(".svg")) return "image/svg+xml";
  if (ends(".png")) return "image/png";
  if (ends(".json")) return "application/json";
  return "application/octet-stream";
}

HttpResponse WebFile(const HttpRequest& r, const std::string& dir, const std::string& name) {
  bool plain = !name.empty() && name[0] != '.' && name.find('/') == std::string::npos &&
               name.find("..") == std::string::npos;
  if (!plain) return HttpResponse::Error(404, "no such page");
  const std::string path = dir + "/" + name;
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return HttpResponse::Error(404, "no such page: " + name);
  // Built with append: GCC 12 at -O3 warns (-Wrestrict, a false positive) on
  // "\"" + std::string.
  std::string etag = "\"";
  etag.append(std::to_string(st.st_mtim.tv_sec)).append("-").append(std::to_string(st.st_size));
  etag.push_back('"');
  return ServeFile(r, path, static_cast<uint64_t>(st.st_size), etag, ContentType(name));
}
}  // namespace

void AddWebRoutes(Router& router, const std::string& web_dir) {
  router.Add("GET", "/", Access::kRead,
             [web_dir](const HttpRequest& r) { return WebFile(r, web_dir, "index.html"); });
  router.Add("GET", "/web/{file}", Access::kRead,
             [web_dir](const HttpRequest& r) { return WebFile(r, web_dir, r.Param("file")); });
}

}  // namespace prov
