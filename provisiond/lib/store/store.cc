#include "store/store.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <exception>

#include "base/file_util.h"
#include "base/thread.h"
#include "base/unique_fd.h"
#include "store/migrations.h"

namespace prov {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

namespace {

constexpr const char* kNodeColumns =
    "id, mac, hostname, ip, state, reason, profile_version, image_version, facts, host_key, "
    "token, stage, last_seen, created, updated, power, configured, ticket, uefi_loader, health";

// SQL texts, each prepared once (the cache is keyed by these pointers).
const std::string kSelectNodeByName =
    std::string("SELECT ") + kNodeColumns + " FROM nodes WHERE hostname = ?1 OR mac = ?1";
const std::string kSelectNodeById =
    std::string("SELECT ") + kNodeColumns + " FROM nodes WHERE id = ?1";
const std::string kAllNodes = std::string("SELECT ") + kNodeColumns + " FROM nodes";
const char* const kSelectAllNodes = kAllNodes.c_str();
const std::string kSelectNodes = std::string("SELECT ") + kNodeColumns +
                                 " FROM nodes WHERE (?1 IS NULL OR state = ?1) AND "
                                 "(?2 IS NULL OR profile_version = ?2) "
                                 "ORDER BY hostname IS NULL, hostname, mac";
// Nodes that may boot another UEFI loader than the default (migration 008):
// their own choice, or a profile version in ?1 (a JSON array).
const std::string kSelectUefiChoosers =
    std::string("SELECT ") + kNodeColumns +
    " FROM nodes WHERE state NOT IN ('discovered', 'retired') AND (uefi_loader != '' OR "
    "profile_version IN (SELECT value FROM json_each(?1))) ORDER BY id";
constexpr const char* kSelectProfilesInUse =
    "SELECT DISTINCT profile_version FROM nodes WHERE profile_version IS NOT NULL AND "
    "state NOT IN ('discovered', 'retired')";
constexpr const char* kInsertNode =
    "INSERT INTO nodes (mac, hostname, ip, state, reason, profile_version, image_version, facts, "
    "host_key, token, stage, last_seen, created, updated, power, configured, ticket, uefi_loader, "
    "health) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?16, ?17, ?18, "
    "?19, ?20)";
constexpr const char* kUpdateNode =
    "UPDATE nodes SET mac = ?1, hostname = ?2, ip = ?3, state = ?4, reason = ?5, "
    "profile_version = ?6, image_version = ?7, facts = ?8, host_key = ?9, token = ?10, "
    "stage = ?11, last_seen = ?12, updated = ?14, power = ?16, configured = ?17, ticket = ?18, "
    "uefi_loader = ?19, health = ?20 WHERE id = ?15";
constexpr const char* kDeleteNode = "DELETE FROM nodes WHERE id = ?1";
constexpr const char* kInsertEvent =
    "INSERT INTO events (time, node_id, node, kind, detail, who, stage) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
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
    "ORDER BY id DESC LIMIT ?2) ORDER BY id";
constexpr const char* kSelectLastNodeEvents =
    "SELECT * FROM (SELECT id, time, node_id, node, kind, detail, who, stage FROM events "
    "WHERE node_id = ?1 ORDER BY id DESC LIMIT ?2) ORDER BY id";
constexpr const char* kCountByState = "SELECT state, count(*) FROM nodes GROUP BY state";
constexpr const char* kCountInState = "SELECT count(*) FROM nodes WHERE state = ?1";
constexpr const char* kPruneEvents = "DELETE FROM events WHERE id <= ?1";
constexpr const char* kPruneRuns = "DELETE FROM runs WHERE id <= ?1 AND status != 'running'";
constexpr const char* kInsertApplied =
    "INSERT INTO applied_profiles (version, sha256, time, who) VALUES (?1, ?2, ?3, ?4)";
constexpr const char* kRecordSnapshot =
    "INSERT INTO profile_snapshots (sha256, version, seq, time, who) VALUES (?1, ?2, "
    "(SELECT coalesce(max(seq), 0) + 1 FROM profile_snapshots), ?3, ?4) "
    "ON CONFLICT (sha256) DO UPDATE SET seq = excluded.seq, time = excluded.time, who = "
    "excluded.who";
constexpr const char* kSnapshotOf =
    "SELECT sha256 FROM profile_snapshots WHERE version = ?1 ORDER BY seq DESC LIMIT 1";
constexpr const char* kSelectSnapshots =
    "SELECT seq, version, sha256, time, who FROM profile_snapshots ORDER BY seq";
constexpr const char* kSelectApplied =
    "SELECT id, version, sha256, time, who FROM applied_profiles ORDER BY id";
constexpr const char* kLastEventId = "SELECT coalesce(max(id), 0) FROM events";
constexpr const char* kAddressesVersion = "SELECT value FROM counters WHERE name = 'addresses'";
constexpr const char* kBootLoadersVersion =
    "SELECT value FROM counters WHERE name = 'boot_loaders'";
constexpr const char* kSelectAddresses =
    "SELECT mac, ip, hostname FROM nodes WHERE ip IS NOT NULL AND ip != '' AND "
    "state NOT IN ('discovered', 'retired') ORDER BY id";

std::string ColumnText(sqlite3_stmt* s, int i) {
  const unsigned char* t = sqlite3_column_text(s, i);
  return t ? reinterpret_cast<const char*>(t) : "";
}

void BindText(sqlite3_stmt* s, int i, const std::string& v, bool null_if_empty = false) {
  if (null_if_empty && v.empty())
    sqlite3_bind_null(s, i);
  else
    sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
}

NodeRecord ReadNode(sqlite3_stmt* s) {
  NodeRecord n;
  n.id = sqlite3_column_int64(s, 0);
  n.mac = ColumnText(s, 1);
  n.hostname = ColumnText(s, 2);
  n.ip = ColumnText(s, 3);
  n.state = ParseNodeState(ColumnText(s, 4)).value_or(NodeState::kFailed);
  n.reason = ColumnText(s, 5);
  n.profile_version = ColumnText(s, 6);
  n.image_version = ColumnText(s, 7);
  n.facts = ColumnText(s, 8);
  n.host_key = ColumnText(s, 9);
  n.token = ColumnText(s, 10);
  n.stage = ParseBootStage(ColumnText(s, 11));
  n.last_seen_ms = sqlite3_column_int64(s, 12);
  n.created_ms = sqlite3_column_int64(s, 13);
  n.updated_ms = sqlite3_column_int64(s, 14);
  n.power = ColumnText(s, 15);
  n.configured = ColumnText(s, 16);
  n.ticket = ColumnText(s, 17);
  n.uefi_loader = ColumnText(s, 18);
  n.health = ColumnText(s, 19);
  return n;
}

void BindNode(sqlite3_stmt* s, const NodeRecord& n) {
  BindText(s, 1, n.mac);
  BindText(s, 2, n.hostname, true);
  BindText(s, 3, n.ip, true);
  BindText(s, 4, std::string(ToString(n.state)));
  BindText(s, 5, n.reason);
  BindText(s, 6, n.profile_version, true);
  BindText(s, 7, n.image_version, true);
  BindText(s, 8, n.facts);
  BindText(s, 9, n.host_key, true);
  BindText(s, 10, n.token);
  BindText(s, 11, n.stage ? std::string(ToString(*n.stage)) : std::string());
  if (n.last_seen_ms)
    sqlite3_bind_int64(s, 12, n.last_seen_ms);
  else
    sqlite3_bind_null(s, 12);
  sqlite3_bind_int64(s, 13, n.created_ms);
  sqlite3_bind_int64(s, 14, n.updated_ms);
  BindText(s, 16, n.power.empty() ? "{}" : n.power);
  BindText(s, 17, n.configured);
  BindText(s, 18, n.ticket);
  BindText(s, 19, n.uefi_loader);
  BindText(s, 20, n.health);
}

Status SqlError(sqlite3* db, const std::string& what) {
  int code = sqlite3_extended_errcode(db);
  std::string msg = what + ": " + sqlite3_errmsg(db);
  if (code == SQLITE_CONSTRAINT_UNIQUE || code == SQLITE_CONSTRAINT_PRIMARYKEY)
    return Status::Conflict(msg);
  return Status::Internal(msg);
}

}  // namespace

// Resets and clears bindings when the scope ends, so a cached statement is
// always ready for its next use.
class Store::Stmt {
 public:
  Stmt(Store& store, const char* sql) : s_(store.Prepared(sql)) {}
  ~Stmt() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  sqlite3_stmt* get() { return s_; }

