// The webhook power driver: on, off, cycle and status as HTTP requests, for
// whatever switches a machine over HTTP (a smart plug, a switched PDU, a home
// automation hub). Each request is "METHOD PATH" (or a full URL) with an
// optional body (on_request, on_body, ...), templates over the node's values ({{hostname}},
// {{mac}}), the config's settings ({{host}}, {{relay}}, ...) and {{secret}}, the value of the
// secret the config names from the secrets store: in a URL's path and query values are
// percent-encoded, in a body JSON-escaped. Status is read from the answer by two patterns
// (status_on, status_off); every answer must match `expect`, when set, to count as done. Without a
// cycle_request a cycle is off, a pause of cycle_delay seconds, then on.
//
// A preset fills the requests for a plug's documented HTTP API, so a node's
// config needs only the plug's address (docs/power.md):
//   tasmota        GET /cm?cmnd=Power On (Tasmota's web commands; relay=N for
//                  PowerN; the web password as secret)
//   shelly         GET /relay/N?turn=on (Shelly's first generation; channel=N)
//   shelly-rpc     GET /rpc/Switch.Set?id=N&on=true (Shelly Plus and later)
//   homeassistant  POST /api/services/homeassistant/turn_on {"entity_id": ...}
//                  with a long-lived token as secret (url= the hub, entity=)
// The secret never leaves in a result, an error or an event: requests are
// described with it hidden, and answers are searched for it.
#include <chrono>
#include <map>
#include <regex>
#include <thread>

#include "base/strings.h"
#include "power/driver.h"
#include "power/http_call.h"

