// Time as the units that wait see it: the monotonic clock and sleeping, behind
// an interface so a unit test drives a waiting unit (a configure run's
// retries, wait_for_peers) on a clock it moves itself instead of waiting.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace prov {

class Clock {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  virtual ~Clock() = default;
  virtual TimePoint Now() = 0;
  // Waits `ms`, or less when `cancel` (may be null) becomes true: false when
  // it did. A stopping provisiond is not held up by a long wait.
  virtual bool Sleep(int ms, const std::atomic<bool>* cancel) = 0;
  // Milliseconds since `start`.
  int64_t SinceMs(TimePoint start) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Now() - start).count();
  }
};

// The real clock (std::chrono::steady_clock; the cancel flag looked at every
// 100 ms at most). One per process; thread-safe.
Clock& SteadyClock();

// Milliseconds since `start` on the monotonic clock.
inline int64_t SinceMs(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               start)
      .count();
}

}  // namespace prov
