#include "store/state_history.h"
#include "store/testing/test_database.h"

#include <doctest/doctest.h>

#include <string>

namespace prov {
namespace {

using S = NodeState;

EventRecord Ev(int64_t t, std::string node, std::string kind, std::string detail) {
  return {0, t, 1, std::move(node), std::move(kind), std::move(detail), "test"};
}

std::vector<int64_t> Row(const StateSeries& s, NodeState state) {
  return s.counts.at(state);
}

}  // namespace

TEST_CASE("history: state counts: the changes the events record") {
  auto changes = StateChangesOf({
      Ev(1, "n0", "enrolled", "mac 52:54:00:00:00:01"),
      Ev(2, "52:54:00:00:00:02", "discovered", "unknown MAC seen at dhcp"),
      Ev(3, "n0", "state", "enrolled -> booting: dhcp from 52:54:00:00:00:01"),
      Ev(4, "n0", "boot", "kernel: lab@1"),
      Ev(5, "n0", "state", "booting -> booted"),  // no detail
      Ev(6, "n0", "state", "failed: an older format"),
      Ev(7, "n0", "state", "booted -> nonsense: x"),
      Ev(8, "n0", "purged", "removed from the inventory (mac 52:54:00:00:00:01)"),
      Ev(9, "n9", "purged", "removed from the inventory (mac 52:54:00:00:00:09)"),
  });
  REQUIRE(changes.size() == 5);
  CHECK((!changes[0].from && changes[0].to == S::kEnrolled));
  CHECK((!changes[1].from && changes[1].to == S::kDiscovered));
  CHECK((changes[2].from == S::kEnrolled && changes[2].to == S::kBooting));
  CHECK((changes[3].from == S::kBooting && changes[3].to == S::kBooted));
  CHECK(changes[3].time_ms == 5);
  // n0 was purged from booted; n9's state is not in the events: skipped.
  CHECK((changes[4].from == S::kBooted && !changes[4].to));
}

TEST_CASE("history: state counts: counts over time, walked back from now") {
  // Now: 2 ready, 1 failed. Over 0..100: n0 enrolled at 5, booting at 15,
  // ready at 25; n1 enrolled at 5, booting at 45, failed at 55; n2 enrolled
  // at 65, booting at 70, ready at 95.
  std::vector<StateChange> changes = {
      {5, std::nullopt, S::kEnrolled},  {15, S::kEnrolled, S::kBooting},
      {25, S::kBooting, S::kReady},     {5, std::nullopt, S::kEnrolled},
      {45, S::kEnrolled, S::kBooting},  {55, S::kBooting, S::kFailed},
      {65, std::nullopt, S::kEnrolled}, {70, S::kEnrolled, S::kBooting},
      {95, S::kBooting, S::kReady},
  };
  auto s = CountsOverTime({{S::kReady, 2}, {S::kFailed, 1}}, changes, 0, 100, 10);
  CHECK(s.since_ms == 0);
  CHECK(s.step_ms == 10);
  // at:                                  0  10 20 30 40 50 60 70 80 90 100
  CHECK(Row(s, S::kEnrolled) == std::vector<int64_t>{0, 2, 1, 1, 1, 0, 0, 0, 0, 0, 0});
  CHECK(Row(s, S::kBooting) == std::vector<int64_t>{0, 0, 1, 0, 0, 1, 0, 1, 1, 1, 0});
  CHECK(Row(s, S::kReady) == std::vector<int64_t>{0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 2});
  CHECK(Row(s, S::kFailed) == std::vector<int64_t>{0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1});
  CHECK(Row(s, S::kRetired) == std::vector<int64_t>(11, 0));
  CHECK(s.counts.size() == AllNodeStates().size());

  // A history cut short (a change whose node the counts do not hold) stays
  // at 0 rather than going below.
  auto cut = CountsOverTime({{S::kReady, 0}}, {{50, std::nullopt, S::kReady}}, 0, 100, 2);
  CHECK(Row(cut, S::kReady) == std::vector<int64_t>{0, 0, 0});
}

TEST_CASE("history: state counts: read from the store") {
  auto store = std::move(*Store::Open(::prov::testing::TestDatabase()));
  const int64_t now = NowMs();
  const int64_t hour = 3600 * 1000;
  REQUIRE(store
              ->Transact([&](StoreTx& tx) -> Status {
                for (int i = 0; i < 3; ++i) {
                  NodeRecord n;
                  n.hostname = "n" + std::to_string(i);
                  n.mac = "52:54:00:00:00:0" + std::to_string(i);
                  auto in = tx.InsertNode(n);
                  if (!in.ok()) return in.status();
                  EventRecord e{0, now - 5 * hour, in->id, n.hostname, "enrolled", "mac", "t"};
                  if (Status s = tx.AppendEvent(e); !s.ok()) return s;
                }
                return Status::Ok();
              })
              .ok());
  // n0 starts to boot now.
  REQUIRE(store
              ->Transact([&](StoreTx& tx) -> Status {
                auto n = tx.FindNode("n0");
                if (!n.ok()) return n.status();
                return tx.Transition(*n, S::kBooting, "dhcp", "boot");
              })
              .ok());
  auto h = ReadStateHistory(*store, now - 6 * hour, 6, 1000);
  CHECK(h.events_read == 4);
  CHECK(h.last_event == 4);
  CHECK(h.complete_since_ms == now - 6 * hour);
  CHECK(Row(h.series, S::kEnrolled) == std::vector<int64_t>{0, 3, 3, 3, 3, 3, 2});
  CHECK(Row(h.series, S::kBooting) == std::vector<int64_t>{0, 0, 0, 0, 0, 0, 1});

  // At most 2 events read: the newest two (n0's transition and n2's
  // enrollment); the series is whole only from the oldest of them.
  auto cut = ReadStateHistory(*store, now - 6 * hour, 6, 2);
  CHECK(cut.events_read == 2);
  CHECK(cut.complete_since_ms == now - 5 * hour);
}

}  // namespace prov
