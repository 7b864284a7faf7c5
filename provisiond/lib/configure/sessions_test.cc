// Sessions against a fake network (testing/fake_sessions.h); against real
// sshd: tests/integration/configure_test.sh (pinning, mismatch, unreachable).
#include "configure/sessions.h"

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "configure/testing/fake_sessions.h"
#include "store/testing/test_database.h"

namespace prov {
namespace {

using namespace std::chrono_literals;
using testing::FakeNetwork;

const std::string kKeyA = "ssh-ed25519 AAAAkeyA";
const std::string kKeyB = "ssh-ed25519 AAAAkeyB";

struct SessionsFixture {
  std::unique_ptr<Store> store = std::move(*Store::Open(::prov::testing::TestDatabase()));
  FakeNetwork net;
  Sessions sessions{*store, Settings(), net.Connector()};

  static SessionSettings Settings() {
    SessionSettings s;
    s.ssh_user = "admin";
    s.ssh_port = 2222;
    s.connect_timeout_ms = 1234;
    return s;
  }
  NodeRecord Add(const std::string& name, const std::string& ip, const std::string& host_key) {
    NodeRecord n;
    n.hostname = name;
    n.mac = "52:54:00:00:01:0" + std::to_string(++count);
    n.ip = ip;
    n.host_key = host_key;
    Result<NodeRecord> added = Status::Internal("not run");
    Status s = store->Transact([&](StoreTx& tx) -> Status {
      added = tx.InsertNode(n);
      return added.status();
    });
    REQUIRE_MESSAGE(s.ok(), s.message());
    REQUIRE(added.ok());
    return *added;
  }
  NodeRecord Reload(const NodeRecord& n) { return *store->FindNode(n.hostname); }
  std::vector<std::string> Events(const NodeRecord& n, const std::string& kind) {
    std::vector<std::string> out;
    for (const auto& e : store->ListEvents(0, n.id, 100))
      if (e.kind == kind) out.push_back(e.detail);
    return out;
  }
  int count = 0;
};

// A loopback port nothing listens on: bound, then closed.
int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

}  // namespace

TEST_CASE("sessions: host keys compare by type and key, not comment") {
  CHECK(SameHostKey("ssh-ed25519 AAAA root@a", "ssh-ed25519 AAAA"));
  CHECK(SameHostKey("ssh-ed25519 AAAA root@a", "ssh-ed25519 AAAA other@b"));
  CHECK(!SameHostKey("ssh-ed25519 AAAA", "ssh-ed25519 AAAB"));
  CHECK(!SameHostKey("ssh-rsa AAAA", "ssh-ed25519 AAAA"));
}

TEST_CASE("sessions: the endpoint is the node's address, pinned key and settings") {
  SessionsFixture f;
  f.net.Add("10.0.0.1", kKeyA);
  NodeRecord n = f.Add("n1", "10.0.0.1", kKeyA);
  auto lease = f.sessions.Acquire(n.id);
  REQUIRE(lease.Get(n).ok());
  auto ep = f.net.endpoints().at(0);
  CHECK(ep.node == "n1");
  CHECK(ep.host == "10.0.0.1");
  CHECK(ep.port == 2222);
  CHECK(ep.user == "admin");
  CHECK(ep.pinned_host_key == kKeyA);
  CHECK(ep.connect_timeout_ms == 1234);
}

TEST_CASE("sessions: first contact pins the key the node shows, with an event") {
  SessionsFixture f;
  f.net.Add("10.0.0.1", kKeyA);
  NodeRecord n = f.Add("n1", "10.0.0.1", "");
  auto lease = f.sessions.Acquire(n.id);
  auto s = lease.Get(n);
  REQUIRE(s.ok());
  CHECK((*s)->pinned_now());
  CHECK(f.Reload(n).host_key == kKeyA);
  auto events = f.Events(n, "ssh");
  REQUIRE(events.size() == 1);
  CHECK(events[0].rfind("host key pinned at first contact over SSH: " + kKeyA, 0) == 0);
}

TEST_CASE("sessions: a key pinned meanwhile (a hello) is not replaced at first contact") {
  SessionsFixture f;
  f.net.Add("10.0.0.1", kKeyA);
  NodeRecord stale = f.Add("n1", "10.0.0.1", "");
  Status pinned = f.store->Transact([&](StoreTx& tx) -> Status {
    auto n = tx.NodeById(stale.id);
    n->host_key = kKeyB;
    return tx.UpdateNode(*n);
  });
  REQUIRE(pinned.ok());
  auto lease = f.sessions.Acquire(stale.id);
  REQUIRE(lease.Get(stale).ok());  // the record it was given had no key
  CHECK(f.Reload(stale).host_key == kKeyB);
  CHECK(f.Events(stale, "ssh").empty());
}

TEST_CASE("sessions: a key other than the pinned one is refused, with an event") {
  SessionsFixture f;
  f.net.Add("10.0.0.3", kKeyB);
  NodeRecord n = f.Add("n3", "10.0.0.3", kKeyA);
  auto lease = f.sessions.Acquire(n.id);
  auto s = lease.Get(n);
  REQUIRE(!s.ok());
  CHECK(s.status().code() == Code::kForbidden);
  CHECK(s.status().message().find("n3: host key changed") != std::string::npos);
  CHECK(f.Events(n, "ssh") == std::vector<std::string>{s.status().message()});
  CHECK(f.Reload(n).host_key == kKeyA);  // the pin stands
  // Nothing was kept: the next attempt connects (and is refused) again.
  CHECK(!lease.Get(n).ok());
  CHECK(f.net.connects() == 2);
}

TEST_CASE("sessions: a key pinned since the session opened drops it; reconnecting is refused") {
  SessionsFixture f;
  f.net.Add("10.0.0.4", kKeyA);
  NodeRecord n = f.Add("n4", "10.0.0.4", kKeyA);
  {
    auto lease = f.sessions.Acquire(n.id);
    REQUIRE(lease.Get(n).ok());
  }
  n.host_key = kKeyB;  // provisionctl node set n4 --host-key ...
  auto lease = f.sessions.Acquire(n.id);
  auto s = lease.Get(n);
  REQUIRE(!s.ok());
  CHECK(s.status().code() == Code::kForbidden);
  CHECK(f.net.connects() == 2);
  n.host_key = kKeyA + " root@n4";  // set back (a comment does not matter)
  CHECK(lease.Get(n).ok());
}

TEST_CASE("sessions: a node's session is kept and reused by the next lease") {
  SessionsFixture f;
  f.net.Add("10.0.0.1", kKeyA);
  NodeRecord n = f.Add("n1", "10.0.0.1", kKeyA);
  NodeSession* first = nullptr;
  {
    auto lease = f.sessions.Acquire(n.id);
    auto s = lease.Get(n);
    REQUIRE(s.ok());
    first = *s;
    CHECK(*lease.Get(n) == first);
  }
  auto lease = f.sessions.Acquire(n.id);
  auto s = lease.Get(n);
  REQUIRE(s.ok());
  CHECK(*s == first);
  auto out = (*s)->Run("echo hi", "", "", 5000);
  REQUIRE(out.ok());
  CHECK(out->out == "hi\n");
  CHECK(f.net.connects() == 1);
  CHECK(!(*s)->pinned_now());  // the key was pinned already
}

TEST_CASE("sessions: an unreachable node's session is dropped; the next lease reconnects") {
  SessionsFixture f;
  f.net.Add("10.0.0.1", kKeyA);
  NodeRecord n = f.Add("n1", "10.0.0.1", kKeyA);
  {
    auto lease = f.sessions.Acquire(n.id);
    auto s = lease.Get(n);
    REQUIRE(s.ok());
    f.net.Unplug("10.0.0.1");
    auto out = (*s)->Run("true", "", "", 5000);
    REQUIRE(!out.ok());
    CHECK(out.status().code() == Code::kUnavailable);
    lease.Drop();  // what a run does when its node is unreachable
    auto again = lease.Get(n);
    REQUIRE(!again.ok());
    CHECK(again.status().code() == Code::kUnavailable);
    CHECK(f.Events(n, "ssh").empty());  // no answer is not a refusal
  }
  f.net.Plug("10.0.0.1");
  auto lease = f.sessions.Acquire(n.id);
  auto s = lease.Get(n);
  REQUIRE(s.ok());
  CHECK((*s)->Run("true", "", "", 5000).ok());
  CHECK(f.net.connects() == 3);
}

TEST_CASE("sessions: a session that broke is replaced without a Drop") {
  SessionsFixture f;
  f.net.Add("10.0.0.1", kKeyA);
  NodeRecord n = f.Add("n1", "10.0.0.1", kKeyA);
  auto lease = f.sessions.Acquire(n.id);
  REQUIRE(lease.Get(n).ok());
  f.net.Unplug("10.0.0.1");  // breaks the open session
  f.net.Plug("10.0.0.1");
  auto s = lease.Get(n);
  REQUIRE(s.ok());
  CHECK((*s)->alive());
  CHECK(f.net.connects() == 2);
}

TEST_CASE("sessions: a node without an address is unavailable without connecting") {
  SessionsFixture f;
  NodeRecord n = f.Add("n1", "", "");
  auto lease = f.sessions.Acquire(n.id);
  auto s = lease.Get(n);
  REQUIRE(!s.ok());
  CHECK(s.status().code() == Code::kUnavailable);
  CHECK(s.status().message() ==
        "n1 has no address yet (it has not booted, or was enrolled without --ip)");
  CHECK(f.net.connects() == 0);
}

TEST_CASE("sessions: one lease at a time per node; a spare session when busy") {
  SessionsFixture f;
  f.net.Add("10.0.0.1", kKeyA);
  f.net.Add("10.0.0.2", kKeyA);
  NodeRecord n1 = f.Add("n1", "10.0.0.1", kKeyA);
  NodeRecord n2 = f.Add("n2", "10.0.0.2", kKeyA);
  std::atomic<bool> acquired{false};
  std::thread waiter;
  NodeSession* kept = nullptr;
  {
    auto lease = f.sessions.Acquire(n1.id);
    kept = *lease.Get(n1);
    waiter = std::thread([&] {
      auto second = f.sessions.Acquire(n1.id);
      acquired = true;
    });
    {
      // Another node is not held up.
      auto other = f.sessions.Acquire(n2.id);
      CHECK(other.Get(n2).ok());
    }
    // A command on the busy node gets a session of its own, closed after it.
    {
      auto spare = f.sessions.AcquireOrSpare(n1.id);
      auto s = spare.Get(n1);
      REQUIRE(s.ok());
      CHECK(*s != kept);
    }
    CHECK(f.net.connects() == 3);
    // Acquire waits for the run: the waiter is seen waiting, not through.
    for (int i = 0; i < 1000 && f.sessions.waiting(n1.id) == 0; ++i)
      std::this_thread::sleep_for(10ms);
    CHECK(f.sessions.waiting(n1.id) == 1);
    CHECK(!acquired);
  }
  waiter.join();
  CHECK(acquired);
  // Not busy: AcquireOrSpare takes the kept session.
  auto lease = f.sessions.AcquireOrSpare(n1.id);
  CHECK(*lease.Get(n1) == kept);
  CHECK(f.net.connects() == 3);
}

TEST_CASE("sessions: the real connector reports a node where nothing listens as unavailable") {
  auto store = std::move(*Store::Open(::prov::testing::TestDatabase()));
  SessionSettings settings;
  settings.ssh_port = FreePort();
  settings.connect_timeout_ms = 2000;
  Sessions sessions(*store, settings, SshConnector("/nonexistent/key"));
  NodeRecord n;
  n.id = 1;
  n.hostname = "n1";
  n.ip = "127.0.0.1";
  auto lease = sessions.Acquire(n.id);
  auto s = lease.Get(n);
  REQUIRE(!s.ok());
  CHECK(s.status().code() == Code::kUnavailable);
  CHECK(s.status().message().find("node n1") != std::string::npos);
}

}  // namespace prov