 private:
  sqlite3_stmt* s_;
};

Status ApplyMigrations(sqlite3* db, int upto) {
  return sql::ApplyMigrations(db, Migrations(), upto, "database");
}

Result<std::unique_ptr<Store>> Store::Open(const std::string& path) {
  // The database holds every node's token and ticket: only its owner reads
  // it, from its creation on (SQLite gives its -wal and -shm files the same
  // mode). A database an older provisiond left readable by others is
  // tightened.
  if (path != ":memory:") {
    UniqueFd created(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    struct stat st {};
    if (!created.valid() && ::stat(path.c_str(), &st) == 0 && (st.st_mode & 077) != 0) {
      spdlog::warn("{} was readable by others (mode {:o}): now 0600", path, st.st_mode & 0777);
      ::chmod(path.c_str(), 0600);
    }
  }
  sqlite3* db = nullptr;
  int rc =
      sqlite3_open_v2(path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg =
        "cannot open database " + path + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    sqlite3_close(db);
    return Status::Internal(msg);
  }
  std::unique_ptr<Store> store(new Store(db));
  for (const char* pragma : {"PRAGMA journal_mode = WAL", "PRAGMA synchronous = NORMAL",
                             "PRAGMA busy_timeout = 5000", "PRAGMA foreign_keys = ON"}) {
    Status s = store->Exec(pragma);
    if (!s.ok()) return s;
  }
  Status s = ApplyMigrations(db, static_cast<int>(Migrations().size()));
  if (!s.ok()) return Status::Internal(path + ": " + s.message());
  store->last_event_id_ = store->LastEventId();
  {
    std::lock_guard lock(store->mu_);
    if (Status loaded = store->LoadNodes(); !loaded.ok()) return loaded;
  }
  if (path != ":memory:" &&
      sqlite3_open_v2(path.c_str(), &store->checkpoint_db_,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX, nullptr) == SQLITE_OK) {
    sqlite3_busy_timeout(store->checkpoint_db_, 5000);
    sqlite3_wal_autocheckpoint(db, 0);
    sqlite3_wal_hook(db, &Store::OnWalCommit, store.get());
    store->checkpointer_ = std::thread(
        [s = store.get()] { RunGuarded("WAL checkpoint", [s] { s->CheckpointLoop(); }); });
  } else if (store->checkpoint_db_) {
    // Without the second connection, commits checkpoint as SQLite does by default.
    spdlog::warn("{}: no connection for checkpoints ({}): commits checkpoint", path,
                 sqlite3_errmsg(store->checkpoint_db_));
    sqlite3_close(store->checkpoint_db_);
    store->checkpoint_db_ = nullptr;
  }
  return store;
}

Store::Store(sqlite3* db) : db_(db) {}

Store::~Store() {
  if (checkpointer_.joinable()) {
    {
      std::lock_guard lock(checkpoint_mu_);
      checkpoint_stop_ = true;
    }
    checkpoint_cv_.notify_all();
    checkpointer_.join();
  }
  if (checkpoint_db_) sqlite3_close(checkpoint_db_);
  for (auto& [sql, stmt] : statements_) sqlite3_finalize(stmt);
  sqlite3_close(db_);  // the last connection: it checkpoints the log
}

int Store::OnWalCommit(void* store, sqlite3*, const char*, int pages) {
  // SQLite's own threshold (wal_autocheckpoint's default).
  constexpr int kCheckpointPages = 1000;
  auto* self = static_cast<Store*>(store);
  bool wake;
  {
    std::lock_guard lock(self->checkpoint_mu_);
    self->wal_pages_ = pages;
    wake = pages >= kCheckpointPages;
  }
  if (wake) self->checkpoint_cv_.notify_one();
  return SQLITE_OK;
}

void Store::CheckpointLoop() {
  std::unique_lock lock(checkpoint_mu_);
  for (;;) {
    checkpoint_cv_.wait(lock, [&] { return checkpoint_stop_ || wal_pages_ >= 1000; });
    if (checkpoint_stop_) return;
    wal_pages_ = 0;
    lock.unlock();
    // PASSIVE: copies what no reader still needs, waits for no one; the
    // next commit after a complete one starts the log over.
    int log = 0, done = 0;
    const int rc =
        sqlite3_wal_checkpoint_v2(checkpoint_db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, &log, &done);
    if (rc != SQLITE_OK && rc != SQLITE_BUSY)
      spdlog::warn("WAL checkpoint failed: {}", sqlite3_errmsg(checkpoint_db_));
    lock.lock();
  }
}

Status Store::Exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = std::string(sql) + ": " + (err ? err : "error");
    sqlite3_free(err);
    return Status::Internal(msg);
  }
  return Status::Ok();
}

