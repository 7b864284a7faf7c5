// libmicrohttpd behind the Router, in one of two modes:
//   - a thread per connection (threads = 0): simple, for the HTTPS API;
//   - `threads` event loops (epoll) sharing the connections, for the boot
//     listener: the node-facing routes (Router::Match::open: scripts, kernel and
//     initrd sent from a descriptor, hello, report) run on the loop, which
//     costs no thread per connection; every other route may wait (long polls,
//     SSH, builds), so its connection is suspended and the handler runs on a
//     thread of its own, which resumes the connection with the answer; at
//     most max_api_requests at once (the next is answered 503, Retry-After).
// Bodies are capped at max_body_bytes (413), idle clients dropped after a
// timeout. The MHD callback is a trampoline into a per-connection object
// freed when the request completes.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
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
  unsigned listen_backlog = 4096;  // listen(2)'s queue; the kernel caps it at net.core.somaxconn
  unsigned threads = 0;            // event-loop threads; 0: a thread per connection
  // Event loops only: API requests answered at once, each on a thread of its
  // own; one more is answered 503 with Retry-After.
  unsigned max_api_requests = 1024;
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
  HttpServer(const Router& router, uint64_t max_body, bool tls, bool pooled)
      : router_(router), max_body_(max_body), tls_(tls), pooled_(pooled) {}
  friend struct HttpServerCallbacks;
  // One of the max_offloaded_ places for a handler on a thread of its own,
  // or false when all are taken.
  bool TakeOffloadSlot();
  // Runs `work` (with a slot taken) on a thread of its own and gives the slot
  // back after it; the destructor waits for them all.
  void Offload(std::function<void()> work);

  const Router& router_;
  uint64_t max_body_;
  bool tls_;
  bool pooled_;  // event loops: routes that may wait are offloaded
  MHD_Daemon* daemon_ = nullptr;
  uint16_t port_ = 0;
  std::mutex mu_;
  std::condition_variable idle_;
  unsigned offloaded_ = 0;  // handlers running on their own threads: guarded by mu_
  unsigned max_offloaded_ = 1024;
};

}  // namespace prov
