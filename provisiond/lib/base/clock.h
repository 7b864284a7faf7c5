// Elapsed time, as recorded in runs, tasks, events and logs.
#pragma once

#include <chrono>
#include <cstdint>

namespace prov {

// Milliseconds since `start` on the monotonic clock.
inline int64_t SinceMs(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               start)
      .count();
}

}  // namespace prov