namespace prov {
namespace {

using Values = std::map<std::string, std::string>;

// What a preset puts in a node's config when the config does not say.
Values Preset(const std::string& preset, const nlohmann::json& config) {
  const bool secret = !PowerSetting(config, "secret").empty();
  if (preset == "tasmota") {
    const std::string auth = secret ? "&user=admin&password={{secret}}" : "";
    return {{"on_request", "GET /cm?cmnd=Power{{relay}}%20On" + auth},
            {"off_request", "GET /cm?cmnd=Power{{relay}}%20Off" + auth},
            {"status_request", "GET /cm?cmnd=Power{{relay}}" + auth},
            {"status_on", R"("POWER\d*"\s*:\s*"ON")"},
            {"status_off", R"("POWER\d*"\s*:\s*"OFF")"},
            {"relay", ""},  // relay=N: PowerN, one relay of a multi-relay device
            // Older firmware answers a refused password with HTTP 200 and a
            // WARNING: only a POWER answer means it was done.
            {"expect", R"("POWER\d*")"}};
  }
  if (preset == "shelly") {
    Values v{{"on_request", "GET /relay/{{channel}}?turn=on"},
             {"off_request", "GET /relay/{{channel}}?turn=off"},
             // Off, and the plug's own timer turns it back on.
             {"cycle_request", "GET /relay/{{channel}}?turn=off&timer={{cycle_delay}}"},
             {"status_request", "GET /relay/{{channel}}"},
             {"status_on", R"("ison"\s*:\s*true)"},
             {"status_off", R"("ison"\s*:\s*false)"},
             {"channel", "0"}};
    if (secret) v["user"] = "admin";
    return v;
  }
  if (preset == "shelly-rpc") {
    Values v{{"on_request", "GET /rpc/Switch.Set?id={{channel}}&on=true"},
             {"off_request", "GET /rpc/Switch.Set?id={{channel}}&on=false"},
             {"cycle_request",
              "GET /rpc/Switch.Set?id={{channel}}&on=false&toggle_after={{cycle_delay}}"},
             {"status_request", "GET /rpc/Switch.GetStatus?id={{channel}}"},
             {"status_on", R"("output"\s*:\s*true)"},
             {"status_off", R"("output"\s*:\s*false)"},
             {"channel", "0"}};
    if (secret) v["user"] = "admin";  // Shelly's RPC: digest authentication as admin
    return v;
  }
  if (preset == "homeassistant") {
    const std::string body = R"({"entity_id": "{{entity}}"})";
    return {{"on_request", "POST /api/services/homeassistant/turn_on"},
            {"on_body", body},
            {"off_request", "POST /api/services/homeassistant/turn_off"},
            {"off_body", body},
            {"status_request", "GET /api/states/{{entity}}"},
            {"status_on", R"("state"\s*:\s*"on")"},
            {"status_off", R"("state"\s*:\s*"off")"},
            {"header", "Authorization: Bearer {{secret}}"}};
  }
  return {};
}

constexpr std::string_view kPresets = "tasmota, shelly, shelly-rpc or homeassistant";

// The node's config with its preset's defaults under it.
Values Settings(const nlohmann::json& config) {
  Values v = Preset(PowerSetting(config, "preset"), config);
  for (const auto& [key, value] : config.items())
    if (value.is_string()) v[key] = value.get<std::string>();
  if (!v.contains("cycle_delay")) v["cycle_delay"] = "5";
  return v;
}

std::string JsonEscape(const std::string& s) {
  std::string quoted = nlohmann::json(s).dump();
  return quoted.substr(1, quoted.size() - 2);
}

enum class Escape { kNone, kUrl, kJson };

// `tmpl` with each {{name}} replaced by values[name] (escaped as `escape`
// says); a name with no value is an error that names it.
Result<std::string> Render(const std::string& tmpl, const Values& values, Escape escape) {
  std::string out;
  size_t at = 0;
  while (true) {
    size_t open = tmpl.find("{{", at);
    if (open == std::string::npos) break;
    size_t close = tmpl.find("}}", open);
    if (close == std::string::npos) return Status::Invalid("'" + tmpl + "' has an unclosed {{");
    out += tmpl.substr(at, open - at);
    const std::string name = Trim(tmpl.substr(open + 2, close - open - 2));
    auto it = values.find(name);
    if (it == values.end())
      return Status::Invalid("'" + tmpl + "' uses {{" + name + "}}, which has no value here");
    out += escape == Escape::kUrl    ? UrlEncode(it->second)
           : escape == Escape::kJson ? JsonEscape(it->second)
                                     : it->second;
    at = close + 2;
  }
  return out + tmpl.substr(at);
}

// One request of the config, ready to send (`shown`: the URL as messages may
// show it, with the secret hidden).
struct Call {
  PowerHttpRequest request;
  std::string shown;
};

// `values` lacks the secret: MakeCall adds it.
Result<Call> MakeCall(const Values& settings, const std::string& action, Values values,
                      const std::string& secret, int timeout_ms) {
  auto it = settings.find(action + "_request");
  if (it == settings.end()) return Status::Invalid("no " + action + "_request");
  const std::string spec = Trim(it->second);
  size_t space = spec.find(' ');
  if (space == std::string::npos) return Status::Invalid(action + "_request is not 'METHOD PATH'");
  Call call;
  call.request.method = spec.substr(0, space);
  const std::string target = Trim(spec.substr(space + 1));
  // {{secret}} has a value in the URL only when the config names one.
  if (!secret.empty()) values["secret"] = secret;
  std::string base = target;
  if (target.rfind("http://", 0) != 0 && target.rfind("https://", 0) != 0) {
    auto url = settings.find("url");
    auto b = Render(url != settings.end() ? url->second : "http://{{host}}", values, Escape::kNone);
    if (!b.ok()) return b.status();
    while (!b->empty() && b->back() == '/') b->pop_back();
    base = *b + (target.empty() || target[0] == '/' ? "" : "/") + target;
  }
  // Values in the path and query are percent-encoded; the scheme and the
  // authority were given as they are.
  const size_t scheme = base.find("://");
  const size_t path = base.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  auto head = Render(base.substr(0, path), values, Escape::kNone);
  if (!head.ok()) return head.status();
  std::string url = *head;
  if (path != std::string::npos) {
    auto tail = Render(base.substr(path), values, Escape::kUrl);
    if (!tail.ok()) return tail.status();
    url += *tail;
  }
  call.request.url = url;
  // As messages show it: the secret hidden, as given and as encoded.
  call.request.shown_url = secret.empty() ? url : RedactSecrets(url, {UrlEncode(secret), secret});
  call.shown = call.request.method + " " + call.request.shown_url;
  values["secret"] = secret;
  if (auto body = settings.find(action + "_body"); body != settings.end()) {
    auto b = Render(body->second, values, Escape::kJson);
    if (!b.ok()) return b.status();
    call.request.body = *b;
    call.request.headers.push_back("Content-Type: application/json");
  }
  if (auto header = settings.find("header"); header != settings.end()) {
    auto h = Render(header->second, values, Escape::kNone);
    if (!h.ok()) return h.status();
    call.request.headers.push_back(*h);
  }
  if (auto user = settings.find("user"); user != settings.end()) {
    call.request.user = user->second;
    call.request.password = secret;
  }
  if (auto ca = settings.find("ca"); ca != settings.end()) call.request.ca_file = ca->second;
  call.request.timeout_ms = timeout_ms;
  return call;
}

// The values templates may use: the node's and the settings.
Values WebhookValues(const Values& settings, const PowerTarget& target) {
  Values v = settings;
  v["hostname"] = target.hostname;
  v["mac"] = target.mac;
  v.erase("secret");  // only its value, and only where Run puts it
  return v;
}

class Webhook final : public PowerDriver {
 public:
  std::string_view name() const override { return "webhook"; }
  std::string_view title() const override { return "the webhook power driver"; }
  PowerCapabilities capabilities() const override {
    return {.on = true, .off = true, .cycle = true, .status = true};
  }
  std::vector<std::string_view> settings() const override {
    return {"preset",     "url",         "host",          "relay",          "channel",
            "entity",     "user",        "secret",        "header",         "ca",
            "on_request", "off_request", "cycle_request", "status_request", "on_body",
            "off_body",   "cycle_body",  "status_body",   "status_on",      "status_off",
            "expect",     "cycle_delay"};
  }