void Store::ExecAfterError(const char* sql) {
  // The writers already have their error; a rollback that fails too leaves
  // nothing more to tell them, only the log (SQLite rolls back by itself on
  // the errors that make ROLLBACK fail).
  if (Status s = Exec(sql); !s.ok()) spdlog::error("store: {}", s.message());
}

sqlite3_stmt* Store::Prepared(const char* sql) {
  auto it = statements_.find(sql);
  if (it != statements_.end()) return it->second;
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr) != SQLITE_OK)
    throw std::logic_error(std::string("cannot prepare '") + sql + "': " + sqlite3_errmsg(db_));
  statements_[sql] = s;
  return s;
}

Status Store::CopyFrom(Store& from) {
  if (&from == this) return Status::Invalid("a store cannot be copied onto itself");
  std::scoped_lock lock(mu_, from.mu_);
  if (Status s = sql::CopyDatabase(from.db_, db_, "the database"); !s.ok()) return s;
  Stmt q(*this, kLastEventId);
  last_event_id_ = sqlite3_step(q.get()) == SQLITE_ROW ? sqlite3_column_int64(q.get(), 0) : 0;
  addresses_.reset();
  return LoadNodes();
}

int64_t Store::ChangeCount() {
  std::lock_guard lock(mu_);
  return sqlite3_total_changes64(db_);
}

int Store::schema_version() {
  std::lock_guard lock(mu_);
  Stmt s(*this, "PRAGMA user_version");
  return sqlite3_step(s.get()) == SQLITE_ROW ? sqlite3_column_int(s.get(), 0) : 0;
}

struct Store::Writer {
  const std::function<Status(StoreTx&)>* fn = nullptr;
  Status status;
  std::exception_ptr error;
  bool done = false;  // guarded by writers_mu_
  std::condition_variable cv;
};

Status Store::Transact(const std::function<Status(StoreTx&)>& fn) {
  // More queued callers than this wait for the next batch: one batch's
  // transaction stays short.
  constexpr size_t kMaxBatch = 128;
  Writer w;
  w.fn = &fn;
  std::unique_lock queue(writers_mu_);
  writers_.push_back(&w);
  w.cv.wait(queue, [&] { return w.done || writers_.front() == &w; });
  if (!w.done) {
    // The first in the queue leads: it commits every transaction queued by
    // now, its own first.
    const size_t n = std::min(writers_.size(), kMaxBatch);
    std::vector<Writer*> batch(writers_.begin(), writers_.begin() + static_cast<ptrdiff_t>(n));
    queue.unlock();
    CommitBatch(batch);
    queue.lock();
    for (Writer* b : batch) {
      writers_.pop_front();
      if (b == &w) continue;
      b->done = true;
      b->cv.notify_one();
    }
    if (!writers_.empty()) writers_.front()->cv.notify_one();
  }
  queue.unlock();
  if (w.error) std::rethrow_exception(w.error);
  return w.status;
}

Store::CommitStats Store::TransactStats() const {
  return {transactions_.load(), commits_.load()};
}

size_t Store::QueuedTransactions() {
  std::lock_guard queue(writers_mu_);
  return writers_.size();
}

std::string Store::MetricsText() const {
  const CommitStats stats = TransactStats();
  return metrics_.Prometheus() +
         "# HELP provisiond_store_transactions_total Store transactions run (committed or not).\n"
         "# TYPE provisiond_store_transactions_total counter\n"
         "provisiond_store_transactions_total " +
         std::to_string(stats.transactions) +
         "\n# HELP provisiond_store_commits_total SQLite commits: transactions queued together "
         "share one.\n"
         "# TYPE provisiond_store_commits_total counter\n"
         "provisiond_store_commits_total " +
         std::to_string(stats.commits) + "\n";
}

