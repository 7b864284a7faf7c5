#include "http/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <tuple>

#include "base/thread.h"

namespace prov {
namespace {

// What we learn about a request across MHD's calls for it.
struct Connection {
  HttpRequest request;
  bool too_large = false;
  // Handled on a thread of its own (event-loop mode): the connection was
  // suspended, and `response` is queued when MHD calls again after the
  // thread resumed it.
  bool offloaded = false;
  HttpResponse response;
};

MHD_Result CollectHeader(void* cls, enum MHD_ValueKind, const char* key, const char* value) {
  auto* req = static_cast<HttpRequest*>(cls);
  std::string k = key;
  std::transform(k.begin(), k.end(), k.begin(), ::tolower);
  req->headers[k] = value ? value : "";
  return MHD_YES;
}

MHD_Result CollectQuery(void* cls, enum MHD_ValueKind, const char* key, const char* value) {
  auto* req = static_cast<HttpRequest*>(cls);
  if (key) req->query[key] = value ? value : "";
  return MHD_YES;
}

// The peer's address and port.
std::pair<std::string, int> PeerAddress(MHD_Connection* c) {
  const MHD_ConnectionInfo* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  if (!info || !info->client_addr) return {"", 0};
  char buf[INET6_ADDRSTRLEN] = {0};
  int port = 0;
  const sockaddr* sa = info->client_addr;
  if (sa->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf);
    port = ntohs(in->sin_port);
  } else if (sa->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof buf);
    port = ntohs(in6->sin6_port);
  }
  return {buf, port};
}

// MHD leaves out the body of a HEAD response itself, keeping Content-Length.
MHD_Result Queue(MHD_Connection* c, const HttpResponse& r) {
  MHD_Response* response = nullptr;
  if (!r.file_path.empty()) {
    // Zero-copy: MHD sends straight from the descriptor (sendfile) and
    // closes it when the response is destroyed.
    int fd = ::open(r.file_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      HttpResponse err = HttpResponse::Error(500, "cannot open the file to send");
      return Queue(c, err);
    }
    response = MHD_create_response_from_fd_at_offset64(r.file_length, fd, r.file_offset);
    if (!response) ::close(fd);  // MHD took it only when it made the response
  } else {
    response = MHD_create_response_from_buffer(r.body.size(), const_cast<char*>(r.body.data()),
                                               MHD_RESPMEM_MUST_COPY);
  }
  if (!response) return MHD_NO;
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, r.content_type.c_str());
  for (const auto& [k, v] : r.headers) MHD_add_response_header(response, k.c_str(), v.c_str());
  MHD_Result ret = MHD_queue_response(c, static_cast<unsigned>(r.status), response);
  MHD_destroy_response(response);
  return ret;
}

}  // namespace

// The trampolines MHD calls; they reach the server through `cls`.
struct HttpServerCallbacks {
  static MHD_Result OnRequest(void* cls, MHD_Connection* c, const char* url, const char* method,
                              const char*, const char* upload_data, size_t* upload_data_size,
                              void** con_cls);
  static void OnCompleted(void*, MHD_Connection*, void** con_cls, MHD_RequestTerminationCode);
};

MHD_Result HttpServerCallbacks::OnRequest(void* cls, MHD_Connection* c, const char* url,
                                          const char* method, const char*, const char* upload_data,
                                          size_t* upload_data_size, void** con_cls) {
  auto* self = static_cast<HttpServer*>(cls);
  auto* conn = static_cast<Connection*>(*con_cls);
  if (!conn) {
    conn = new Connection();
    conn->request.method = method;
    conn->request.path = url;
    MHD_get_connection_values(c, MHD_HEADER_KIND, &CollectHeader, &conn->request);
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, &CollectQuery, &conn->request);
    std::tie(conn->request.remote, conn->request.remote_port) = PeerAddress(c);
    conn->request.tls = self->tls_;
    const std::string length = conn->request.Header("content-length");
    if (!length.empty() && length.size() < 20 &&
        length.find_first_not_of("0123456789") == std::string::npos &&
        std::stoull(length) > self->max_body_)
      conn->too_large = true;
    *con_cls = conn;
    return MHD_YES;
  }
  if (*upload_data_size > 0) {
    if (!conn->too_large) {
      if (conn->request.body.size() + *upload_data_size > self->max_body_) {
        conn->too_large = true;
        conn->request.body.clear();
        conn->request.body.shrink_to_fit();
      } else {
        conn->request.body.append(upload_data, *upload_data_size);
      }
    }
    *upload_data_size = 0;
    return MHD_YES;
  }
  if (conn->offloaded) return Queue(c, conn->response);  // resumed with its answer
  if (conn->too_large)
    return Queue(c, HttpResponse::Error(413, "request body is larger than " +
                                                 std::to_string(self->max_body_) + " bytes"));
  Router::Match match = self->router_.Find(conn->request.method, conn->request.path);
  if (self->pooled_ && !match.open()) {
    if (!self->TakeOffloadSlot()) {
      HttpResponse busy = HttpResponse::Error(503, "provisiond is answering " +
                                                       std::to_string(self->max_offloaded_) +
                                                       " API requests already; try again");
      busy.headers.emplace_back("Retry-After", "1");
      return Queue(c, busy);
    }
    conn->offloaded = true;
    MHD_suspend_connection(c);
    self->Offload([self, c, conn, match = std::move(match)]() mutable {
      conn->response = self->router_.Handle(conn->request, std::move(match));
      MHD_resume_connection(c);
    });
    return MHD_YES;
  }
  return Queue(c, self->router_.Handle(conn->request, std::move(match)));
}

