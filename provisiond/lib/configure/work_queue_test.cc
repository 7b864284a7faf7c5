#include "configure/work_queue.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace prov {
namespace {

using namespace std::chrono_literals;

// Holds jobs until opened.
class Gate {
 public:
  void Wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return open_; });
  }
  void Open() {
    {
      std::lock_guard lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

// Polls `done` for up to 10 s.
template <typename F>
bool Eventually(F done) {
  auto until = std::chrono::steady_clock::now() + 10s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

}  // namespace

TEST_CASE("work queue: every job runs, never more at once than the workers") {
  WorkQueue queue(3);
  std::atomic<int> ran{0}, running{0}, most{0};
  for (int i = 0; i < 20; ++i)
    CHECK(queue.Submit([&] {
      int now = ++running;
      int seen = most;
      while (now > seen && !most.compare_exchange_weak(seen, now)) {
      }
      std::this_thread::sleep_for(2ms);
      --running;
      ++ran;
    }));
  REQUIRE(Eventually([&] { return queue.active() == 0; }));
  CHECK(ran == 20);
  CHECK(most <= 3);
  CHECK(most >= 2);  // they did run side by side
  CHECK(queue.workers() == 3);
}

TEST_CASE("work queue: workers start only when every one is busy") {
  WorkQueue queue(8);
  CHECK(queue.workers() == 0);  // an idle queue holds no thread
  for (int i = 0; i < 3; ++i) {
    std::atomic<bool> done{false};
    queue.Submit([&] { done = true; });
    REQUIRE(Eventually([&] { return done && queue.active() == 0; }));
  }
  CHECK(queue.workers() == 1);  // one at a time: one worker did them all
}

TEST_CASE("work queue: active counts jobs waiting and running") {
  WorkQueue queue(1);
  Gate gate;
  std::atomic<bool> started{false};
  queue.Submit([&] {
    started = true;
    gate.Wait();
  });
  queue.Submit([] {});
  REQUIRE(Eventually([&] { return started.load(); }));
  CHECK(queue.active() == 2);
  gate.Open();
  CHECK(Eventually([&] { return queue.active() == 0; }));
}

TEST_CASE("work queue: Close drops waiting jobs and refuses new ones; Join waits") {
  WorkQueue queue(1);
  Gate gate;
  std::atomic<bool> started{false}, first_done{false}, second_ran{false};
  queue.Submit([&] {
    started = true;
    gate.Wait();
    std::this_thread::sleep_for(20ms);
    first_done = true;
  });
  queue.Submit([&] { second_ran = true; });
  REQUIRE(Eventually([&] { return started.load(); }));
  queue.Close();
  CHECK(!queue.Submit([&] { second_ran = true; }));
  CHECK(queue.SubmitOnce(1, [&] { second_ran = true; }) == WorkQueue::Keyed::kClosed);
  CHECK(queue.active() == 1);  // the running one only
  gate.Open();
  queue.Join();
  CHECK(first_done);  // Join returned after the running job ended
  CHECK(!second_ran);
  CHECK(queue.workers() == 0);
}

TEST_CASE("work queue: the destructor joins the running job") {
  std::atomic<bool> done{false};
  {
    WorkQueue queue(2);
    std::atomic<bool> started{false};
    queue.Submit([&] {
      started = true;
      std::this_thread::sleep_for(30ms);
      done = true;
    });
    REQUIRE(Eventually([&] { return started.load(); }));
  }
  CHECK(done);
}

TEST_CASE("work queue: a keyed job asked for again while it runs runs once more") {
  WorkQueue queue(4);
  Gate gate;
  std::atomic<int> runs{0};
  auto job = [&] {
    if (++runs == 1) gate.Wait();
  };
  CHECK(queue.SubmitOnce(7, job) == WorkQueue::Keyed::kQueued);
  REQUIRE(Eventually([&] { return runs == 1; }));
  // However often it is asked for meanwhile: one more run, with the latest.
  CHECK(queue.SubmitOnce(7, job) == WorkQueue::Keyed::kAgain);
  CHECK(queue.SubmitOnce(7, job) == WorkQueue::Keyed::kAgain);
  CHECK(queue.SubmitOnce(7, job) == WorkQueue::Keyed::kAgain);
  CHECK(queue.active() == 1);  // no second job for the key
  gate.Open();
  REQUIRE(Eventually([&] { return queue.active() == 0; }));
  CHECK(runs == 2);
  // Ended: the key is free again.
  CHECK(queue.SubmitOnce(7, job) == WorkQueue::Keyed::kQueued);
  REQUIRE(Eventually([&] { return queue.active() == 0; }));
  CHECK(runs == 3);
}

TEST_CASE("work queue: keys do not wait for each other") {
  WorkQueue queue(4);
  Gate gate;
  std::atomic<bool> a_started{false}, b_ran{false};
  queue.SubmitOnce(1, [&] {
    a_started = true;
    gate.Wait();
  });
  REQUIRE(Eventually([&] { return a_started.load(); }));
  CHECK(queue.SubmitOnce(2, [&] { b_ran = true; }) == WorkQueue::Keyed::kQueued);
  CHECK(Eventually([&] { return b_ran.load(); }));
  gate.Open();
}

TEST_CASE("work queue: a closed queue does not run a keyed job again") {
  WorkQueue queue(1);
  Gate gate;
  std::atomic<int> runs{0};
  auto job = [&] {
    ++runs;
    gate.Wait();
  };
  queue.SubmitOnce(3, job);
  REQUIRE(Eventually([&] { return runs == 1; }));
  CHECK(queue.SubmitOnce(3, job) == WorkQueue::Keyed::kAgain);
  queue.Close();
  gate.Open();
  queue.Join();
  CHECK(runs == 1);
}

TEST_CASE("work queue: a throwing job is logged; its worker and its key go on") {
  WorkQueue queue(1);
  std::atomic<int> runs{0};
  CHECK(queue.SubmitOnce(5, [] { throw std::runtime_error("boom"); }) == WorkQueue::Keyed::kQueued);
  queue.Submit([] { throw std::runtime_error("boom"); });
  REQUIRE(Eventually([&] { return queue.active() == 0; }));
  CHECK(queue.SubmitOnce(5, [&] { ++runs; }) == WorkQueue::Keyed::kQueued);
  REQUIRE(Eventually([&] { return queue.active() == 0; }));
  CHECK(runs == 1);
  CHECK(queue.workers() == 1);
}

}  // namespace prov