void Store::CommitBatch(const std::vector<Writer*>& batch) {
  transactions_ += static_cast<int64_t>(batch.size());
  std::unique_lock lock(mu_);
  pending_metrics_.clear();
  pending_nodes_.clear();
  auto reread_cursor = [&] {
    // Rolled-back events are gone: the cursor follows.
    Stmt q(*this, kLastEventId);
    last_event_id_ = sqlite3_step(q.get()) == SQLITE_ROW ? sqlite3_column_int64(q.get(), 0) : 0;
  };
  auto fail_all = [&](const Status& s) {
    for (Writer* b : batch)
      if (b->status.ok() && !b->error) b->status = s;
    pending_metrics_.clear();
    pending_nodes_.clear();
  };
  if (Status begun = Exec("BEGIN IMMEDIATE"); !begun.ok()) return fail_all(begun);
  // A transaction alone needs no savepoint: its failure rolls back all.
  const bool alone = batch.size() == 1;
  bool any_ok = false, any_failed = false;
  for (Writer* b : batch) {
    const size_t metrics_mark = pending_metrics_.size(), nodes_mark = pending_nodes_.size();
    if (!alone) {
      if (Status s = Exec("SAVEPOINT tx"); !s.ok()) {
        b->status = s;
        any_failed = true;
        continue;
      }
    }
    StoreTx tx(*this);
    try {
      b->status = (*b->fn)(tx);
    } catch (...) {
      b->error = std::current_exception();
      b->status = Status::Internal("the transaction threw");
    }
    if (b->status.ok() && !alone) {
      if (Status r = Exec("RELEASE tx"); !r.ok()) b->status = r;
    }
    if (b->status.ok()) {
      any_ok = true;
      continue;
    }
    any_failed = true;
    if (alone) break;
    ExecAfterError("ROLLBACK TO tx");
    ExecAfterError("RELEASE tx");
    pending_metrics_.resize(metrics_mark);
    pending_nodes_.resize(nodes_mark);
  }
  if (!any_ok) {
    ExecAfterError("ROLLBACK");
    pending_metrics_.clear();
    pending_nodes_.clear();
    reread_cursor();
    return;
  }
  if (Status c = Exec("COMMIT"); !c.ok()) {
    ExecAfterError("ROLLBACK");
    fail_all(c);
    reread_cursor();
    return;
  }
  ++commits_;
  if (any_failed) reread_cursor();
  for (auto& [id, node] : pending_nodes_) nodes_.Put(id, node);
  pending_nodes_.clear();
  std::vector<MetricObservation> observed;
  observed.swap(pending_metrics_);
  lock.unlock();
  events_cv_.notify_all();
  if (!observed.empty()) metrics_.Apply(observed);
}

Result<NodeRecord> StoreTx::FindNode(const std::string& name) {
  Store::Stmt s(store_, kSelectNodeByName.c_str());
  BindText(s.get(), 1, name);
  if (sqlite3_step(s.get()) == SQLITE_ROW) return ReadNode(s.get());
  return Status::NotFound("no node named '" + name + "' (by hostname or MAC)");
}

Result<NodeRecord> StoreTx::NodeById(int64_t id) {
  Store::Stmt s(store_, kSelectNodeById.c_str());
  sqlite3_bind_int64(s.get(), 1, id);
  if (sqlite3_step(s.get()) == SQLITE_ROW) return ReadNode(s.get());
  return Status::NotFound("no node with id " + std::to_string(id));
}

Result<NodeRecord> StoreTx::InsertNode(NodeRecord node) {
  node.created_ms = node.updated_ms = NowMs();
  if (node.token.empty()) node.token = RandomHex(16);
  Store::Stmt s(store_, kInsertNode);
  BindNode(s.get(), node);
  if (sqlite3_step(s.get()) != SQLITE_DONE) {
    Status e = SqlError(store_.db_, "cannot add node " + node.name());
    if (e.code() == Code::kConflict) {
      std::string m = sqlite3_errmsg(store_.db_);
      if (m.find("nodes.mac") != std::string::npos)
        return Status::Conflict("a node with MAC " + node.mac + " exists already");
      if (m.find("nodes.hostname") != std::string::npos)
        return Status::Conflict("a node named '" + node.hostname + "' exists already");
    }
    return e;
  }
  node.id = sqlite3_last_insert_rowid(store_.db_);
  // The node cache gets the row as SQLite holds it (NULLs, defaults).
  auto stored = NodeById(node.id);
  if (!stored.ok()) return stored.status();
  store_.pending_nodes_.emplace_back(node.id, *stored);
  return node;
}

Status StoreTx::UpdateNode(NodeRecord& node) {
  node.updated_ms = NowMs();
  Store::Stmt s(store_, kUpdateNode);
  BindNode(s.get(), node);
  sqlite3_bind_int64(s.get(), 15, node.id);
  if (sqlite3_step(s.get()) != SQLITE_DONE) {
    Status e = SqlError(store_.db_, "cannot update node " + node.name());
    if (e.code() == Code::kConflict)
      return Status::Conflict("another node already has hostname '" + node.hostname + "' or MAC " +
                              node.mac);
    return e;
  }
  if (sqlite3_changes(store_.db_) != 1) return Status::NotFound("node " + node.name() + " is gone");
  auto stored = NodeById(node.id);
  if (!stored.ok()) return stored.status();
  store_.pending_nodes_.emplace_back(node.id, *stored);
  return Status::Ok();
}

Status StoreTx::DeleteNode(int64_t id) {
  Store::Stmt s(store_, kDeleteNode);
  sqlite3_bind_int64(s.get(), 1, id);
  if (sqlite3_step(s.get()) != SQLITE_DONE) return SqlError(store_.db_, "cannot delete node");
  store_.pending_nodes_.emplace_back(id, std::nullopt);
  return Status::Ok();
}