bool HttpServer::TakeOffloadSlot() {
  std::lock_guard lock(mu_);
  if (offloaded_ >= max_offloaded_) return false;
  ++offloaded_;
  return true;
}

void HttpServer::Offload(std::function<void()> work) {
  std::thread([this, work = std::move(work)] {
    // The router answers a handler's exception with a 500 itself.
    RunGuarded("API request", work);
    std::lock_guard lock(mu_);
    if (--offloaded_ == 0) idle_.notify_all();
  }).detach();
}

void HttpServerCallbacks::OnCompleted(void*, MHD_Connection*, void** con_cls,
                                      MHD_RequestTerminationCode) {
  delete static_cast<Connection*>(*con_cls);
  *con_cls = nullptr;
}

Result<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpServerOptions& options,
                                                      const Router& router) {
  const bool tls = !options.tls_cert_pem.empty() && !options.tls_key_pem.empty();
  const bool pooled = options.threads > 0;
  std::unique_ptr<HttpServer> server(new HttpServer(router, options.max_body_bytes, tls, pooled));
  server->max_offloaded_ = std::max(1u, options.max_api_requests);
  sockaddr_storage addr{};
  socklen_t addr_len = 0;
  unsigned flags = pooled ? MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
                                MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG
                          : MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                                MHD_USE_POLL | MHD_USE_ERROR_LOG;
  // A pool of one is no pool: MHD wants the option left out then.
  const unsigned pool = pooled && options.threads > 1 ? options.threads : 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&addr);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&addr);
  if (inet_pton(AF_INET, options.host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(options.port);
    addr_len = sizeof(sockaddr_in);
  } else if (inet_pton(AF_INET6, options.host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(options.port);
    addr_len = sizeof(sockaddr_in6);
    flags |= MHD_USE_IPv6;
  } else {
    return Status::Invalid("listen address '" + options.host + "' is not an IPv4 or IPv6 address");
  }
  (void)addr_len;
  if (tls) {
    if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
      return Status::Internal("this libmicrohttpd has no TLS support");
    flags |= MHD_USE_TLS;
    server->daemon_ = MHD_start_daemon(
        flags, options.port, nullptr, nullptr, &HttpServerCallbacks::OnRequest, server.get(),
        MHD_OPTION_SOCK_ADDR, reinterpret_cast<sockaddr*>(&addr), MHD_OPTION_NOTIFY_COMPLETED,
        &HttpServerCallbacks::OnCompleted, nullptr, MHD_OPTION_CONNECTION_TIMEOUT,
        options.connection_timeout_s, MHD_OPTION_CONNECTION_LIMIT, options.connection_limit,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, options.listen_backlog, MHD_OPTION_LISTENING_ADDRESS_REUSE,
        1, MHD_OPTION_HTTPS_MEM_KEY, options.tls_key_pem.c_str(), MHD_OPTION_HTTPS_MEM_CERT,
        options.tls_cert_pem.c_str(), MHD_OPTION_END);
  } else {
    server->daemon_ = MHD_start_daemon(
        flags, options.port, nullptr, nullptr, &HttpServerCallbacks::OnRequest, server.get(),
        MHD_OPTION_SOCK_ADDR, reinterpret_cast<sockaddr*>(&addr), MHD_OPTION_NOTIFY_COMPLETED,
        &HttpServerCallbacks::OnCompleted, nullptr, MHD_OPTION_CONNECTION_TIMEOUT,
        options.connection_timeout_s, MHD_OPTION_CONNECTION_LIMIT, options.connection_limit,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, options.listen_backlog, MHD_OPTION_LISTENING_ADDRESS_REUSE,
        1, pool ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END, pool, MHD_OPTION_END);
  }
  if (!server->daemon_)
    return Status::Error(Code::kUnavailable, "cannot listen on " + options.host + ":" +
                                                 std::to_string(options.port) +
                                                 " (address in use, or not on this machine)");
  const MHD_DaemonInfo* info = MHD_get_daemon_info(server->daemon_, MHD_DAEMON_INFO_BIND_PORT);
  server->port_ = info ? info->port : options.port;
  return server;
}

HttpServer::~HttpServer() {
  // Offloaded handlers end (long polls are woken by the daemon's stop) and
  // resume their connections before MHD stops.
  {
    std::unique_lock lock(mu_);
    idle_.wait(lock, [this] { return offloaded_ == 0; });
  }
  if (daemon_) MHD_stop_daemon(daemon_);
}

}  // namespace prov
