#include "console/console_listener.h"
#include "store/testing/test_database.h"

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace prov {
namespace {

void SendUdp(uint16_t port, const std::string& text) {
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  CHECK(sendto(fd, text.data(), text.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to) ==
        static_cast<ssize_t>(text.size()));
  close(fd);
}

}  // namespace

TEST_CASE("console listener: lines from a node's address are kept, others dropped and counted") {
  auto log = ConsoleLog::Open(::prov::testing::TestDatabase());
  REQUIRE(log.ok());
  int64_t node = 42;  // who 127.0.0.1 is; 0 makes it no node
  auto listener = ConsoleListener::Start(
      ConsoleListenerSettings{"127.0.0.1", 0}, **log,
      [&node](const std::string& ip) { return ip == "127.0.0.1" ? node : int64_t{0}; });
  REQUIRE(listener.ok());
  const uint16_t port = (*listener)->port();
  CHECK(port != 0);
  CHECK((*listener)->target() == "127.0.0.1:" + std::to_string(port));
  (*listener)->AddLine(42, "provisiond", "script: from 127.0.0.1", BootStage::kScript);
  SendUdp(port, "[    0.000000] Linux version 6.1.0\n");
  SendUdp(port, "<5>provision: network eth0 10.0.0.5/24\nsystemd[1]: Started ssh.service\n");
  // Bounded wait for the batch (written every 200 ms).
  std::vector<ConsoleLine> lines;
  for (int i = 0; i < 300 && lines.size() < 4; ++i) {
    (*log)->Wait((*log)->LastId(), 100);
    lines = (*log)->Lines(42, 0, 0, 100);
  }
  REQUIRE(lines.size() == 4);
  CHECK(lines[0].source == "provisiond");
  CHECK(lines[1].source == "kernel");
  CHECK(lines[2].source == "initrd");
  CHECK(lines[2].text == "provision: network eth0 10.0.0.5/24");
  CHECK(lines[3].source == "system");
  for (const auto& l : lines) CHECK(l.boot == 1);

  node = 0;
  SendUdp(port, "from no node\n");
  std::string metrics;
  for (int i = 0; i < 300; ++i) {
    metrics = (*listener)->MetricsText();
    if (metrics.find("reason=\"unknown_address\"} 1") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK(metrics.find("provisiond_console_dropped_total{reason=\"unknown_address\"} 1") !=
        std::string::npos);
  CHECK(metrics.find("provisiond_console_lines_total{source=\"kernel\"} 1") != std::string::npos);
  CHECK(metrics.find("provisiond_console_lines_total{source=\"provisiond\"} 1") !=
        std::string::npos);
  listener->reset();
  CHECK((*log)->Lines(42, 0, 0, 100).size() == 4);
}

TEST_CASE("console listener: an address it cannot listen on is a clear error") {
  auto log = ConsoleLog::Open(::prov::testing::TestDatabase());
  REQUIRE(log.ok());
  auto bad = ConsoleListener::Start(ConsoleListenerSettings{"not-an-address", 0}, **log,
                                    [](const std::string&) { return int64_t{0}; });
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("'not-an-address' is not an address") != std::string::npos);
}

}  // namespace prov
