// `provisionctl node why`: a node's latest boot attempt, stage by stage, and
// where it stopped. Computed from its events alone (a pure function, tested
// with tables).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "store/boot_stage.h"
#include "store/store.h"

namespace prov {

struct TimelineStep {
  BootStage stage = BootStage::kDhcp;
  int64_t time_ms = 0;
  std::string detail;
};

struct BootTimeline {
  std::vector<TimelineStep> steps;      // the latest attempt, in order
  std::vector<std::string> errors;      // boot-error events during it
  std::optional<BootStage> last_stage;  // none when it never started
  std::optional<BootStage> next_stage;  // what provisiond expects next (none when done)
  std::string summary;                  // one sentence for people
};

// `events` are the node's events, oldest first.
BootTimeline ComputeBootTimeline(const NodeRecord& node, const std::vector<EventRecord>& events);

}  // namespace prov
