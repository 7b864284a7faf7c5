#include "api/events.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "api/test_fixture.h"

namespace prov {
namespace {}  // namespace

// Whether `call` (a long-poll asked to wait an hour) returned: a bounded wait
// for it, never a measure of how long it took. One that did not return is
// woken through `store` so the test fails instead of hanging.
template <typename F>
bool ReturnsBeforeItsWait(Store& store, F call) {
  auto answer = std::async(std::launch::async, std::move(call));
  if (answer.wait_for(std::chrono::seconds(60)) == std::future_status::ready) return true;
  store.WakeWaiters();
  return false;
}

TEST_CASE("api: a long-poll returns at once when the store is told to stop") {
  api_test::Fixture f;
  nlohmann::json j;
  std::atomic<bool> waiting{false};
  std::thread stopper([&] {
    while (!waiting) std::this_thread::yield();
    f.store->WakeWaiters();
  });
  CHECK(ReturnsBeforeItsWait(*f.store, [&] {
    waiting = true;
    j = f.CallJson("GET", "/api/v1/events?wait=3600");
  }));
  stopper.join();
  CHECK(j["events"].empty());
  // Later waits do not block at all.
  CHECK(ReturnsBeforeItsWait(*f.store, [&] { f.CallJson("GET", "/api/v1/events?wait=3600"); }));
}

TEST_CASE("api: the events cursor") {
  api_test::Fixture f;
  f.Add("node0", "52:54:00:00:00:01");
  auto first = f.CallJson("GET", "/api/v1/events");
  int64_t next = first["next"];
  CHECK(f.CallJson("GET", "/api/v1/events?after=" + std::to_string(next))["events"].empty());
  f.Add("node1", "52:54:00:00:00:02");
  auto later = f.CallJson("GET", "/api/v1/events?after=" + std::to_string(next));
  REQUIRE(later["events"].size() == 1);
  CHECK(later["events"][0]["node"] == "node1");

  // last=N gives the newest events; a node filter skips other nodes' events
  // and moves the cursor past them.
  auto last = f.CallJson("GET", "/api/v1/events?last=1");
  REQUIRE(last["events"].size() == 1);
  CHECK(last["events"][0]["node"] == "node1");
  auto only0 = f.CallJson("GET", "/api/v1/events?node=node0&after=" + std::to_string(next));
  CHECK(only0["events"].empty());
  auto waited = f.CallJson("GET", "/api/v1/events?node=node0&wait=1&after=" + std::to_string(next));
  CHECK(waited["events"].empty());
  CHECK(waited["next"] == later["next"]);
}

TEST_CASE("events: the long-poll is capped by max_event_wait_ms") {
  api_test::Fixture f;
  f.context.max_event_wait_ms = 0;
  HttpRequest r;
  r.query["wait"] = "3600";
  int status = 0;
  CHECK(ReturnsBeforeItsWait(*f.store, [&] { status = ListEvents(f.context, r).status; }));
  CHECK(status == 200);
}

}  // namespace prov
