#include "store/node_cache.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "store/store.h"
#include "store/testing/test_database.h"

namespace prov {
namespace {

NodeRecord CacheTestNode(const std::string& host, const std::string& mac, const std::string& ip) {
  NodeRecord n;
  n.hostname = host;
  n.mac = mac;
  n.ip = ip;
  n.state = NodeState::kEnrolled;
  return n;
}

// Enrolls one node in its own transaction.
NodeRecord EnrollCacheTestNode(Store& store, const std::string& host, const std::string& mac) {
  NodeRecord node;
  Status s = store.Transact([&](StoreTx& tx) {
    auto r = tx.InsertNode(CacheTestNode(host, mac, ""));
    if (!r.ok()) return r.status();
    node = *r;
    return Status::Ok();
  });
  REQUIRE(s.ok());
  return node;
}

// What SQLite holds, read inside a transaction (not from the cache).
std::vector<NodeRecord> SqlNodes(Store& store) {
  std::vector<NodeRecord> out;
  store.Read([&](StoreTx& tx) { out = tx.ListNodes(); });
  return out;
}

void CheckCacheMatchesSql(Store& store) {
  auto sql = SqlNodes(store);
  auto cached = store.ListNodes();
  REQUIRE(sql.size() == cached.size());
  for (size_t i = 0; i < sql.size(); ++i) {
    CHECK(sql[i].id == cached[i].id);
    CHECK(sql[i].hostname == cached[i].hostname);
    CHECK(sql[i].mac == cached[i].mac);
    CHECK(sql[i].ip == cached[i].ip);
    CHECK(sql[i].state == cached[i].state);
    CHECK(sql[i].stage == cached[i].stage);
    CHECK(sql[i].reason == cached[i].reason);
    CHECK(sql[i].power == cached[i].power);
    CHECK(sql[i].updated_ms == cached[i].updated_ms);
  }
}

int64_t CountEvents(Store& store) {
  return static_cast<int64_t>(store.ListEvents(0, 0, 1000000).size());
}

}  // namespace

TEST_CASE("node cache: lookups follow committed writes and never rolled-back ones") {
  auto opened = Store::Open(::prov::testing::TestDatabase());
  REQUIRE(opened.ok());
  Store& store = **opened;
  NodeRecord a, b;
  REQUIRE(store
              .Transact([&](StoreTx& tx) {
                auto r = tx.InsertNode(CacheTestNode("a1", "52:54:00:00:0a:01", "10.0.0.1"));
                if (!r.ok()) return r.status();
                a = *r;
                auto s = tx.InsertNode(CacheTestNode("", "52:54:00:00:0a:02", ""));
                if (!s.ok()) return s.status();
                b = *s;
                return Status::Ok();
              })
              .ok());
  const int64_t v0 = store.NodesVersion();
  REQUIRE(store.FindNode("a1").ok());
  CHECK(store.FindNode("52:54:00:00:0a:01")->id == a.id);
  CHECK(store.FindNode("52:54:00:00:0a:02")->hostname.empty());
  // SQLite's defaults are what the cache holds (power "{}" although none was given).
  CHECK(store.FindNode("a1")->power == "{}");
  CHECK(store.FindNodeByIp("10.0.0.1")->id == a.id);

  // Renamed: the old name is gone, the new one and the MAC find it.
  REQUIRE(store
              .Transact([&](StoreTx& tx) {
                a.hostname = "a2";
                a.ip = "10.0.0.2";
                return tx.UpdateNode(a);
              })
              .ok());
  CHECK(store.NodesVersion() > v0);
  CHECK(store.FindNode("a1").status().code() == Code::kNotFound);
  CHECK(store.FindNode("a2")->mac == "52:54:00:00:0a:01");
  CHECK(store.FindNodeByIp("10.0.0.1").status().code() == Code::kNotFound);
  CHECK(store.FindNodeByIp("10.0.0.2")->id == a.id);

  // A transaction that writes and then fails leaves the cache as it was.
  const int64_t v1 = store.NodesVersion();
  Status failed = store.Transact([&](StoreTx& tx) {
    NodeRecord changed = a;
    changed.hostname = "a3";
    Status s = tx.UpdateNode(changed);
    if (!s.ok()) return s;
    return Status::Invalid("changed my mind");
  });
  CHECK(failed.code() == Code::kInvalid);
  CHECK(store.NodesVersion() == v1);
  CHECK(store.FindNode("a3").status().code() == Code::kNotFound);
  CHECK(store.FindNode("a2").ok());

  // Retired nodes do not hold their address; deleted ones are gone.
  REQUIRE(
      store.Transact([&](StoreTx& tx) { return tx.Transition(a, NodeState::kRetired, "", "t"); })
          .ok());
  CHECK(store.FindNodeByIp("10.0.0.2").status().code() == Code::kNotFound);
  REQUIRE(store.Transact([&](StoreTx& tx) { return tx.DeleteNode(b.id); }).ok());
  CHECK(store.FindNode("52:54:00:00:0a:02").status().code() == Code::kNotFound);
  CheckCacheMatchesSql(store);
}

TEST_CASE("node cache: many nodes on one address (the lowest id not retired holds it)") {
  // 2,000 nodes share 127.0.0.1, as simulated nodes on loopback do; each
  // change to one of them (load_bench: a hello each) touches only its own
  // entry (it walked all of them once: 53% of provisiond's CPU at 10,000).
  NodeCache cache;
  std::vector<NodeRecord> nodes;
  for (int i = 1; i <= 2000; ++i) {
    auto n = CacheTestNode("n" + std::to_string(i),
                           "52:54:00:00:" + std::to_string(i / 100) + ":" + std::to_string(i % 100),
                           "127.0.0.1");
    n.id = i;
    nodes.push_back(n);
  }
  cache.Reset(nodes);
  REQUIRE(cache.ByIp("127.0.0.1"));
  CHECK(cache.ByIp("127.0.0.1")->id == 1);
  nodes[0].state = NodeState::kRetired;
  cache.Put(1, nodes[0]);
  CHECK(cache.ByIp("127.0.0.1")->id == 2);
  cache.Put(2, std::nullopt);
  CHECK(cache.ByIp("127.0.0.1")->id == 3);
  nodes[2].ip = "10.0.0.3";
  cache.Put(3, nodes[2]);
  CHECK(cache.ByIp("127.0.0.1")->id == 4);
  CHECK(cache.ByIp("10.0.0.3")->id == 3);
  for (int i = 4; i <= 2000; ++i) cache.Put(i, std::nullopt);
  CHECK_FALSE(cache.ByIp("127.0.0.1"));
  nodes[0].state = NodeState::kBooted;
  cache.Put(1, nodes[0]);
  CHECK(cache.ByIp("127.0.0.1")->id == 1);
  CHECK(cache.size() == 2);
}

TEST_CASE("node cache: the list is shared until a node changes, sorted like the SQL list") {
  auto opened = Store::Open(::prov::testing::TestDatabase());
  REQUIRE(opened.ok());
  Store& store = **opened;
  REQUIRE(store
              .Transact([&](StoreTx& tx) {
                int i = 0;
                for (const char* h : {"n3", "n1", "", "n2"}) {
                  char mac[32];
                  snprintf(mac, sizeof mac, "52:54:00:00:0b:%02x", 0x40 - ++i);
                  auto r = tx.InsertNode(CacheTestNode(h, mac, ""));
                  if (!r.ok()) return r.status();
                }
                return Status::Ok();
              })
              .ok());
  auto first = store.NodeList();
  CHECK(store.NodeList() == first);  // the same snapshot, not a new one
  REQUIRE(first->nodes.size() == 4);
  CHECK(first->nodes[0]->hostname == "n1");
  CHECK(first->nodes[2]->hostname == "n3");
  CHECK(first->nodes[3]->hostname.empty());
  CheckCacheMatchesSql(store);
  auto n2 = *store.FindNode("n2");
  REQUIRE(
      store.Transact([&](StoreTx& tx) { return tx.Transition(n2, NodeState::kBooting, "", "t"); })
          .ok());
  auto second = store.NodeList();
  CHECK(second != first);
  // Only the changed node has a new record; the others are shared.
  CHECK(second->nodes[0] == first->nodes[0]);
  CHECK(second->nodes[1] != first->nodes[1]);
  CHECK(second->nodes[1]->state == NodeState::kBooting);
  CHECK(first->nodes[1]->state == NodeState::kEnrolled);  // an old snapshot stays as it was
}

TEST_CASE("node cache: reopened, the store reads every node back from the file") {
  auto dir = std::filesystem::temp_directory_path() /
             ("provision-node-cache-test-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "test.db").string();
  {
    auto store = Store::Open(path);
    REQUIRE(store.ok());
    REQUIRE((*store)
                ->Transact([&](StoreTx& tx) {
                  for (int i = 0; i < 50; ++i) {
                    char mac[32];
                    snprintf(mac, sizeof mac, "52:54:00:00:0c:%02x", i);
                    auto r = tx.InsertNode(CacheTestNode("r" + std::to_string(i), mac, ""));
                    if (!r.ok()) return r.status();
                  }
                  return Status::Ok();
                })
                .ok());
  }
  auto store = Store::Open(path);
  REQUIRE(store.ok());
  CHECK((*store)->ListNodes().size() == 50);
  CHECK((*store)->FindNode("52:54:00:00:0c:31")->hostname == "r49");
  CheckCacheMatchesSql(**store);
  std::filesystem::remove_all(dir);
}

TEST_CASE("store: queued transactions commit together; one's failure rolls back only its own") {
  auto opened = Store::Open(::prov::testing::TestDatabase());
  REQUIRE(opened.ok());
  Store& store = **opened;
  const NodeRecord node = EnrollCacheTestNode(store, "g0", "52:54:00:00:0d:01");
  const auto before = store.TransactStats();
  const int64_t events_before = CountEvents(store);

  // The first transaction holds its batch until three more are queued behind
  // it: they are then committed as one batch by the first of them.
  auto append = [&](const std::string& what, bool fail, bool raise) {
    return [&store, &node, what, fail, raise](StoreTx& tx) -> Status {
      EventRecord e{0, 0, node.id, node.name(), "test", what, "test"};
      Status s = tx.AppendEvent(e);
      if (!s.ok()) return s;
      NodeRecord n = *tx.NodeById(node.id);
      n.reason = what;
      s = tx.UpdateNode(n);
      if (!s.ok()) return s;
      if (raise) throw std::runtime_error("thrown by " + what);
      return fail ? Status::Invalid(what + " fails") : Status::Ok();
    };
  };
  std::atomic<bool> release{false};
  Status first_status, ok_status, failed_status, thrown_status;
  std::string thrown;
  std::thread first([&] {
    first_status = store.Transact([&](StoreTx& tx) {
      while (!release.load()) std::this_thread::yield();
      return append("first", false, false)(tx);
    });
  });
  while (store.QueuedTransactions() < 1) std::this_thread::yield();
  std::thread ok([&] { ok_status = store.Transact(append("ok", false, false)); });
  while (store.QueuedTransactions() < 2) std::this_thread::yield();
  std::thread failing([&] { failed_status = store.Transact(append("failing", true, false)); });
  while (store.QueuedTransactions() < 3) std::this_thread::yield();
  std::thread raising([&] {
    try {
      thrown_status = store.Transact(append("raising", false, true));
    } catch (const std::runtime_error& e) {
      thrown = e.what();
    }
  });
  while (store.QueuedTransactions() < 4) std::this_thread::yield();
  release = true;
  for (auto* t : {&first, &ok, &failing, &raising}) t->join();

  CHECK(first_status.ok());
  CHECK(ok_status.ok());
  CHECK(failed_status.message() == "failing fails");
  CHECK(thrown == "thrown by raising");
  const auto after = store.TransactStats();
  CHECK(after.transactions - before.transactions == 4);
  CHECK(after.commits - before.commits == 2);  // "first" alone, then the other three at once
  // Only the two that succeeded left events, and the node is as "ok" left it.
  auto events = store.ListEvents(0, 0, 1000000);
  CHECK(CountEvents(store) == events_before + 2);
  CHECK(events.back().detail == "ok");
  CHECK(store.FindNode("g0")->reason == "ok");
  CHECK(store.LastEventId() == events.back().id);
  CheckCacheMatchesSql(store);
}

TEST_CASE("store: many threads writing at once lose nothing, and the cache agrees with SQLite") {
  auto opened = Store::Open(::prov::testing::TestDatabase());
  REQUIRE(opened.ok());
  Store& store = **opened;
  constexpr int kThreads = 8, kEach = 100;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      char mac[32];
      snprintf(mac, sizeof mac, "52:54:00:00:0e:%02x", t);
      const NodeRecord mine = EnrollCacheTestNode(store, "m" + std::to_string(t), mac);
      Status s;
      for (int i = 0; i < kEach; ++i) {
        s = store.Transact([&](StoreTx& tx) -> Status {
          NodeRecord n = *tx.NodeById(mine.id);
          n.reason = "step" + std::to_string(i);
          if (Status u = tx.UpdateNode(n); !u.ok()) return u;
          EventRecord e{0, 0, n.id, n.name(), "boot", n.reason, "test"};
          if (Status a = tx.AppendEvent(e); !a.ok()) return a;
          // Every tenth fails after writing: its writes must vanish.
          return i % 10 == 9 ? Status::Invalid("no") : Status::Ok();
        });
        if (!s.ok() && s.message() != "no") ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(failures == 0);
  CHECK(CountEvents(store) == kThreads * (kEach - kEach / 10));
  for (int t = 0; t < kThreads; ++t)
    CHECK(store.FindNode("m" + std::to_string(t))->reason == "step98");
  CheckCacheMatchesSql(store);
}

}  // namespace prov
