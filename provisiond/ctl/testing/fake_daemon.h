// A fake provisiond for the verbs' tests: canned handlers behind a real HTTP
// server (libmicrohttpd) on a free loopback port, so what a verb sends and
// how it reads the replies (503s, 409s) is tested without the daemon. It is
// the tests' own, so provisionctl's tests need nothing of the daemon's
// library; its request and response mirror the daemon's (http/http.h) in
// name, so a handler reads like one of provisiond's.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

struct MHD_Daemon;

namespace prov::ctl {

struct HttpRequest {
  std::string method;
  std::string path;                           // decoded
  std::map<std::string, std::string> query;   // decoded
  std::map<std::string, std::string> params;  // the {name} segments of the route
  std::string body;

  // A {name} segment of the route, or "".
  const std::string& Param(const std::string& name) const;
};

struct HttpResponse {
  int status = 200;
  std::string body;  // JSON

  static HttpResponse Json(int status, const nlohmann::json& body);
  // {"error": message}, as provisiond answers a failure.
  static HttpResponse Error(int status, const std::string& message);
};

// What one provisionctl run printed and returned.
struct Run {
  int status;
  std::string out;
  std::string err;
};

class FakeDaemon {
 public:
  FakeDaemon();
  ~FakeDaemon();  // stops the server, waiting for a handler that runs
  FakeDaemon(const FakeDaemon&) = delete;
  FakeDaemon& operator=(const FakeDaemon&) = delete;

  // Serves `handler` for `method` `pattern` ("/api/v1/nodes/{node}"); every
  // request it serves is recorded as "METHOD /path?query body". Other
  // requests are answered 404. Add every route before the first Cli().
  void Add(const std::string& method, const std::string& pattern,
           std::function<HttpResponse(const HttpRequest&)> handler);

  // Runs provisionctl with `args` against the fake (started on first use),
  // with no terminal on stdin.
  Run Cli(std::vector<const char*> args);

  // The fake's base URL (started on first use).
  const std::string& url();
  // The requests served so far, oldest first.
  std::vector<std::string> requests();

 private:
  struct Route {
    std::string method;
    std::vector<std::string> segments;
    std::function<HttpResponse(const HttpRequest&)> handler;
  };
  friend struct FakeDaemonCallbacks;

  // Runs on the server's thread.
  HttpResponse Handle(HttpRequest& request);

  std::vector<Route> routes_;  // fixed once the server runs
  MHD_Daemon* daemon_ = nullptr;
  std::string url_;
  std::mutex mu_;
  std::vector<std::string> requests_;  // guarded by mu_
};

}  // namespace prov::ctl
