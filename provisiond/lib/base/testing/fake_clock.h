// A clock for unit tests (base/clock.h): time moves only when a unit sleeps
// on it or the test advances it, and every sleep is recorded, so a test says
// how long a unit waited without waiting itself. Thread-safe.
#pragma once

#include <mutex>
#include <vector>

#include "base/clock.h"

namespace prov::testing {

class FakeClock : public Clock {
 public:
  TimePoint Now() override {
    std::lock_guard lock(mu_);
    return now_;
  }
  bool Sleep(int ms, const std::atomic<bool>* cancel) override {
    std::lock_guard lock(mu_);
    if (cancel && *cancel) return false;
    sleeps_.push_back(ms);
    now_ += std::chrono::milliseconds(ms);
    return true;
  }
  void Advance(std::chrono::milliseconds by) {
    std::lock_guard lock(mu_);
    now_ += by;
  }
  // The sleeps asked for, in order.
  std::vector<int> sleeps() const {
    std::lock_guard lock(mu_);
    return sleeps_;
  }

 private:
  mutable std::mutex mu_;
  TimePoint now_{};
  std::vector<int> sleeps_;
};

}  // namespace prov::testing
