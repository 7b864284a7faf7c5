// The events: appended within a transaction (the oldest deleted past the
// retention), read by id or as a node's latest, and waited for (the
// long-polls of the event stream).
#include <spdlog/spdlog.h>

#include <chrono>

#include "store/store.h"
#include "store/store_sql.h"

namespace prov {
namespace {

constexpr const char* kInsertEvent =
    "INSERT INTO events (time, node_id, node, kind, detail, who, stage) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) RETURNING id";
// All nodes' events, and one node's by the events_node index (node_id, id):
// one statement with "?2 = 0 OR node_id = ?2" would scan the whole table.
constexpr const char* kSelectEvents =
    "SELECT id, time, node_id, node, kind, detail, who, stage FROM events "
    "WHERE id > ?1 ORDER BY id LIMIT ?3";
constexpr const char* kSelectNodeEvents =
    "SELECT id, time, node_id, node, kind, detail, who, stage FROM events "
    "WHERE node_id = ?2 AND id > ?1 ORDER BY id LIMIT ?3";
constexpr const char* kSelectLastEvents =
    "SELECT * FROM (SELECT id, time, node_id, node, kind, detail, who, stage FROM events "
    "ORDER BY id DESC LIMIT ?2) AS last ORDER BY id";
constexpr const char* kSelectLastNodeEvents =
    "SELECT * FROM (SELECT id, time, node_id, node, kind, detail, who, stage FROM events "
    "WHERE node_id = ?1 ORDER BY id DESC LIMIT ?2) AS last ORDER BY id";
constexpr const char* kPruneEvents = "DELETE FROM events WHERE id <= ?1";
constexpr const char* kLastEventId = "SELECT coalesce(max(id), 0) FROM events";

std::vector<EventRecord> ReadEvents(sql::Statement& s) {
  std::vector<EventRecord> out;
  while (ReadRow(s, "cannot read the events")) {
    EventRecord e;
    e.id = s.Int(0);
    e.time_ms = s.Int(1);
    e.node_id = s.Int(2);
    e.node = s.Text(3);
    e.kind = s.Text(4);
    e.detail = s.Text(5);
    e.who = s.Text(6);
    e.stage = ParseBootStage(s.Text(7));
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace

Status StoreTx::AppendEvent(EventRecord& e) {
  if (!e.time_ms) e.time_ms = NowMs();
  Store::Stmt s(store_, kInsertEvent);
  s->Bind(1, e.time_ms);
  if (e.node_id)
    s->Bind(2, e.node_id);
  else
    s->BindNull(2);
  BindText(*s, 3, e.node);
  BindText(*s, 4, e.kind);
  BindText(*s, 5, e.detail);
  BindText(*s, 6, e.who);
  BindText(*s, 7, e.stage ? ToString(*e.stage) : "");
  auto id = s->Insert("cannot append event");
  if (!id.ok()) return id.status();
  e.id = *id;
  if (e.stage && e.node_id)
    store_.pending_metrics_.push_back({MetricObservation::Kind::kBootStage, e.node_id,
                                       std::string(ToString(*e.stage)), "", e.time_ms, 0});
  store_.last_event_id_ = e.id;
  if (store_.keep_events_ > 0 && e.id % 256 == 0 && e.id > store_.keep_events_) {
    Store::Stmt prune(store_, kPruneEvents);
    prune->Bind(1, e.id - store_.keep_events_);
    if (Status st = prune->Run("cannot delete old events"); !st.ok()) return st;
  }
  return Status::Ok();
}

Status Store::AppendEvent(EventRecord& event) {
  return Transact([&](StoreTx& tx) { return tx.AppendEvent(event); });
}

void Store::RecordEvent(EventRecord event) {
  if (Status s = AppendEvent(event); !s.ok())
    spdlog::warn("{} event not recorded ({}): {}", event.kind, event.detail, s.message());
}

std::function<void(const std::string&)> EventRecorder(Store& store, std::string kind) {
  return [&store, kind = std::move(kind)](const std::string& detail) {
    EventRecord e{.kind = kind, .detail = detail, .who = kind};
    Status s = store.AppendEvent(e);
    if (!s.ok()) spdlog::warn("{} event not recorded: {}", kind, s.message());
  };
}

std::vector<EventRecord> Store::ListEvents(int64_t after, int64_t node_id, int64_t limit) {
  std::lock_guard lock(mu_);
  Stmt s(*this, node_id ? kSelectNodeEvents : kSelectEvents);
  s->Bind(1, after);
  if (node_id) s->Bind(2, node_id);
  s->Bind(3, limit);
  return ReadEvents(*s);
}

std::vector<EventRecord> Store::LastEvents(int64_t node_id, int64_t count) {
  std::lock_guard lock(mu_);
  Stmt s(*this, node_id ? kSelectLastNodeEvents : kSelectLastEvents);
  if (node_id) s->Bind(1, node_id);
  s->Bind(2, count);
  return ReadEvents(*s);
}

bool Store::WaitForEvents(int64_t after, int64_t timeout_ms) {
  std::unique_lock lock(mu_);
  events_cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                      [&] { return stopping_ || last_event_id_ > after; });
  return !stopping_;
}

void Store::WakeWaiters() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  events_cv_.notify_all();
}

Result<int64_t> Store::ReadLastEventId() {
  Stmt s(*this, kLastEventId);
  auto row = s->Step("cannot read the last event's id");
  if (!row.ok()) return row.status();
  return *row ? s->Int(0) : 0;
}

int64_t Store::LastEventId() {
  std::lock_guard lock(mu_);
  auto last = ReadLastEventId();
  if (!last.ok()) spdlog::warn("store: {}", last.status().message());
  return last.ok() ? *last : 0;
}

}  // namespace prov
