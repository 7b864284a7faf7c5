#include "console/console_log.h"

#include <doctest/doctest.h>

#include "base/temp_dir.h"
#include "store/testing/test_database.h"

namespace prov {
namespace {

ConsoleLine NodeLine(int64_t node, const std::string& text) {
  return ConsoleLine{0, node, 0, 1000, ConsoleSource(text), text};
}
ConsoleLine ServedLine(int64_t node, const std::string& text) {
  return ConsoleLine{
      0, node, 0, 1000, "provisiond", text, ParseBootStage(text.substr(0, text.find(':')))};
}

}  // namespace

TEST_CASE("console: a datagram becomes clean lines") {
  CHECK(ConsoleTextLines("one\ntwo\r\n\n") == std::vector<std::string>{"one", "two"});
  CHECK(ConsoleTextLines("<6>[    1.5] eth0: up\n") ==
        std::vector<std::string>{"[    1.5] eth0: up"});
  CHECK(ConsoleTextLines("a\tb\x1b[31mred\x07") == std::vector<std::string>{"a b[31mred"});
  CHECK(ConsoleTextLines("<x>not a priority") == std::vector<std::string>{"<x>not a priority"});
  CHECK(ConsoleTextLines(std::string(5000, 'a'))[0].size() == 1000);
  CHECK(ConsoleTextLines("").empty());
}

TEST_CASE("console: the source of a line is told by its form") {
  CHECK(ConsoleSource("[    0.000000] Linux version 6.1.0-28-amd64") == "kernel");
  CHECK(ConsoleSource("provision: ERROR mount-nfs (try 1/3, round 1): no route") == "initrd");
  CHECK(ConsoleSource("[   12.345678] provision: network eth0 10.99.0.100/24") == "initrd");
  CHECK(ConsoleSource("[   20.1] systemd[1]: Started ssh.service - OpenBSD Secure Shell.") ==
        "system");
  CHECK(ConsoleSource("provision-hello[412]: phoned home") == "system");
  CHECK(ConsoleSource("[    1.0] pci 0000:00:02.0: [1af4:1000] type 00") == "kernel");
  CHECK(ConsoleSource("EXT4-fs (vda1): mounted filesystem [x]: ok") == "kernel");
}

TEST_CASE("console: boots are told apart by provisiond's first stages and kernel banners") {
  ConsoleBootState s;
  CHECK(AssignBoot(s, ServedLine(1, "dhcp: 10.99.0.100")) == 1);
  CHECK(AssignBoot(s, ServedLine(1, "script: from 10.99.0.100")) == 1);
  CHECK(AssignBoot(s, ServedLine(1, "kernel: lab@1")) == 1);
  CHECK(AssignBoot(s, NodeLine(1, "[ 0.0] Linux version 6.1")) == 1);
  CHECK(AssignBoot(s, NodeLine(1, "provision: network eth0")) == 1);
  // provisiond's later stages of the same boot (the initrd's DHCP) do not
  // start one.
  CHECK(AssignBoot(s, ServedLine(1, "network: 10.99.0.100 (the initrd's DHCP)")) == 1);
  CHECK(AssignBoot(s, NodeLine(1, "systemd[1]: Started x")) == 1);
  // The next power-on.
  CHECK(AssignBoot(s, ServedLine(1, "dhcp: 10.99.0.100")) == 2);
  CHECK(AssignBoot(s, NodeLine(1, "[ 0.0] Linux version 6.1")) == 2);
  // A reset provisiond did not see: a second banner.
  CHECK(AssignBoot(s, NodeLine(1, "[ 0.0] Linux version 6.1")) == 3);
  // Lines of a node never seen booting start boot 1.
  ConsoleBootState fresh;
  CHECK(AssignBoot(fresh, NodeLine(2, "systemd[1]: Reached target")) == 1);
}

TEST_CASE("console log: lines by boot, the failing line, retention, reopened") {
  TempDir dir;
  // On PostgreSQL (store.postgresql): a schema of the test's own there.
  const std::string path =
      ::prov::testing::OnPostgres() ? ::prov::testing::TestDatabase() : dir.path() + "/console.db";
  {
    auto log = ConsoleLog::Open(path, ConsoleRetention{50, 2});
    REQUIRE(log.ok());
    std::vector<ConsoleLine> lines = {
        ServedLine(7, "dhcp: 10.0.0.7"),
        NodeLine(7, "[ 0.0] Linux version 6.1"),
        NodeLine(7, "provision: ERROR mount-nfs (try 1/3, round 1): access denied"),
        NodeLine(7, "provision: mount-nfs: retrying in 5s"),
        NodeLine(8, "[ 0.0] Linux version 6.1"),
    };
    REQUIRE((*log)->Append(lines).ok());
    CHECK(lines[0].boot == 1);
    CHECK(lines[4].boot == 1);
    CHECK(lines[4].id > lines[3].id);
    auto seven = (*log)->Lines(7, 0, 0, 100);
    REQUIRE(seven.size() == 4);
    CHECK(seven[2].source == "initrd");
    CHECK((*log)->Lines(7, 0, seven[1].id, 100).size() == 2);
    CHECK((*log)->Lines(7, 0, 0, 1).size() == 1);
    ConsoleLine error;
    auto tail = (*log)->Tail(7, 1, &error);
    REQUIRE(tail.size() == 1);
    CHECK(tail[0].text == "provision: mount-nfs: retrying in 5s");
    CHECK(error.text.find("ERROR mount-nfs") != std::string::npos);
    // Shown in the tail already: not repeated.
    (*log)->Tail(7, 5, &error);
    CHECK(error.id == 0);
    // Three more boots of node 7: two are kept.
    for (int b = 0; b < 3; ++b) {
      std::vector<ConsoleLine> boot = {ServedLine(7, "dhcp: 10.0.0.7"),
                                       NodeLine(7, "[ 0.0] Linux version 6.1")};
      REQUIRE((*log)->Append(boot).ok());
    }
    CHECK((*log)->Boots(7) == std::vector<int64_t>{3, 4});
    CHECK((*log)->Boots(8) == std::vector<int64_t>{1});
    // 300 lines in one boot: the newest 50 are kept.
    std::vector<ConsoleLine> many;
    for (int i = 0; i < 300; ++i) many.push_back(NodeLine(8, "line " + std::to_string(i)));
    REQUIRE((*log)->Append(many).ok());
    auto kept = (*log)->Lines(8, 0, 0, 1000);
    CHECK(kept.size() == 50);
    CHECK(kept.back().text == "line 299");
  }
  // Reopened: the boot counters go on from the table.
  auto again = ConsoleLog::Open(path, ConsoleRetention{50, 2});
  REQUIRE(again.ok());
  std::vector<ConsoleLine> next = {NodeLine(7, "systemd[1]: Started ssh.service")};
  REQUIRE((*again)->Append(next).ok());
  CHECK(next[0].boot == 4);
  std::vector<ConsoleLine> reboot = {ServedLine(7, "script: from 10.0.0.7")};
  REQUIRE((*again)->Append(reboot).ok());
  CHECK(reboot[0].boot == 5);
  CHECK((*again)->LastId() == reboot[0].id);
}

TEST_CASE("console log: its schema is numbered; a log from before the numbers keeps its lines") {
  TempDir dir;
  const std::string path = dir.path() + "/console.db";
  {
    // console.db as provisiond made it before its schema had numbers:
    // user_version 0, the tables there.
    auto old = sql::Database::Open(path, sql::Database::Mode::kReadWriteCreate);
    REQUIRE(old.ok());
    REQUIRE(
        old->Exec("CREATE TABLE console_lines (id INTEGER PRIMARY KEY, node_id INTEGER NOT "
                  "NULL, boot INTEGER NOT NULL, time INTEGER NOT NULL, source TEXT NOT NULL, "
                  "line TEXT NOT NULL);"
                  "CREATE INDEX console_by_boot ON console_lines (node_id, boot, id);"
                  "CREATE INDEX console_by_node ON console_lines (node_id, id);"
                  "INSERT INTO console_lines VALUES (41, 3, 2, 1000, 'kernel', 'Linux version');")
            .ok());
  }
  {
    auto log = ConsoleLog::Open(path);
    REQUIRE(log.ok());
    CHECK((*log)->LastId() == 41);
    auto lines = (*log)->Lines(3, 0, 0, 10);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].boot == 2);
  }
  auto db = sql::Database::Open(path, sql::Database::Mode::kReadWrite);
  REQUIRE(db.ok());
  CHECK(*db->QueryInt("PRAGMA user_version") == 1);
  // One from a newer provisiond is refused, saying so.
  REQUIRE(db->Exec("PRAGMA user_version = 9").ok());
  auto newer = ConsoleLog::Open(path);
  REQUIRE_FALSE(newer.ok());
  CHECK(newer.status().message().find("the console log (" + path + ") schema version 9 is newer") ==
        0);
}

TEST_CASE("console log: a waiter wakes on a line and on the stop") {
  auto log = ConsoleLog::Open(::prov::testing::TestDatabase());
  REQUIRE(log.ok());
  CHECK((*log)->Wait(0, 10));  // times out, not stopping
  std::vector<ConsoleLine> one = {NodeLine(1, "x")};
  REQUIRE((*log)->Append(one).ok());
  CHECK((*log)->Wait(0, 60000));  // a line is there: at once
  (*log)->WakeWaiters();
  CHECK_FALSE((*log)->Wait(one[0].id, 60000));
}

}  // namespace prov