  Status Validate(const nlohmann::json& config) const override {
    const std::string preset = PowerSetting(config, "preset");
    if (!preset.empty() && Preset(preset, config).empty())
      return Status::Invalid("webhook 'preset' must be " + std::string(kPresets) + ", found '" +
                             preset + "'");
    Values s = Settings(config);
    if (!s.contains("on_request") || !s.contains("off_request"))
      return Status::Invalid(
          "the webhook power driver needs on_request and off_request (\"METHOD PATH\"), or a "
          "'preset': " +
          std::string(kPresets));
    if (!s.contains("url") && !s.contains("host"))
      return Status::Invalid("the webhook power driver needs 'host' (the plug's address) or 'url'");
    if (preset == "homeassistant" && (!s.contains("entity") || !s.contains("secret")))
      return Status::Invalid(
          "the homeassistant preset needs 'entity' (switch.NAME) and 'secret' (a long-lived "
          "access token's name in the secrets store)");
    if (s.contains("status_request") != (s.contains("status_on") && s.contains("status_off")))
      return Status::Invalid(
          "a webhook status_request needs status_on and status_off (patterns of its answer), "
          "and they need it");
    for (const char* key : {"status_on", "status_off", "expect"}) {
      if (!s.contains(key)) continue;
      try {
        std::regex re(s[key]);
      } catch (const std::regex_error& e) {
        return Status::Invalid(std::string("webhook '") + key + "' is not a pattern: " + e.what());
      }
    }
    Status n = CheckNumberSetting(config, name(), "cycle_delay", 0, 600, "seconds");
    if (!n.ok()) return n;
    // Every template must render with the values a node has.
    const PowerTarget probe{config, "node", "52:54:00:00:00:00"};
    Values values = WebhookValues(s, probe);
    for (const char* action : {"on", "off", "cycle", "status"}) {
      if (!s.contains(std::string(action) + "_request")) continue;
      auto call = MakeCall(s, action, values, s.contains("secret") ? "x" : "", 1000);
      if (!call.ok())
        return Status::Invalid("webhook " + std::string(action) +
                               "_request: " + call.status().message());
    }
    return Status::Ok();
  }

