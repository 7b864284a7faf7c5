// The SSH client's failures that need no sshd: nothing listening, a peer that
// says nothing, a peer that is not SSH, a malformed pinned key. Against real
// sshd: tests/integration/ssh_client_test.sh.
#include "configure/ssh_client.h"

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace prov {
namespace {

// A listening loopback socket on a free port; closed by the destructor.
struct Listener {
  int fd = -1;
  int port = 0;
  Listener() {
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(listen(fd, 4) == 0);
    socklen_t len = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~Listener() { close(fd); }
};

SshEndpoint Loopback(int port, int timeout_ms = 2000) {
  SshEndpoint e;
  e.node = "n1";
  e.host = "127.0.0.1";
  e.port = port;
  e.connect_timeout_ms = timeout_ms;
  return e;
}

}  // namespace

TEST_CASE("ssh_client: nothing listening is kUnavailable naming node and address") {
  int port = 0;
  { port = Listener().port; }  // bound, then closed: nothing listens there now
  auto r = SshSession::Connect(Loopback(port), "/nonexistent/key");
  REQUIRE(!r.ok());
  CHECK(r.status().code() == Code::kUnavailable);
  CHECK(r.status().message().find("node n1") != std::string::npos);
  CHECK(r.status().message().find("127.0.0.1:" + std::to_string(port)) != std::string::npos);
}

TEST_CASE("ssh_client: a peer that never speaks times out as kUnavailable") {
  Listener l;  // the kernel accepts the connection; nobody answers
  // The connection stays open as long as the listener lives: only
  // connect_timeout_ms ends the wait.
  auto r = SshSession::Connect(Loopback(l.port, 300), "/nonexistent/key");
  REQUIRE(!r.ok());
  CHECK(r.status().code() == Code::kUnavailable);
}

TEST_CASE("ssh_client: a peer that is not SSH is kUnavailable") {
  Listener l;
  std::thread peer([&] {
    int c = accept(l.fd, nullptr, nullptr);
    if (c < 0) return;
    const char reply[] = "HTTP/1.0 400 Bad Request\r\n\r\n";
    (void)!write(c, reply, sizeof reply - 1);
    close(c);
  });
  auto r = SshSession::Connect(Loopback(l.port), "/nonexistent/key");
  peer.join();
  REQUIRE(!r.ok());
  CHECK(r.status().code() == Code::kUnavailable);
  CHECK(r.status().message().find("node n1") != std::string::npos);
}

TEST_CASE("ssh_client: a pinned key that is not 'TYPE BASE64' is refused before connecting") {
  auto e = Loopback(1);
  e.pinned_host_key = "AAAAC3NzaC1lZDI1NTE5AAAAIDM";
  auto r = SshSession::Connect(e, "/nonexistent/key");
  REQUIRE(!r.ok());
  CHECK(r.status().code() == Code::kInvalid);
  CHECK(r.status().message().find("pinned host key") != std::string::npos);
}

}  // namespace prov