Status StoreTx::AppendEvent(EventRecord& e) {
  if (!e.time_ms) e.time_ms = NowMs();
  Store::Stmt s(store_, kInsertEvent);
  sqlite3_bind_int64(s.get(), 1, e.time_ms);
  if (e.node_id)
    sqlite3_bind_int64(s.get(), 2, e.node_id);
  else
    sqlite3_bind_null(s.get(), 2);
  BindText(s.get(), 3, e.node);
  BindText(s.get(), 4, e.kind);
  BindText(s.get(), 5, e.detail);
  BindText(s.get(), 6, e.who);
  BindText(s.get(), 7, e.stage ? std::string(ToString(*e.stage)) : std::string());
  if (sqlite3_step(s.get()) != SQLITE_DONE) return SqlError(store_.db_, "cannot append event");
  if (e.stage && e.node_id)
    store_.pending_metrics_.push_back({MetricObservation::Kind::kBootStage, e.node_id,
                                       std::string(ToString(*e.stage)), "", e.time_ms, 0});
  e.id = sqlite3_last_insert_rowid(store_.db_);
  store_.last_event_id_ = e.id;
  if (store_.keep_events_ > 0 && e.id % 256 == 0 && e.id > store_.keep_events_) {
    Store::Stmt prune(store_, kPruneEvents);
    sqlite3_bind_int64(prune.get(), 1, e.id - store_.keep_events_);
    if (sqlite3_step(prune.get()) != SQLITE_DONE)
      return SqlError(store_.db_, "cannot delete old events");
  }
  return Status::Ok();
}

Status StoreTx::Transition(NodeRecord& node, NodeState to, const std::string& detail,
                           const std::string& who) {
  Status s = CheckTransition(node.state, to);
  if (!s.ok()) return Status::Conflict(node.name() + ": " + s.message());
  NodeState from = node.state;
  node.state = to;
  if (to != NodeState::kFailed && to != NodeState::kMaintenance) node.reason.clear();
  if (to == NodeState::kFailed || to == NodeState::kMaintenance) node.reason = detail;
  s = UpdateNode(node);
  if (!s.ok()) return s;
  EventRecord e;
  e.node_id = node.id;
  e.node = node.name();
  e.kind = "state";
  e.detail = std::string(ToString(from)) + " -> " + std::string(ToString(to)) +
             (detail.empty() ? "" : ": " + detail);
  e.who = who;
  return AppendEvent(e);
}

Status StoreTx::InsertAppliedProfile(AppliedProfile& a) {
  if (!a.time_ms) a.time_ms = NowMs();
  Store::Stmt s(store_, kInsertApplied);
  BindText(s.get(), 1, a.version);
  BindText(s.get(), 2, a.sha256);
  sqlite3_bind_int64(s.get(), 3, a.time_ms);
  BindText(s.get(), 4, a.who);
  if (sqlite3_step(s.get()) != SQLITE_DONE)
    return SqlError(store_.db_, "cannot record applied profile");
  a.id = sqlite3_last_insert_rowid(store_.db_);
  return Status::Ok();
}

Result<NodeRecord> Store::FindNode(const std::string& name) {
  if (NodePtr n = nodes_.Find(name)) return *n;
  return Status::NotFound("no node named '" + name + "' (by hostname or MAC)");
}

Result<NodeRecord> Store::FindNodeByIp(const std::string& ip) {
  if (NodePtr n = nodes_.ByIp(ip)) return *n;
  return Status::NotFound("no node has address " + ip);
}

Status Store::LoadNodes() {
  std::vector<NodeRecord> all;
  Stmt s(*this, kSelectAllNodes);
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) all.push_back(ReadNode(s.get()));
  if (rc != SQLITE_DONE) return SqlError(db_, "cannot read the nodes");
  nodes_.Reset(std::move(all));
  return Status::Ok();
}

int64_t Store::AddressesVersion() {
  std::lock_guard lock(mu_);
  Stmt s(*this, kAddressesVersion);
  return sqlite3_step(s.get()) == SQLITE_ROW ? sqlite3_column_int64(s.get(), 0) : 0;
}

int64_t Store::BootLoadersVersion() {
  std::lock_guard lock(mu_);
  Stmt s(*this, kBootLoadersVersion);
  return sqlite3_step(s.get()) == SQLITE_ROW ? sqlite3_column_int64(s.get(), 0) : 0;
}

std::shared_ptr<const AddressBook> Store::Addresses() {
  std::lock_guard lock(mu_);
  int64_t version = 0;
  {
    Stmt s(*this, kAddressesVersion);
    if (sqlite3_step(s.get()) == SQLITE_ROW) version = sqlite3_column_int64(s.get(), 0);
  }
  if (addresses_ && addresses_->version == version) return addresses_;
  auto book = std::make_shared<AddressBook>();
  book->version = version;
  Stmt s(*this, kSelectAddresses);
  while (sqlite3_step(s.get()) == SQLITE_ROW)
    book->entries.push_back(
        {ColumnText(s.get(), 0), ColumnText(s.get(), 1), ColumnText(s.get(), 2)});
  addresses_ = std::move(book);
  return addresses_;
}

std::vector<NodeRecord> StoreTx::ListNodes(const NodeFilter& filter) {
  Store::Stmt s(store_, kSelectNodes.c_str());
  if (filter.state) BindText(s.get(), 1, std::string(ToString(*filter.state)));
  if (filter.profile_version) BindText(s.get(), 2, *filter.profile_version);
  std::vector<NodeRecord> out;
  while (sqlite3_step(s.get()) == SQLITE_ROW) out.push_back(ReadNode(s.get()));
  return out;
}

