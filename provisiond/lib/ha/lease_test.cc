// The control lease on a real PostgreSQL (store.postgresql runs these;
// without PROVISIOND_TEST_POSTGRES they skip, but the timings' relations).
#include "ha/lease.h"

#include <doctest/doctest.h>

#include <chrono>
#include <future>
#include <thread>

#include "store/store.h"
#include "store/testing/test_database.h"

namespace prov {

TEST_CASE("control lease: the timings keep their relations") {
  LeaseSettings s;
  CHECK(CheckLeaseTimings(s).ok());  // the defaults: 10 s, 2 s, 3 s
  s.lease_ms = 7000;
  CHECK(CheckLeaseTimings(s).ok());
  s.lease_ms = 6999;
  Status tight = CheckLeaseTimings(s);
  CHECK(tight.message().find("at least 2 x control.renew_ms + control.stop_margin_ms (7000)") !=
        std::string::npos);
  s = LeaseSettings{};
  s.stop_margin_ms = 500;
  CHECK(CheckLeaseTimings(s).message().find("at least 1000") != std::string::npos);
  s.stop_margin_ms = 3000;
  s.database = "/var/lib/provisiond/provisiond.db";
  CHECK(ControlLease::Open(s).status().message().find("needs a PostgreSQL database") !=
        std::string::npos);
}

TEST_CASE("control lease: one holder; a lapsed lease taken over; a lapsed holder fenced") {
  if (!testing::OnPostgres()) return;
  const std::string db = testing::TestDatabase();
  REQUIRE(Store::Open(db).ok());  // migrated
  auto settings = [&](const char* holder) {
    return LeaseSettings{.database = db,
                         .holder = holder,
                         .lease_ms = 1500,
                         .renew_ms = 200,
                         .stop_margin_ms = 1000};
  };
  auto a = ControlLease::Open(settings("cn1"));
  auto b = ControlLease::Open(settings("cn2"));
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK((*a)->Read()->holder.empty());
  REQUIRE(*(*a)->TryTake());
  CHECK_FALSE(*(*b)->TryTake());
  const LeaseState first = (*a)->tenure();
  CHECK(first.holder == "cn1");
  CHECK(first.epoch == 1);
  CHECK(first.expires_ms - first.since_ms == 1500);
  // A renewal keeps the tenure's start and epoch, moves the expiry.
  REQUIRE(*(*a)->TryTake());
  CHECK((*a)->tenure().since_ms == first.since_ms);
  CHECK((*a)->tenure().epoch == 1);
  CHECK((*b)->Read()->holder == "cn1");

  // cn1 stops renewing: cn2 takes over once the database's clock passes the
  // expiry, not before.
  bool taken = false;
  for (int i = 0; i < 100 && !taken; ++i) {
    auto state = (*b)->Read();
    REQUIRE(state.ok());
    taken = *(*b)->TryTake();
    if (!taken) CHECK(state->now_ms <= state->expires_ms + 50);
    if (!taken) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  REQUIRE(taken);
  CHECK((*b)->tenure().epoch == 2);
  CHECK((*b)->tenure().since_ms > first.since_ms);
  CHECK_FALSE(*(*a)->TryTake());  // the old holder cannot renew
  CHECK((*a)->Read()->holder == "cn2");

  // cn1, asked to keep a lease it lost, is fenced by its watchdog: its last
  // renewal is older than lease_ms - stop_margin_ms.
  std::promise<std::string> fenced;
  (*a)->KeepActive([&](const std::string& why) { fenced.set_value(why); });
  auto why = fenced.get_future();
  REQUIRE(why.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(why.get().find("no renewal of the control lease for 500 ms") != std::string::npos);
  // cn2 keeps it, renewed from its thread.
  std::atomic<bool> b_fenced{false};
  (*b)->KeepActive([&](const std::string&) { b_fenced = true; });
  const int64_t expires = (*b)->tenure().expires_ms;
  for (int i = 0; i < 50 && (*b)->tenure().expires_ms == expires; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK((*b)->tenure().expires_ms > expires);
  CHECK_FALSE(b_fenced);
  CHECK((*b)->tenure().epoch == 2);
}

}  // namespace prov
