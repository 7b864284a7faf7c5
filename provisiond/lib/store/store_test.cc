#include "store/store.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <thread>

#include "db/sql.h"
#include "store/migrations.h"
#include "store/testing/test_database.h"

namespace prov {
namespace {

NodeRecord MakeNode(const std::string& host, const std::string& mac) {
  NodeRecord n;
  n.hostname = host;
  n.mac = mac;
  n.state = NodeState::kEnrolled;
  return n;
}

std::string TempDb() {
  static int counter = 0;
  auto dir = std::filesystem::temp_directory_path() /
             ("provision-store-test-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return (dir / "test.db").string();
}

}  // namespace

TEST_CASE("store: a node and its transitions, each with its event") {
  auto store = Store::Open(::prov::testing::TestDatabase());
  REQUIRE(store.ok());
  NodeRecord node;
  REQUIRE((*store)
              ->Transact([&](StoreTx& tx) {
                auto r = tx.InsertNode(MakeNode("node0", "52:54:00:00:00:01"));
                if (!r.ok()) return r.status();
                node = *r;
                return Status::Ok();
              })
              .ok());
  CHECK(node.id > 0);
  CHECK(node.token.size() == 32);

  Status s = (*store)->Transact([&](StoreTx& tx) {
    return tx.Transition(node, NodeState::kBooting, "script fetched", "test");
  });
  REQUIRE(s.ok());
  // An illegal transition is refused and changes nothing.
  s = (*store)->Transact(
      [&](StoreTx& tx) { return tx.Transition(node, NodeState::kDiscovered, "", "test"); });
  CHECK(s.code() == Code::kConflict);
  CHECK(s.message().find("node0: a node cannot go from 'booting' to 'discovered'") == 0);

  auto found = (*store)->FindNode("52:54:00:00:00:01");
  REQUIRE(found.ok());
  CHECK(found->state == NodeState::kBooting);
  auto events = (*store)->ListEvents(0, found->id, 100);
  REQUIRE(events.size() == 1);
  CHECK(events[0].kind == "state");
  CHECK(events[0].detail == "enrolled -> booting: script fetched");
  CHECK(events[0].node == "node0");
}

TEST_CASE("store: a failed transaction leaves no trace") {
  auto store = Store::Open(::prov::testing::TestDatabase());
  REQUIRE(store.ok());
  Status s = (*store)->Transact([&](StoreTx& tx) {
    auto r = tx.InsertNode(MakeNode("node0", "52:54:00:00:00:01"));
    EventRecord e;
    e.kind = "x";
    REQUIRE(tx.AppendEvent(e).ok());
    // Same MAC again: the whole transaction must roll back.
    auto r2 = tx.InsertNode(MakeNode("node1", "52:54:00:00:00:01"));
    return r2.status();
  });
  CHECK(s.code() == Code::kConflict);
  CHECK(s.message() == "a node with MAC 52:54:00:00:00:01 exists already");
  CHECK((*store)->ListNodes().empty());
  CHECK((*store)->ListEvents(0, 0, 10).empty());
  CHECK((*store)->LastEventId() == 0);
}

TEST_CASE("store: CopyFrom puts back another store's content, ChangeCount sees writes") {
  auto pristine = Store::Open(::prov::testing::TestDatabase());
  auto store = Store::Open(::prov::testing::TestDatabase());
  REQUIRE((pristine.ok() && store.ok()));
  auto add = [](Store& st, const char* host, const char* mac) {
    return st.Transact([&](StoreTx& tx) {
      auto r = tx.InsertNode(MakeNode(host, mac));
      EventRecord e;
      e.kind = "x";
      Status appended = tx.AppendEvent(e);
      return r.ok() ? appended : r.status();
    });
  };
  REQUIRE(add(**pristine, "node0", "52:54:00:00:00:01").ok());
  REQUIRE((*store)->CopyFrom(**pristine).ok());
  const int64_t clean = (*store)->ChangeCount();
  (void)(*store)->ListNodes();
  CHECK((*store)->ChangeCount() == clean);  // a read is no change
  REQUIRE(add(**store, "node1", "52:54:00:00:00:02").ok());
  CHECK((*store)->ChangeCount() != clean);
  CHECK((*store)->ListNodes().size() == 2);
  CHECK((*store)->LastEventId() == 2);

  REQUIRE((*store)->CopyFrom(**pristine).ok());
  CHECK((*store)->ListNodes().size() == 1);
  CHECK((*store)->FindNode("node0").ok());
  CHECK_FALSE((*store)->FindNode("node1").ok());
  CHECK((*store)->LastEventId() == 1);
  // The statements prepared before the copy still work, and so do writes.
  REQUIRE(add(**store, "node1", "52:54:00:00:00:02").ok());
  CHECK((*store)->ListNodes().size() == 2);
  CHECK_FALSE((*store)->CopyFrom(**store).ok());
}

TEST_CASE("store: duplicate hostnames are refused with their name") {
  auto store = Store::Open(::prov::testing::TestDatabase());
  REQUIRE(store.ok());
  auto add = [&](const char* host, const char* mac) {
    return (*store)->Transact(
        [&](StoreTx& tx) { return tx.InsertNode(MakeNode(host, mac)).status(); });
  };
  CHECK(add("node0", "52:54:00:00:00:01").ok());
  Status s = add("node0", "52:54:00:00:00:02");
  CHECK(s.message() == "a node named 'node0' exists already");
}

TEST_CASE("store: filters, counts and the event cursor") {
  auto store = Store::Open(::prov::testing::TestDatabase());
  REQUIRE(store.ok());
  for (int i = 0; i < 5; ++i) {
    char mac[32];
    snprintf(mac, sizeof mac, "52:54:00:00:00:%02x", i);
    REQUIRE((*store)
                ->Transact([&](StoreTx& tx) {
                  NodeRecord n = MakeNode("node" + std::to_string(i), mac);
                  n.profile_version = i < 2 ? "v0.1" : "v0.2";
                  auto r = tx.InsertNode(n);
                  if (!r.ok()) return r.status();
                  EventRecord e{0, 0, r->id, r->name(), "enrolled", "", "test"};
                  return tx.AppendEvent(e);
                })
                .ok());
  }
  CHECK((*store)->ListNodes().size() == 5);
  NodeFilter f;
  f.profile_version = "v0.1";
  CHECK((*store)->ListNodes(f).size() == 2);
  f = {};
  f.state = NodeState::kReady;
  CHECK((*store)->ListNodes(f).empty());
  CHECK((*store)->CountByState()[NodeState::kEnrolled] == 5);
  auto first = (*store)->ListEvents(0, 0, 2);
  REQUIRE(first.size() == 2);
  auto rest = (*store)->ListEvents(first.back().id, 0, 100);
  CHECK(rest.size() == 3);
  CHECK((*store)->LastEventId() == rest.back().id);
}

TEST_CASE("store: migrations from an empty database and from every earlier version") {
  const int latest = static_cast<int>(Migrations().size());
  REQUIRE(latest >= 2);
  for (int from = 0; from <= latest; ++from) {
    CAPTURE(from);
    std::string path = TempDb();
    {
      auto db = sql::Database::Open(path, sql::Database::Mode::kReadWriteCreate);
      REQUIRE(db.ok());
      REQUIRE(ApplyMigrations(*db, from).ok());
      if (from >= 1) {
        // Rows written by an older provisiond must survive the upgrade.
        REQUIRE(db->Exec("INSERT INTO nodes (mac, hostname, state, created, updated) "
                         "VALUES ('52:54:00:00:00:01', 'old0', 'ready', 1, 1);"
                         "INSERT INTO events (time, node_id, node, kind) "
                         "VALUES (1, 1, 'old0', 'state');"
                         "INSERT INTO events (time, node_id, node, kind, detail) "
                         "VALUES (2, 1, 'old0', 'boot', 'kernel: lab@1');"
                         "INSERT INTO applied_profiles (version, sha256, time) "
                         "VALUES ('v0.1', 'abc', 1);")
                    .ok());
      }
    }  // closed before the store opens it
    auto store = Store::Open(path);
    REQUIRE(store.ok());
    CHECK((*store)->schema_version() == latest);
    if (from >= 1) {
      auto n = (*store)->FindNode("old0");
      REQUIRE(n.ok());
      CHECK(n->state == NodeState::kReady);
      if (from == 1) CHECK(n->token.size() == 32);  // 002 gives old nodes a token
      auto events = (*store)->ListEvents(0, 0, 10);
      REQUIRE(events.size() == 2);
      CHECK_FALSE(events[0].stage);
      // 010 gives older boot events their stage, from the front of their text.
      if (from < 10) CHECK(events[1].stage == BootStage::kKernel);
      REQUIRE((*store)->CurrentProfile().has_value());
      CHECK((*store)->CurrentProfile()->version == "v0.1");
    }
    // Opening again is a no-op.
    store = Result<std::unique_ptr<Store>>(Status::Internal("reset"));
    auto again = Store::Open(path);
    REQUIRE(again.ok());
    CHECK((*again)->schema_version() == latest);
    std::filesystem::remove_all(std::filesystem::path(path).parent_path());
  }
}

TEST_CASE("store: a database from a newer provisiond is refused") {
  std::string path = TempDb();
  {
    auto db = sql::Database::Open(path, sql::Database::Mode::kReadWriteCreate);
    REQUIRE(db.ok());
    REQUIRE(db->Exec("PRAGMA user_version = 999").ok());
  }
  auto store = Store::Open(path);
  REQUIRE_FALSE(store.ok());
  CHECK(store.status().message().find("newer than this provisiond knows") != std::string::npos);
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

TEST_CASE("store: the address book moves only when an address entry changes") {
  auto opened = Store::Open(::prov::testing::TestDatabase());
  REQUIRE(opened.ok());
  Store& store = **opened;
  auto insert = [&](NodeRecord n) {
    REQUIRE(store.Transact([&](StoreTx& tx) { return tx.InsertNode(n).status(); }).ok());
  };
  NodeRecord listed = MakeNode("n0", "52:54:00:00:00:01");
  listed.ip = "10.99.0.10";
  insert(listed);
  NodeRecord discovered = MakeNode("", "52:54:00:00:00:02");
  discovered.ip = "10.99.0.11", discovered.state = NodeState::kDiscovered;
  insert(discovered);
  NodeRecord retired = MakeNode("n2", "52:54:00:00:00:03");
  retired.ip = "10.99.0.12", retired.state = NodeState::kRetired;
  insert(retired);
  insert(MakeNode("n3", "52:54:00:00:00:04"));  // no address yet

  auto book = store.Addresses();
  REQUIRE(book->entries.size() == 1);
  CHECK(book->entries[0].mac == "52:54:00:00:00:01");
  CHECK(book->entries[0].ip == "10.99.0.10");
  CHECK(book->entries[0].hostname == "n0");
  CHECK(store.Addresses() == book);  // nothing moved: the same book, not read again

  auto update = [&](const std::string& name, const std::function<void(NodeRecord&)>& change) {
    REQUIRE(store
                .Transact([&](StoreTx& tx) {
                  auto n = tx.FindNode(name);
                  if (!n.ok()) return n.status();
                  change(*n);
                  return tx.UpdateNode(*n);
                })
                .ok());
  };
  // What boot stages and phone-homes write does not move it...
  const int64_t before = store.AddressesVersion();
  update("n0", [](NodeRecord& n) {
    n.facts = R"({"cpu":{"count":4}})", n.stage = BootStage::kKernel, n.last_seen_ms = 5;
    n.state = NodeState::kBooting;
  });
  CHECK(store.AddressesVersion() == before);
  CHECK(store.Addresses() == book);
  // ...an address, a hostname or leaving the listed states does.
  update("n3", [](NodeRecord& n) { n.ip = "10.99.0.13"; });
  CHECK(store.AddressesVersion() > before);
  book = store.Addresses();
  CHECK(book->entries.size() == 2);
  // Which loader a node's UEFI firmware gets (migration 008) has its own
  // counter: it moves with the node's choice, its profile, or a profile
  // applied, not with what boots write.
  int64_t loaders = store.BootLoadersVersion();
  update("n0", [](NodeRecord& n) { n.stage = BootStage::kInitrd, n.last_seen_ms = 6; });
  CHECK(store.BootLoadersVersion() == loaders);
  update("n0", [](NodeRecord& n) { n.uefi_loader = "ipxe"; });
  CHECK(store.FindNode("n0")->uefi_loader == "ipxe");
  CHECK(store.BootLoadersVersion() > loaders);
  loaders = store.BootLoadersVersion();
  update("n0", [](NodeRecord& n) { n.profile_version = "v9"; });
  CHECK(store.BootLoadersVersion() > loaders);
  loaders = store.BootLoadersVersion();
  REQUIRE(store
              .Transact([](StoreTx& tx) {
                AppliedProfile a{0, "v9", std::string(64, 'a'), 0, "t"};
                return tx.InsertAppliedProfile(a);
              })
              .ok());
  CHECK(store.BootLoadersVersion() > loaders);
  update("n0", [](NodeRecord& n) { n.state = NodeState::kRetired; });
  CHECK(store.Addresses()->entries.size() == 1);
  CHECK(store.Addresses()->entries[0].hostname == "n3");
  auto by_ip = store.FindNodeByIp("10.99.0.13");
  REQUIRE(by_ip.ok());
  CHECK(by_ip->hostname == "n3");
  CHECK_FALSE(store.FindNodeByIp("10.99.0.10").ok());  // retired
}

TEST_CASE("store: retention keeps the newest events and runs, not more than 256 over") {
  auto opened = Store::Open(::prov::testing::TestDatabase());
  REQUIRE(opened.ok());
  Store& store = **opened;
  store.SetRetention(300, 20);
  for (int i = 0; i < 2000; ++i) {
    EventRecord e{0, 0, 0, "", "noise", "event " + std::to_string(i), "test"};
    REQUIRE(store.AppendEvent(e).ok());
  }
  auto newest = store.LastEvents(0, 1);
  REQUIRE(newest.size() == 1);
  CHECK(newest[0].detail == "event 1999");
  auto kept = store.ListEvents(0, 0, 100000);
  CHECK(kept.size() >= 300);
  CHECK(kept.size() <= 300 + 256);
  CHECK(kept.front().detail != "event 0");

  NodeRecord n = MakeNode("n0", "52:54:00:00:00:01");
  REQUIRE(store.Transact([&](StoreTx& tx) { return tx.InsertNode(n).status(); }).ok());
  auto node = store.FindNode("n0");
  int64_t running_id = 0;
  for (int i = 0; i < 600; ++i) {
    RunRecord run;
    run.node_id = node->id, run.node = "n0", run.kind = "cmd", run.what = "true";
    run.status = i == 0 ? RunStatus::kRunning : RunStatus::kOk;
    REQUIRE(store
                .Transact([&](StoreTx& tx) {
                  Status s = tx.InsertRun(run);
                  if (!s.ok()) return s;
                  RunTaskRecord t;
                  t.run_id = run.id, t.task = "t", t.status = TaskStatus::kOk,
                  t.stdout_tail = "out";
                  return tx.AppendRunTask(t);
                })
                .ok());
    if (i == 0) running_id = run.id;
  }
  RunFilter all;
  all.limit = 100000;
  auto runs = store.ListRuns(all);
  CHECK(runs.size() >= 20);
  CHECK(runs.size() <= 20 + 256 + 1);
  CHECK(store.GetRun(running_id).ok());            // a running run stays
  CHECK_FALSE(store.GetRun(running_id + 1).ok());  // an old finished one is gone
  CHECK(store.RunTasks(running_id + 1).empty());   // with its tasks
}

}  // namespace prov

namespace prov {

TEST_CASE("store: the checkpointer copies the write-ahead log back into the database file") {
  const std::string path = TempDb();
  auto store = Store::Open(path);
  REQUIRE_MESSAGE(store.ok(), store.status().message());
  // About 7 MB of events: the log passes the checkpointer's 1,000 pages.
  const std::string detail(5000, 'x');
  for (int i = 0; i < 1500; ++i) {
    EventRecord e{.kind = "test", .detail = detail, .who = "test"};
    REQUIRE((*store)->AppendEvent(e).ok());
  }
  // The checkpoint runs on its own thread: a bounded wait for the file to
  // hold the events (it held 4 KiB until the store closed when the
  // checkpoint connection had never read the database).
  std::uintmax_t size = 0;
  for (int i = 0; i < 300 && size < 4'000'000; ++i) {
    size = std::filesystem::file_size(path);
    if (size < 4'000'000) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::error_code ec;
  const auto log = std::filesystem::file_size(path + "-wal", ec);
  CHECK_MESSAGE(size >= 4'000'000, "database file " << size << " bytes, log " << log << " bytes");
  store->reset();
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

}  // namespace prov
