// HTTP requests and responses without any server types, and the one route
// table. Handlers are `HttpResponse(const HttpRequest&)`, so they are tested
// without a socket; http_server.cc adapts libmicrohttpd to this.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace prov {

// What a bearer token may do: kRead, every GET of the API; kAdmin, every
// route; kNone, no valid token.
enum class TokenRole { kNone, kRead, kAdmin };
// "read", "admin" ("" for kNone): the tokens file's and the API's words.
const char* ToString(TokenRole role);
std::optional<TokenRole> ParseTokenRole(std::string_view text);

struct HttpRequest {
  std::string method;
  std::string path;
  std::map<std::string, std::string> query;
  std::map<std::string, std::string> headers;  // keys lowercase
  std::string body;
  std::string remote;   // peer address
  int remote_port = 0;  // peer port (0: unknown)
  // Whether the peer's port is below 1024: only root (CAP_NET_BIND_SERVICE)
  // on the peer could bind it. Node-facing routes that hand out or use a
  // node's credential require it, so a node's unprivileged users cannot.
  bool FromPrivilegedPort() const { return remote_port > 0 && remote_port < 1024; }
  bool tls = false;  // came over the HTTPS listener
  // Whether the peer is this machine (127.0.0.0/8, ::1, ::ffff:127.x).
  bool FromLoopback() const;
  // Filled by the router: {name} segments of the matched pattern, who the
  // bearer token belongs to ("" when there was none) and its role.
  std::map<std::string, std::string> params;
  std::string who;
  TokenRole role = TokenRole::kNone;

  std::string Header(const std::string& lowercase_name) const;
  std::string Query(const std::string& name, const std::string& fallback = "") const;
  // A whole-number query parameter: `fallback` when absent, an error that
  // names it when it is not a number between `min` and `max`.
  Result<int64_t> QueryInt(const std::string& name, int64_t fallback, int64_t min,
                           int64_t max) const;
  const std::string& Param(const std::string& name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // A file to send instead of `body` (zero-copy by the server): the caller
  // owns nothing; the server opens `file_path` itself and sends
  // [file_offset, file_offset + file_length).
  std::string file_path;
  uint64_t file_offset = 0;
  uint64_t file_length = 0;

  static HttpResponse Json(int status, const nlohmann::json& body);
  static HttpResponse Error(int status, const std::string& message);
  static HttpResponse FromStatus(const Status& s);
  static HttpResponse Text(int status, std::string body, std::string type = "text/plain");
};

// Serves [part of] a file by reference (zero-copy in the server): honours
// Range (one range: 206 with Content-Range, 416 when unsatisfiable) and
// If-None-Match against `etag` (304). `path` must come from a catalog, never
// from the request.
HttpResponse ServeFile(const HttpRequest& request, const std::string& path, uint64_t size,
                       const std::string& etag, const std::string& content_type);

// The HTTP status that matches a Status code.
int HttpStatusFor(Code code);

// Refuses JSON nested deeper than `max_depth` arrays/objects (scanned
// without parsing): nlohmann's dump() recurses, so a body of a few hundred
// thousand '[' would overflow a thread's stack wherever it is written back.
Status CheckJsonDepth(const std::string& body, int max_depth = 64);

// Parses a JSON object body, refusing malformed JSON, too deep nesting,
// non-objects and fields outside `allowed` with a message that names the field.
Result<nlohmann::json> ParseJsonObject(const std::string& body,
                                       const std::vector<std::string>& allowed);

// Bearer tokens from a file: one per line, optionally followed by a name and
// a role ("<token> alice read"); '#' starts a comment. The role is `read`
// (every GET of the API, the inventory, events, runs) or `admin` (every
// route), `admin` when left out. Tokens are compared in constant time and
// never logged.
class TokenSet {
 public:
  struct Caller {
    std::string name;  // "" when the token is unknown
    TokenRole role = TokenRole::kNone;
  };
  static Result<TokenSet> Load(const std::string& path);
  static Result<TokenSet> Parse(const std::string& text, const std::string& file);
  // Who holds the token; an empty name when the token is unknown.
  Caller Lookup(const std::string& token) const;
  // The first token with `role` ("" when none): what a control node shows
  // the active to copy its images (the control nodes share one tokens file).
  std::string FirstWithRole(TokenRole role) const;
  size_t size() const { return tokens_.size(); }

 private:
  struct Entry {
    std::string token;
    Caller caller;
  };
  std::vector<Entry> tokens_;
};

// Request counts and latency per route, for /metrics.
class RouteMetrics {
 public:
  void Record(const std::string& route, int status, double seconds);
  std::string Prometheus() const;

 private:
  struct Series {
    std::map<int, uint64_t> by_status;
    std::vector<uint64_t> buckets;  // cumulative at render time
    double sum = 0;
    uint64_t count = 0;
  };
  mutable std::mutex mu_;
  std::map<std::string, Series> series_;  // guarded by mu_
};

class Router {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;
  // Who may call a route:
  //   kOpen   anyone; the Authorization header is not read as an API token
  //           (what nodes fetch and send while they boot, whose handlers
  //           check the node's own credential, and the web page's files)
  //   kRead   a valid API token of either role (401 without one)
  //   kAdmin  a valid `admin` token (401 without a valid token, 403 with a
  //           `read` one)
  // Routes other than kOpen answer over plain HTTP only to loopback clients
  // (403 otherwise): tokens and answers cross the network only in TLS.
  enum class Access { kOpen, kRead, kAdmin };

  explicit Router(std::shared_ptr<const TokenSet> tokens) : tokens_(std::move(tokens)) {}

  // `pattern` is a path with {name} segments; a trailing "{name...}" takes
  // the rest of the path. `route` names the route in metrics.
  void Add(const std::string& method, const std::string& pattern, Access access, Handler handler);

  // Matches, authenticates by the route's Access, runs the handler, records
  // metrics. Never throws: a handler's exception becomes a 500 with its
  // message.
  HttpResponse Handle(HttpRequest& request) const;

  struct Route {
    std::string method;
    std::string pattern;
    std::vector<std::string> segments;
    Access access;
    Handler handler;
  };
  // Which route a request is for, found once: `route` null when none;
  // `path_matched` and `allowed` say whether the path matched with other
  // methods, and which (405's Allow).
  struct Match {
    const Route* route = nullptr;
    std::map<std::string, std::string> params;
    bool path_matched = false;
    std::string allowed;
    // A kOpen route (the node-facing ones and the web page's files): those
    // never wait on anything but SQL and files, so the HTTP server runs them
    // on its event loop; the others may wait (long polls, SSH, image
    // builds) and get a thread of their own.
    bool open() const { return route && route->access == Access::kOpen; }
  };
  Match Find(const std::string& method, const std::string& path) const;
  // Handle with the route Find found for this request.
  HttpResponse Handle(HttpRequest& request, Match match) const;

  const RouteMetrics& metrics() const { return metrics_; }
  void set_tokens(std::shared_ptr<const TokenSet> tokens);
  const std::vector<Route>& routes() const { return routes_; }

 private:
  std::vector<Route> routes_;
  mutable std::mutex tokens_mu_;
  std::shared_ptr<const TokenSet> tokens_;  // guarded by tokens_mu_
  mutable RouteMetrics metrics_;
};

// Splits "/a/b?x=1&y=%20" into path and decoded query parameters.
void SplitTarget(const std::string& target, std::string& path,
                 std::map<std::string, std::string>& query);
std::string UrlDecode(const std::string& s);

}  // namespace prov
