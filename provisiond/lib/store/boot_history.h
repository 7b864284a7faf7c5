// The node page's boot waterfall: a node's latest boot attempts, each as
// `provisionctl node why` computes the latest one (ComputeBootTimeline), so
// the page and `node why` always agree on where an attempt begins. A pure
// function, tested with tables.
#pragma once

#include <cstddef>
#include <vector>

#include "store/store.h"
#include "store/timeline.h"

namespace prov {

// The newest `count` boot attempts in `events` (the node's events, oldest
// first), newest first. An attempt is ComputeBootTimeline's latest attempt
// of the events before the next one began; attempts with no stage are not
// listed, so fewer than `count` come back when the events hold fewer. Only
// `steps`, `errors`, `last_stage` and `next_stage` of the earlier attempts
// say something: their `summary` is about the node as it is now.
std::vector<BootTimeline> RecentBoots(const NodeRecord& node, std::vector<EventRecord> events,
                                      size_t count);

}  // namespace prov
