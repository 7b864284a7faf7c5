#include "store/state_history.h"

#include <algorithm>
#include <string>
#include <unordered_map>

namespace prov {
namespace {

// "booting -> booted: hello from ..." -> {booting, booted}
std::optional<std::pair<NodeState, NodeState>> ParseStateChange(const std::string& detail) {
  size_t arrow = detail.find(" -> ");
  if (arrow == std::string::npos) return std::nullopt;
  size_t to_end = detail.find(':', arrow + 4);
  auto from = ParseNodeState(std::string_view(detail).substr(0, arrow));
  auto to = ParseNodeState(std::string_view(detail).substr(
      arrow + 4, to_end == std::string::npos ? std::string::npos : to_end - arrow - 4));
  if (!from || !to) return std::nullopt;
  return std::make_pair(*from, *to);
}

// The events that may change the counts; the others are dropped as they are
// read, so a window of a million events holds only these in memory.
bool ChangesCounts(const EventRecord& e) {
  return e.kind == "state" || e.kind == "enrolled" || e.kind == "discovered" || e.kind == "purged";
}

constexpr int64_t kStateEventsChunk = 10000;  // events read under the store's lock at once

}  // namespace

std::vector<StateChange> StateChangesOf(const std::vector<EventRecord>& events) {
  std::vector<StateChange> out;
  // The state each node (by the name its events carry) was left in: a purge
  // removes a node from it.
  std::unordered_map<std::string, NodeState> last;
  for (const EventRecord& e : events) {
    if (e.kind == "state") {
      auto change = ParseStateChange(e.detail);
      if (!change) continue;  // not written by StoreTx::Transition
      out.push_back({e.time_ms, change->first, change->second});
      last[e.node] = change->second;
    } else if (e.kind == "enrolled" || e.kind == "discovered") {
      NodeState s = e.kind == "enrolled" ? NodeState::kEnrolled : NodeState::kDiscovered;
      out.push_back({e.time_ms, std::nullopt, s});
      last[e.node] = s;
    } else if (e.kind == "purged") {
      auto it = last.find(e.node);
      if (it == last.end()) continue;
      out.push_back({e.time_ms, it->second, std::nullopt});
      last.erase(it);
    }
  }
  return out;
}

StateSeries CountsOverTime(const std::map<NodeState, int64_t>& now,
                           const std::vector<StateChange>& changes, int64_t since_ms,
                           int64_t until_ms, int points) {
  points = std::max(points, 1);
  StateSeries out;
  out.since_ms = since_ms;
  out.step_ms = std::max<int64_t>(1, (until_ms - since_ms) / points);
  out.until_ms = until_ms;
  std::map<NodeState, int64_t> counts;
  for (NodeState s : AllNodeStates()) {
    auto it = now.find(s);
    counts[s] = it == now.end() ? 0 : it->second;
    out.counts[s].assign(static_cast<size_t>(points) + 1, 0);
  }
  std::vector<StateChange> newest_first = changes;
  std::stable_sort(
      newest_first.begin(), newest_first.end(),
      [](const StateChange& a, const StateChange& b) { return a.time_ms > b.time_ms; });
  // Walking back from now: the counts at instant t are today's with every
  // change after t undone.
  size_t next = 0;
  for (int k = points; k >= 0; --k) {
    const int64_t at = k == points ? until_ms : since_ms + k * out.step_ms;
    for (; next < newest_first.size() && newest_first[next].time_ms > at; ++next) {
      const StateChange& c = newest_first[next];
      if (c.to) --counts[*c.to];
      if (c.from) ++counts[*c.from];
    }
    for (auto& [state, n] : counts)
      out.counts[state][static_cast<size_t>(k)] = std::max<int64_t>(0, n);
  }
  return out;
}

StateHistory ReadStateHistory(Store& store, int64_t since_ms, int points, int64_t max_events) {
  StateHistory h;
  const int64_t until_ms = NowMs();
  // Counts and the newest event id read with no transaction between them
  // (every change of a count appends its event in the same transaction), so
  // undoing the events up to that id gives the earlier counts exactly.
  std::map<NodeState, int64_t> now;
  int64_t last = store.LastEventId();
  for (int tries = 0; tries < 5; ++tries) {
    now = store.CountByState();
    int64_t again = store.LastEventId();
    if (again == last) break;
    last = again;
  }
  h.last_event = last;
  h.complete_since_ms = since_ms;
  std::vector<EventRecord> kept;  // newest first
  int64_t hi = last;
  bool reached_since = false;
  int64_t oldest_read_ms = until_ms;
  int64_t oldest_id = 0;
  while (hi > 0 && !reached_since && h.events_read < max_events) {
    int64_t lo = std::max<int64_t>(0, hi - std::min(kStateEventsChunk, max_events - h.events_read));
    std::vector<EventRecord> chunk = store.ListEvents(lo, 0, hi - lo);
    if (chunk.empty()) break;  // the older ones were pruned
    for (auto it = chunk.rbegin(); it != chunk.rend(); ++it) {
      if (it->id > hi) continue;
      ++h.events_read;
      oldest_read_ms = std::min(oldest_read_ms, it->time_ms);
      oldest_id = it->id;
      if (it->time_ms < since_ms) reached_since = true;
      if (ChangesCounts(*it)) kept.push_back(std::move(*it));
    }
    hi = lo;
  }
  // Not back to since_ms: the counts before the oldest event read are only
  // as good as the changes read (none before the very first event).
  if (!reached_since && oldest_id != 1 && last > 0)
    h.complete_since_ms = std::max(since_ms, oldest_read_ms);
  std::reverse(kept.begin(), kept.end());
  h.series = CountsOverTime(now, StateChangesOf(kept), since_ms, until_ms, points);
  return h;
}

}  // namespace prov
