// The overview's chart: how many nodes were in each state over the last
// hours. Computed backwards from today's counts (one indexed read) through
// the events that changed them, newest first: a "state" event ("from -> to:
// ...") moved a node, "enrolled" and "discovered" added one, "purged" removed
// one. No table of counts over time is kept; the events are the history.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "store/store.h"

namespace prov {

// One change of the counts. `from` empty: a node was added; `to` empty: a
// node was removed.
struct StateChange {
  int64_t time_ms = 0;
  std::optional<NodeState> from;
  std::optional<NodeState> to;
};

// The changes `events` (oldest first) record; the other events are skipped.
// A purged node's state is the one its latest earlier event in `events`
// left it in; a purge with none there is skipped (the counts before it are
// then one short in some state).
std::vector<StateChange> StateChangesOf(const std::vector<EventRecord>& events);

struct StateSeries {
  int64_t since_ms = 0;  // the first point's time
  int64_t step_ms = 0;   // between points
  int64_t until_ms =
      0;  // the last point's time (now): since_ms + points * step_ms or a little later
  // counts[state][k]: nodes in `state` at since_ms + k * step_ms, every state
  // present; the last point is `until` of CountsOverTime, now.
  std::map<NodeState, std::vector<int64_t>> counts;
};

// Counts at `points` + 1 instants from `since_ms` to `until_ms`, from the
// counts at `until_ms` (`now`) and the changes up to then, in any order. A
// count that the changes would take below 0 (a history cut short) stays 0.
StateSeries CountsOverTime(const std::map<NodeState, int64_t>& now,
                           const std::vector<StateChange>& changes, int64_t since_ms,
                           int64_t until_ms, int points);

struct StateHistory {
  StateSeries series;
  // From when the series is whole: since_ms, or later when the events before
  // it were pruned (retention.events) or more than `max_events` events came
  // since (the counts before it do not undo the older changes).
  int64_t complete_since_ms = 0;
  int64_t events_read = 0;
  int64_t last_event = 0;  // the newest event the counts include
};

// Reads today's counts and the events since `since_ms` (newest first, in
// chunks, each under the store's lock on its own; at most `max_events`) and
// computes the series up to now.
StateHistory ReadStateHistory(Store& store, int64_t since_ms, int points, int64_t max_events);

}  // namespace prov
