// `provisionctl node why`: a node's latest boot attempt, stage by stage, and
// where it stopped. Computed from its events alone (a pure function, tested
// with tables).
#pragma once

#include <string>
#include <vector>

#include "store/store.h"

namespace prov {

// The stages of the node's path, in order.
const std::vector<std::string>& BootStageOrder();

struct TimelineStep {
  std::string stage;
  int64_t time_ms = 0;
  std::string detail;
};

struct BootTimeline {
  std::vector<TimelineStep> steps;  // the latest attempt, in order
  std::vector<std::string> errors;  // boot-error events during it
  std::string last_stage;           // "" when it never started
  std::string next_stage;           // what provisiond expects next ("" when done)
  std::string summary;              // one sentence for people
};

// `events` are the node's events, oldest first.
BootTimeline ComputeBootTimeline(const NodeRecord& node, const std::vector<EventRecord>& events);

}  // namespace prov