int64_t StoreTx::CountInState(NodeState state) {
  Store::Stmt s(store_, kCountInState);
  BindText(s.get(), 1, std::string(ToString(state)));
  return sqlite3_step(s.get()) == SQLITE_ROW ? sqlite3_column_int64(s.get(), 0) : 0;
}

std::vector<NodeRecord> Store::ListNodes(const NodeFilter& filter) {
  auto list = nodes_.List();
  std::vector<NodeRecord> out;
  for (const auto& n : list->nodes)
    if (NodeMatches(*n, filter)) out.push_back(*n);
  return out;
}

std::vector<std::string> Store::ProfileVersionsInUse() {
  std::lock_guard lock(mu_);
  Stmt s(*this, kSelectProfilesInUse);
  std::vector<std::string> out;
  while (sqlite3_step(s.get()) == SQLITE_ROW) out.push_back(ColumnText(s.get(), 0));
  return out;
}

std::vector<NodeRecord> Store::UefiLoaderChoosers(const std::vector<std::string>& versions) {
  std::lock_guard lock(mu_);
  Stmt s(*this, kSelectUefiChoosers.c_str());
  std::string array = "[";  // JSON: versions are words, but quotes are escaped all the same
  for (const auto& v : versions) {
    array += array.size() > 1 ? ",\"" : "\"";
    for (char c : v) {
      if (c == '"' || c == '\\') array += '\\';
      if (static_cast<unsigned char>(c) >= 0x20) array += c;
    }
    array += '"';
  }
  BindText(s.get(), 1, array + "]");
  std::vector<NodeRecord> out;
  while (sqlite3_step(s.get()) == SQLITE_ROW) out.push_back(ReadNode(s.get()));
  return out;
}

void Store::Read(const std::function<void(StoreTx&)>& fn) {
  std::lock_guard lock(mu_);
  StoreTx tx(*this);
  fn(tx);
}