  Result<std::string> Run(PowerOp op, const PowerSettings& ps,
                          const PowerTarget& target) const override {
    const Values s = Settings(target.config);
    std::string secret;
    if (auto name = s.find("secret"); name != s.end()) {
      if (!ps.secret) return Status::Internal("no secrets store for the webhook power driver");
      auto value = ps.secret(name->second);
      if (!value.ok()) return value.status();
      secret = *value;
    }
    const Values values = WebhookValues(s, target);
    const std::string where = Describe(s);
    auto send = [&](const std::string& action) -> Result<std::string> {
      auto call = MakeCall(s, action, values, secret, ps.timeout_ms);
      if (!call.ok()) return call.status();
      auto answer = PowerHttp(call->request);
      if (!answer.ok())
        return Status::Error(Code::kUnavailable,
                             RedactSecrets(answer.status().message(), {secret}));
      std::string body = RedactSecrets(answer->body.substr(0, 64 * 1024), {secret});
      if (answer->status < 200 || answer->status > 299)
        return Status::Error(Code::kUnavailable, call->shown + " answered HTTP " +
                                                     std::to_string(answer->status) + ": " +
                                                     Trim(body.substr(0, 200)));
      if (auto expect = s.find("expect");
          expect != s.end() && !std::regex_search(body, std::regex(expect->second)))
        return Status::Error(Code::kUnavailable,
                             call->shown + " answered what 'expect' (" + expect->second +
                                 ") does not match: " + Trim(body.substr(0, 200)));
      return body;
    };
    if (op == PowerOp::kStatus) {
      auto body = send("status");
      if (!body.ok()) return body.status();
      if (std::regex_search(*body, std::regex(s.at("status_on")))) return "on (" + where + ")";
      if (std::regex_search(*body, std::regex(s.at("status_off")))) return "off (" + where + ")";
      return Status::Error(Code::kUnavailable, where +
                                                   " answered neither status_on nor "
                                                   "status_off: " +
                                                   Trim(body->substr(0, 200)));
    }
    if (op == PowerOp::kCycle && !s.contains("cycle_request")) {
      auto off = send("off");
      if (!off.ok()) return off.status();
      std::this_thread::sleep_for(std::chrono::seconds(std::stol(s.at("cycle_delay"))));
      auto on = send("on");
      if (!on.ok())
        return Status::Error(on.status().code(),
                             "switched off, but not on again: " + on.status().message());
      return where + ": switched off, " + s.at("cycle_delay") + " s, on";
    }
    auto done = send(ToString(op));
    if (!done.ok()) return done.status();
    return where + ": " +
           (op == PowerOp::kCycle ? "cycled" : std::string("switched ") + ToString(op));
  }

 private:
  // "webhook (tasmota at 10.0.0.50)": what switched the node, in results.
  static std::string Describe(const Values& s) {
    auto get = [&](const char* k) {
      auto it = s.find(k);
      return it == s.end() ? std::string() : it->second;
    };
    std::string what = get("preset").empty() ? "webhook" : "webhook (" + get("preset");
    std::string at = get("host").empty() ? get("url") : get("host");
    if (get("preset").empty()) return at.empty() ? what : what + " at " + at;
    return what + (at.empty() ? "" : " at " + at) + ")";
  }
};

}  // namespace

const PowerDriver& WebhookDriver() {
  static const Webhook driver;
  return driver;
}

}  // namespace prov
