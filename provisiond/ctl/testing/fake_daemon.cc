#include "fake_daemon.h"

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <microhttpd.h>
#include <netinet/in.h>

#include <sstream>

#include "../cli.h"

namespace prov::ctl {
namespace {

std::vector<std::string> Segments(const std::string& path) {
  std::vector<std::string> out;
  std::istringstream in(path);
  for (std::string s; std::getline(in, s, '/');)
    if (!s.empty()) out.push_back(s);
  return out;
}

// What MHD's calls for one request gather.
struct Connection {
  HttpRequest request;
};

MHD_Result CollectQuery(void* cls, enum MHD_ValueKind, const char* key, const char* value) {
  if (key) static_cast<HttpRequest*>(cls)->query[key] = value ? value : "";
  return MHD_YES;
}

}  // namespace

// The trampolines MHD calls; they reach the fake through `cls`.
struct FakeDaemonCallbacks {
  static MHD_Result OnRequest(void* cls, MHD_Connection* c, const char* url, const char* method,
                              const char*, const char* upload_data, size_t* upload_data_size,
                              void** con_cls) {
    auto* conn = static_cast<Connection*>(*con_cls);
    if (!conn) {
      conn = new Connection();
      conn->request.method = method;
      conn->request.path = url;
      MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, &CollectQuery, &conn->request);
      *con_cls = conn;
      return MHD_YES;
    }
    if (*upload_data_size > 0) {
      conn->request.body.append(upload_data, *upload_data_size);
      *upload_data_size = 0;
      return MHD_YES;
    }
    HttpResponse r = static_cast<FakeDaemon*>(cls)->Handle(conn->request);
    MHD_Response* response = MHD_create_response_from_buffer(
        r.body.size(), const_cast<char*>(r.body.data()), MHD_RESPMEM_MUST_COPY);
    if (!response) return MHD_NO;
    MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    MHD_Result ret = MHD_queue_response(c, static_cast<unsigned>(r.status), response);
    MHD_destroy_response(response);
    return ret;
  }

  static void OnCompleted(void*, MHD_Connection*, void** con_cls, MHD_RequestTerminationCode) {
    delete static_cast<Connection*>(*con_cls);
    *con_cls = nullptr;
  }
};

const std::string& HttpRequest::Param(const std::string& name) const {
  static const std::string empty;
  auto it = params.find(name);
  return it == params.end() ? empty : it->second;
}

HttpResponse HttpResponse::Json(int status, const nlohmann::json& body) {
  return {status, body.dump() + "\n"};
}

HttpResponse HttpResponse::Error(int status, const std::string& message) {
  return Json(status, {{"error", message}});
}

FakeDaemon::FakeDaemon() = default;

FakeDaemon::~FakeDaemon() {
  if (daemon_) MHD_stop_daemon(daemon_);
}

void FakeDaemon::Add(const std::string& method, const std::string& pattern,
                     std::function<HttpResponse(const HttpRequest&)> handler) {
  REQUIRE(!daemon_);
  routes_.push_back({method, Segments(pattern), std::move(handler)});
}

HttpResponse FakeDaemon::Handle(HttpRequest& request) {
  const std::vector<std::string> parts = Segments(request.path);
  for (const Route& route : routes_) {
    if (route.method != request.method || route.segments.size() != parts.size()) continue;
    std::map<std::string, std::string> params;
    bool match = true;
    for (size_t i = 0; match && i < parts.size(); ++i) {
      const std::string& seg = route.segments[i];
      if (seg.size() > 2 && seg.front() == '{' && seg.back() == '}')
        params[seg.substr(1, seg.size() - 2)] = parts[i];
      else
        match = seg == parts[i];
    }
    if (!match) continue;
    request.params = std::move(params);
    std::string query;
    for (const auto& [k, v] : request.query) query += (query.empty() ? "?" : "&") + k + "=" + v;
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(request.method + " " + request.path + query +
                          (request.body.empty() ? "" : " " + request.body));
    }
    return route.handler(request);
  }
  return HttpResponse::Error(404, "no such path: " + request.path);
}

const std::string& FakeDaemon::url() {
  if (!daemon_) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = 0;  // any free port
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    daemon_ = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, nullptr,
                               nullptr, &FakeDaemonCallbacks::OnRequest, this, MHD_OPTION_SOCK_ADDR,
                               reinterpret_cast<sockaddr*>(&addr), MHD_OPTION_NOTIFY_COMPLETED,
                               &FakeDaemonCallbacks::OnCompleted, nullptr, MHD_OPTION_END);
    REQUIRE(daemon_);
    const MHD_DaemonInfo* info = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_BIND_PORT);
    REQUIRE(info);
    url_ = "http://127.0.0.1:" + std::to_string(info->port);
  }
  return url_;
}

Run FakeDaemon::Cli(std::vector<const char*> args) {
  args.insert(args.begin(), {"provisionctl", "--url", url().c_str()});
  std::istringstream in;
  std::ostringstream out, err;
  int status = RunCli(static_cast<int>(args.size()), args.data(), {in, out, err, false});
  return {status, out.str(), err.str()};
}

std::vector<std::string> FakeDaemon::requests() {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

}  // namespace prov::ctl