std::map<NodeState, int64_t> Store::CountByState() {
  std::lock_guard lock(mu_);
  Stmt s(*this, kCountByState);
  std::map<NodeState, int64_t> out;
  for (NodeState st : AllNodeStates()) out[st] = 0;
  while (sqlite3_step(s.get()) == SQLITE_ROW) {
    auto st = ParseNodeState(ColumnText(s.get(), 0));
    if (st) out[*st] = sqlite3_column_int64(s.get(), 1);
  }
  return out;
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

namespace {
std::vector<EventRecord> ReadEvents(sqlite3_stmt* s) {
  std::vector<EventRecord> out;
  while (sqlite3_step(s) == SQLITE_ROW) {
    EventRecord e;
    e.id = sqlite3_column_int64(s, 0);
    e.time_ms = sqlite3_column_int64(s, 1);
    e.node_id = sqlite3_column_int64(s, 2);
    e.node = ColumnText(s, 3);
    e.kind = ColumnText(s, 4);
    e.detail = ColumnText(s, 5);
    e.who = ColumnText(s, 6);
    e.stage = ParseBootStage(ColumnText(s, 7));
    out.push_back(std::move(e));
  }
  return out;
}
}  // namespace

std::vector<EventRecord> Store::ListEvents(int64_t after, int64_t node_id, int64_t limit) {
  std::lock_guard lock(mu_);
  Stmt s(*this, node_id ? kSelectNodeEvents : kSelectEvents);
  sqlite3_bind_int64(s.get(), 1, after);
  if (node_id) sqlite3_bind_int64(s.get(), 2, node_id);
  sqlite3_bind_int64(s.get(), 3, limit);
  return ReadEvents(s.get());
}

std::vector<EventRecord> Store::LastEvents(int64_t node_id, int64_t count) {
  std::lock_guard lock(mu_);
  Stmt s(*this, node_id ? kSelectLastNodeEvents : kSelectLastEvents);
  if (node_id) sqlite3_bind_int64(s.get(), 1, node_id);
  sqlite3_bind_int64(s.get(), 2, count);
  return ReadEvents(s.get());
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

void Store::SetRetention(int64_t events, int64_t runs) {
  std::lock_guard lock(mu_);
  keep_events_ = events;
  keep_runs_ = runs;
}

int64_t Store::LastEventId() {
  std::lock_guard lock(mu_);
  Stmt s(*this, kLastEventId);
  return sqlite3_step(s.get()) == SQLITE_ROW ? sqlite3_column_int64(s.get(), 0) : 0;
}

Status StoreTx::RecordSnapshot(const std::string& sha256, const std::string& version,
                               const std::string& who) {
  Store::Stmt s(store_, kRecordSnapshot);
  BindText(s.get(), 1, sha256);
  BindText(s.get(), 2, version);
  sqlite3_bind_int64(s.get(), 3, NowMs());
  BindText(s.get(), 4, who);
  if (sqlite3_step(s.get()) != SQLITE_DONE)
    return SqlError(store_.db_, "cannot record profile snapshot");
  return Status::Ok();
}

std::optional<std::string> StoreTx::SnapshotOf(const std::string& version) {
  Store::Stmt s(store_, kSnapshotOf);
  BindText(s.get(), 1, version);
  if (sqlite3_step(s.get()) != SQLITE_ROW) return std::nullopt;
  return ColumnText(s.get(), 0);
}

namespace {
// Rows of (id or seq, version, sha256, time, who): applied profiles and
// snapshots are read the same way.
std::vector<AppliedProfile> ReadAppliedRows(sqlite3_stmt* s) {
  std::vector<AppliedProfile> out;
  while (sqlite3_step(s) == SQLITE_ROW) {
    AppliedProfile a;
    a.id = sqlite3_column_int64(s, 0);
    a.version = ColumnText(s, 1);
    a.sha256 = ColumnText(s, 2);
    a.time_ms = sqlite3_column_int64(s, 3);
    a.who = ColumnText(s, 4);
    out.push_back(std::move(a));
  }
  return out;
}
}  // namespace

std::vector<AppliedProfile> StoreTx::Snapshots() {
  Store::Stmt s(store_, kSelectSnapshots);
  return ReadAppliedRows(s.get());
}

std::optional<std::string> Store::SnapshotOf(const std::string& version) {
  std::lock_guard lock(mu_);
  return StoreTx(*this).SnapshotOf(version);
}

std::vector<AppliedProfile> Store::Snapshots() {
  std::lock_guard lock(mu_);
  return StoreTx(*this).Snapshots();
}

std::vector<AppliedProfile> StoreTx::AppliedProfiles() {
  Store::Stmt s(store_, kSelectApplied);
  return ReadAppliedRows(s.get());
}

std::optional<AppliedProfile> StoreTx::CurrentProfile() {
  auto all = AppliedProfiles();
  if (all.empty()) return std::nullopt;
  return all.back();
}

std::vector<AppliedProfile> Store::AppliedProfiles() {
  std::lock_guard lock(mu_);
  return StoreTx(*this).AppliedProfiles();
}

std::optional<AppliedProfile> Store::CurrentProfile() {
  std::lock_guard lock(mu_);
  return StoreTx(*this).CurrentProfile();
}

}  // namespace prov

namespace prov {
namespace {

constexpr const char* kRunColumns =
    "id, node_id, node, kind, what, profile_sha256, status, started, finished, ok, changed, "
    "failed, skipped, message, who";
constexpr const char* kInsertRun =
    "INSERT INTO runs (node_id, node, kind, what, profile_sha256, status, started, finished, ok, "
    "changed, failed, skipped, message, who) "
    "VALUES (?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)";
constexpr const char* kUpdateRun =
    "UPDATE runs SET status = ?7, finished = ?9, ok = ?10, changed = ?11, failed = ?12, "
    "skipped = ?13, message = ?14 WHERE id = ?1";
constexpr const char* kInsertRunTask =
    "INSERT INTO run_tasks (run_id, playbook, play, task, module, location, item, status, "
    "changed, exit_code, stdout, stderr, msg, duration_ms) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)";
constexpr const char* kSelectRunTasks =
    "SELECT id, run_id, playbook, play, task, module, location, item, status, changed, "
    "exit_code, stdout, stderr, msg, duration_ms FROM run_tasks WHERE run_id = ?1 ORDER BY id";
const std::string kSelectRunById =
    std::string("SELECT ") + kRunColumns + " FROM runs WHERE id = ?1";
const std::string kSelectRuns = std::string("SELECT ") + kRunColumns +
                                " FROM runs WHERE (?1 = 0 OR node_id = ?1) AND "
                                "(?2 = '' OR status = ?2) ORDER BY id DESC LIMIT ?3";
const std::string kSelectRunning =
    std::string("SELECT ") + kRunColumns + " FROM runs WHERE status = 'running' ORDER BY id";

void BindRun(sqlite3_stmt* s, const RunRecord& r) {
  sqlite3_bind_int64(s, 1, r.id);
  sqlite3_bind_int64(s, 2, r.node_id);
  BindText(s, 3, r.node);
  BindText(s, 4, r.kind);
  BindText(s, 5, r.what);
  BindText(s, 6, r.profile_sha256);
  BindText(s, 7, r.status);
  sqlite3_bind_int64(s, 8, r.started_ms);
  sqlite3_bind_int64(s, 9, r.finished_ms);
  sqlite3_bind_int64(s, 10, r.ok);
  sqlite3_bind_int64(s, 11, r.changed);
  sqlite3_bind_int64(s, 12, r.failed);
  sqlite3_bind_int64(s, 13, r.skipped);
  BindText(s, 14, r.message);
  BindText(s, 15, r.who);
}

RunRecord ReadRun(sqlite3_stmt* s) {
  RunRecord r;
  r.id = sqlite3_column_int64(s, 0);
  r.node_id = sqlite3_column_int64(s, 1);
  r.node = ColumnText(s, 2);
  r.kind = ColumnText(s, 3);
  r.what = ColumnText(s, 4);
  r.profile_sha256 = ColumnText(s, 5);
  r.status = ColumnText(s, 6);
  r.started_ms = sqlite3_column_int64(s, 7);
  r.finished_ms = sqlite3_column_int64(s, 8);
  r.ok = sqlite3_column_int64(s, 9);
  r.changed = sqlite3_column_int64(s, 10);
  r.failed = sqlite3_column_int64(s, 11);
  r.skipped = sqlite3_column_int64(s, 12);
  r.message = ColumnText(s, 13);
  r.who = ColumnText(s, 14);
  return r;
}

}  // namespace

Status StoreTx::InsertRun(RunRecord& run) {
  if (!run.started_ms) run.started_ms = NowMs();
  Store::Stmt s(store_, kInsertRun);
  BindRun(s.get(), run);
  if (sqlite3_step(s.get()) != SQLITE_DONE)
    return SqlError(store_.db_, "cannot record a run on " + run.node);
  run.id = sqlite3_last_insert_rowid(store_.db_);
  if (store_.keep_runs_ > 0 && run.id % 256 == 0 && run.id > store_.keep_runs_) {
    // Their tasks go with them (ON DELETE CASCADE); a running one stays.
    Store::Stmt prune(store_, kPruneRuns);
    sqlite3_bind_int64(prune.get(), 1, run.id - store_.keep_runs_);
    if (sqlite3_step(prune.get()) != SQLITE_DONE)
      return SqlError(store_.db_, "cannot delete old runs");
  }
  return Status::Ok();
}

Status StoreTx::UpdateRun(const RunRecord& run) {
  Store::Stmt s(store_, kUpdateRun);
  BindRun(s.get(), run);
  if (sqlite3_step(s.get()) != SQLITE_DONE)
    return SqlError(store_.db_, "cannot update run " + std::to_string(run.id));
  if (run.status != "running" && run.started_ms > 0 && run.finished_ms >= run.started_ms)
    store_.pending_metrics_.push_back(
        {MetricObservation::Kind::kRun, run.node_id, run.kind, run.status, 0,
         static_cast<double>(run.finished_ms - run.started_ms) / 1000.0});
  return Status::Ok();
}

Status StoreTx::AppendRunTask(RunTaskRecord& t) {
  Store::Stmt s(store_, kInsertRunTask);
  sqlite3_stmt* q = s.get();
  sqlite3_bind_int64(q, 1, t.run_id);
  BindText(q, 2, t.playbook);
  BindText(q, 3, t.play);
  BindText(q, 4, t.task);
  BindText(q, 5, t.module);
  BindText(q, 6, t.location);
  BindText(q, 7, t.item);
  BindText(q, 8, t.status);
  sqlite3_bind_int(q, 9, t.changed ? 1 : 0);
  sqlite3_bind_int64(q, 10, t.exit_code);
  BindText(q, 11, t.stdout_tail);
  BindText(q, 12, t.stderr_tail);
  BindText(q, 13, t.msg);
  sqlite3_bind_int64(q, 14, t.duration_ms);
  if (sqlite3_step(q) != SQLITE_DONE)
    return SqlError(store_.db_, "cannot record a task of run " + std::to_string(t.run_id));
  t.id = sqlite3_last_insert_rowid(store_.db_);
  return Status::Ok();
}

Status Store::AppendRunTask(RunTaskRecord& task) {
  return Transact([&](StoreTx& tx) { return tx.AppendRunTask(task); });
}

std::vector<RunRecord> Store::ListRuns(const RunFilter& filter) {
  std::lock_guard lock(mu_);
  std::vector<RunRecord> out;
  if (!filter.ids.empty()) {
    Stmt s(*this, kSelectRunById.c_str());
    for (int64_t id : filter.ids) {
      sqlite3_bind_int64(s.get(), 1, id);
      if (sqlite3_step(s.get()) == SQLITE_ROW) out.push_back(ReadRun(s.get()));
      sqlite3_reset(s.get());
    }
    return out;
  }
  Stmt s(*this, kSelectRuns.c_str());
  sqlite3_bind_int64(s.get(), 1, filter.node_id);
  BindText(s.get(), 2, filter.status);
  sqlite3_bind_int64(s.get(), 3, filter.limit);
  while (sqlite3_step(s.get()) == SQLITE_ROW) out.push_back(ReadRun(s.get()));
  return out;
}

Result<RunRecord> Store::GetRun(int64_t id) {
  auto runs = ListRuns(RunFilter{0, "", {id}, 1});
  if (runs.empty()) return Status::NotFound("no run with id " + std::to_string(id));
  return runs.front();
}

std::vector<RunTaskRecord> Store::RunTasks(int64_t run_id) {
  std::lock_guard lock(mu_);
  Stmt s(*this, kSelectRunTasks);
  sqlite3_bind_int64(s.get(), 1, run_id);
  std::vector<RunTaskRecord> out;
  while (sqlite3_step(s.get()) == SQLITE_ROW) {
    sqlite3_stmt* q = s.get();
    RunTaskRecord t;
    t.id = sqlite3_column_int64(q, 0);
    t.run_id = sqlite3_column_int64(q, 1);
    t.playbook = ColumnText(q, 2);
    t.play = ColumnText(q, 3);
    t.task = ColumnText(q, 4);
    t.module = ColumnText(q, 5);
    t.location = ColumnText(q, 6);
    t.item = ColumnText(q, 7);
    t.status = ColumnText(q, 8);
    t.changed = sqlite3_column_int(q, 9) != 0;
    t.exit_code = sqlite3_column_int64(q, 10);
    t.stdout_tail = ColumnText(q, 11);
    t.stderr_tail = ColumnText(q, 12);
    t.msg = ColumnText(q, 13);
    t.duration_ms = sqlite3_column_int64(q, 14);
    out.push_back(std::move(t));
  }
  return out;
}

int64_t Store::InterruptRunningRuns() {
  int64_t count = 0;
  Status s = Transact([&](StoreTx& tx) -> Status {
    std::vector<RunRecord> running;
    {
      Stmt q(*this, kSelectRunning.c_str());
      while (sqlite3_step(q.get()) == SQLITE_ROW) running.push_back(ReadRun(q.get()));
    }
    for (RunRecord& r : running) {
      r.status = "interrupted";
      r.finished_ms = NowMs();
      r.message = "provisiond stopped while it ran";
      Status u = tx.UpdateRun(r);
      if (!u.ok()) return u;
      EventRecord e{.node_id = r.node_id,
                    .node = r.node,
                    .kind = "run",
                    .detail = "run " + std::to_string(r.id) + " (" + r.kind + " " + r.what +
                              ") interrupted: provisiond stopped while it ran",
                    .who = "provisiond"};
      u = tx.AppendEvent(e);
      if (!u.ok()) return u;
      ++count;
    }
    return Status::Ok();
  });
  return s.ok() ? count : 0;
}

}  // namespace prov
