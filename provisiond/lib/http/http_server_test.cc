// The HTTP server over real sockets on loopback: in event-loop mode a route
// that waits (an API long poll) runs on a thread of its own, so the boot
// routes on the loop answer while it waits; in both modes every answer gets
// back to its client.
#include "http/http_server.h"

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace prov {
namespace {

constexpr const char* kToken = "0123456789abcdef0123456789abcdef";

// One HTTP/1.0 request on a new connection; the whole answer (headers and
// body), or "" when the connection failed or nothing came for 30 s.
std::string Fetch(uint16_t port, const std::string& path, const std::string& token = "") {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  // A server that never answers fails the check instead of hanging the test
  // (a bound, not a timing: answers here take milliseconds).
  timeval bound{30, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof bound);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    std::string req = "GET " + path + " HTTP/1.0\r\nHost: t\r\n";
    if (!token.empty()) req += "Authorization: Bearer " + token + "\r\n";
    req += "\r\n";
    if (::write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
      char buf[4096];
      ssize_t n;
      while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  return out;
}

// A gate the slow route waits at until the test opens it.
struct RequestGate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  int waiting = 0;
  std::atomic<int> finished{0};  // handlers past the gate
  void Wait() {
    std::unique_lock lock(mu);
    ++waiting;
    cv.notify_all();
    cv.wait(lock, [&] { return open; });
  }
  // False when fewer than `n` came within 30 s (a bound, not a timing).
  bool WaitForWaiters(int n) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(30), [&] { return waiting >= n; });
  }
  void Open() {
    std::lock_guard lock(mu);
    open = true;
    cv.notify_all();
  }
};

// Opens the gate when the test leaves, also by a failed REQUIRE, before the
// server and the clients' futures go: the waiting handlers end and the
// server can stop. Declared after both.
struct OpenAtExit {
  RequestGate& gate;
  ~OpenAtExit() { gate.Open(); }
};

std::unique_ptr<Router> MakeRouter(RequestGate& gate) {
  auto tokens = TokenSet::Parse("0123456789abcdef0123456789abcdef reader read\n", "tokens");
  REQUIRE_MESSAGE(tokens.ok(), tokens.status().message());
  auto router = std::make_unique<Router>(std::make_shared<const TokenSet>(*tokens));
  router->Add("GET", "/boot/{script}", Router::Access::kOpen, [](const HttpRequest& r) {
    return HttpResponse::Text(200, "script " + r.Param("script"));
  });
  router->Add("GET", "/api/v1/wait", Router::Access::kRead, [&gate](const HttpRequest&) {
    gate.Wait();
    HttpResponse r = HttpResponse::Text(200, "waited");
    ++gate.finished;
    return r;
  });
  return router;
}

}  // namespace

TEST_CASE(
    "http server: event loops answer boot routes while API requests wait on their own threads") {
  RequestGate gate;
  auto router = MakeRouter(gate);
  CHECK(router->Find("GET", "/boot/52-54-00-00-00-01.ipxe").open());
  CHECK(router->Find("HEAD", "/boot/x").open());
  CHECK_FALSE(router->Find("GET", "/api/v1/wait").open());
  CHECK_FALSE(router->Find("GET", "/no/such/path").open());

  HttpServerOptions options;
  options.threads = 2;
  auto server = HttpServer::Start(options, *router);
  REQUIRE(server.ok());
  const uint16_t port = (*server)->port();

  // More waiting API requests than there are event loops.
  std::vector<std::future<std::string>> waiting;
  for (int i = 0; i < 4; ++i)
    waiting.push_back(
        std::async(std::launch::async, [port] { return Fetch(port, "/api/v1/wait", kToken); }));
  OpenAtExit open_at_exit{gate};
  REQUIRE_MESSAGE(gate.WaitForWaiters(4), "the waiting requests did not all reach their handler");

  // The loops still serve the boot route, many times over.
  for (int i = 0; i < 50; ++i) {
    std::string answer = Fetch(port, "/boot/n" + std::to_string(i) + ".ipxe");
    REQUIRE(answer.find("200 OK") != std::string::npos);
    CHECK(answer.find("script n" + std::to_string(i) + ".ipxe") != std::string::npos);
  }
  // A refused API request is answered at once too (401, on its own thread).
  CHECK(Fetch(port, "/api/v1/wait").find("401") != std::string::npos);

  gate.Open();
  for (auto& w : waiting) {
    std::string answer = w.get();
    CHECK(answer.find("200 OK") != std::string::npos);
    CHECK(answer.find("waited") != std::string::npos);
  }
}

TEST_CASE("http server: API requests past max_api_requests are answered 503 with Retry-After") {
  RequestGate gate;
  auto router = MakeRouter(gate);
  HttpServerOptions options;
  options.threads = 1;
  options.max_api_requests = 2;
  auto server = HttpServer::Start(options, *router);
  REQUIRE(server.ok());
  const uint16_t port = (*server)->port();
  std::vector<std::future<std::string>> waiting;
  for (int i = 0; i < 2; ++i)
    waiting.push_back(
        std::async(std::launch::async, [port] { return Fetch(port, "/api/v1/wait", kToken); }));
  OpenAtExit open_at_exit{gate};
  REQUIRE_MESSAGE(gate.WaitForWaiters(2), "the waiting requests did not reach their handler");

  // Both places taken: the third is answered at once, and says when to come back.
  std::string busy = Fetch(port, "/api/v1/wait", kToken);
  CHECK(busy.find("503") != std::string::npos);
  CHECK(busy.find("Retry-After: 1") != std::string::npos);
  CHECK(busy.find("try again") != std::string::npos);
  // The boot routes on the loop are not held up.
  CHECK(Fetch(port, "/boot/a.ipxe").find("script a.ipxe") != std::string::npos);

  gate.Open();
  for (auto& w : waiting) CHECK(w.get().find("waited") != std::string::npos);
  // The places are given back: one more request gets its answer (a handler's
  // thread gives its place back just after its client got the answer, so a
  // request at that instant may still find none: tried up to 100 times).
  std::string again;
  for (int i = 0; i < 100 && again.find("waited") == std::string::npos; ++i)
    again = Fetch(port, "/api/v1/wait", kToken);
  CHECK(again.find("waited") != std::string::npos);
}

TEST_CASE("http server: a thread per connection answers the same") {
  RequestGate gate;
  gate.Open();
  auto router = MakeRouter(gate);
  HttpServerOptions options;
  options.threads = 0;
  auto server = HttpServer::Start(options, *router);
  REQUIRE(server.ok());
  CHECK(Fetch((*server)->port(), "/boot/a.ipxe").find("script a.ipxe") != std::string::npos);
  CHECK(Fetch((*server)->port(), "/api/v1/wait", kToken).find("waited") != std::string::npos);
}

TEST_CASE("http server: stopping waits for the handlers running on their own threads") {
  RequestGate gate;
  auto router = MakeRouter(gate);
  HttpServerOptions options;
  options.threads = 1;
  auto server = HttpServer::Start(options, *router);
  REQUIRE(server.ok());
  const uint16_t port = (*server)->port();
  auto waiting =
      std::async(std::launch::async, [port] { return Fetch(port, "/api/v1/wait", kToken); });
  REQUIRE(gate.WaitForWaiters(1));
  std::thread opener([&gate] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    gate.Open();
  });
  server->reset();  // returns only once the handler ended
  CHECK(gate.finished == 1);
  opener.join();
  (void)waiting.get();  // answered or closed: either way it ends
}

}  // namespace prov
