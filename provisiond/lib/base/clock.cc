#include "base/clock.h"

#include <algorithm>
#include <thread>

namespace prov {
namespace {

class RealClock : public Clock {
 public:
  TimePoint Now() override { return std::chrono::steady_clock::now(); }
  bool Sleep(int ms, const std::atomic<bool>* cancel) override {
    const auto until = Now() + std::chrono::milliseconds(ms);
    for (auto now = Now(); now < until; now = Now()) {
      if (cancel && *cancel) return false;
      std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
          until - now, std::chrono::milliseconds(100)));
    }
    return !(cancel && *cancel);
  }
};

}  // namespace

Clock& SteadyClock() {
  static RealClock clock;
  return clock;
}

}  // namespace prov
