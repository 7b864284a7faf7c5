// libmicrohttpd behind the Router: one thread per connection (long-polls and
// large downloads do not block others), bodies capped at max_body_bytes
// (413), idle clients dropped after a timeout. The MHD callback is a
// trampoline into a per-connection object freed when the request completes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/result.h"
#include "http/http.h"

struct MHD_Daemon;

namespace prov {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;  // 0: any free port; see port()
  uint64_t max_body_bytes = 1 << 20;
  unsigned connection_timeout_s = 30;
  unsigned connection_limit = 4096;
  // Both set: HTTPS (libmicrohttpd over GnuTLS) with this certificate.
  std::string tls_cert_pem;
  std::string tls_key_pem;
};

class HttpServer {
 public:
  // Starts listening; `router` must outlive the server.
  static Result<std::unique_ptr<HttpServer>> Start(const HttpServerOptions& options,
                                                   const Router& router);
  ~HttpServer();  // stops accepting and waits for running handlers
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  uint16_t port() const { return port_; }

 private:
  HttpServer(const Router& router, uint64_t max_body, bool tls)
      : router_(router), max_body_(max_body), tls_(tls) {}
  friend struct HttpServerCallbacks;

  const Router& router_;
  uint64_t max_body_;
  bool tls_;
  MHD_Daemon* daemon_ = nullptr;
  uint16_t port_ = 0;
};

}  // namespace prov
