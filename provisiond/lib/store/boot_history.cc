#include "store/boot_history.h"

namespace prov {

std::vector<BootTimeline> RecentBoots(const NodeRecord& node, std::vector<EventRecord> events,
                                      size_t count) {
  std::vector<BootTimeline> boots;
  while (boots.size() < count) {
    BootTimeline t = ComputeBootTimeline(node, events);
    if (t.steps.empty()) break;
    // The attempt began with the boot event of its first step: the earliest
    // one of that stage at that instant (a stage repeated within the same
    // millisecond belongs to the same attempt). The events before it hold
    // the attempts before this one.
    const TimelineStep& first = t.steps.front();
    size_t start = events.size();
    for (size_t i = events.size(); i-- > 0;) {
      const EventRecord& e = events[i];
      if (e.kind == "boot" && e.time_ms == first.time_ms && e.stage == first.stage) start = i;
    }
    boots.push_back(std::move(t));
    if (start == events.size()) break;  // not found: cannot happen, but never loop
    events.resize(start);
  }
  return boots;
}

}  // namespace prov
