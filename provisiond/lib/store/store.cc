// The store's connection and its write path: opening the database (its file
// mode, pragmas, migrations, the node cache filled), the statement cache, the
// group-committed transactions and the WAL checkpointer, and the commit
// counters /metrics shows. The queries are in units by what they read and
// write: store_nodes.cc, store_events.cc and store_runs.cc.
#include "store/store.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <stdexcept>
#include <string_view>

#include "base/thread.h"
#include "base/unique_fd.h"
#include "store/migrations.h"
#include "store/store_sql.h"

namespace prov {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

namespace {

// The log's length, in pages, that wakes the checkpointer: SQLite's own
// threshold (wal_autocheckpoint's default).
constexpr int kCheckpointPages = 1000;

}  // namespace

Status ApplyMigrations(sql::Database& db, int upto) {
  return sql::ApplyMigrations(
      db, db.dialect() == sql::Dialect::kPostgres ? PostgresMigrations() : Migrations(), upto,
      "database");
}

Result<std::unique_ptr<Store>> Store::Open(const std::string& path) {
  // The database holds every node's token and ticket: only its owner reads
  // it, from its creation on (SQLite gives its -wal and -shm files the same
  // mode). A database an older provisiond left readable by others is
  // tightened. (On PostgreSQL, the server's roles say who reads it.)
  const bool postgres = sql::IsPostgresUri(path);
  const bool file = !postgres && path != ":memory:";
  if (file) {
    UniqueFd created(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    struct stat st {};
    if (!created.valid() && ::stat(path.c_str(), &st) == 0 && (st.st_mode & 077) != 0) {
      spdlog::warn("{} was readable by others (mode {:o}): now 0600", path, st.st_mode & 0777);
      ::chmod(path.c_str(), 0600);
    }
  }
  auto db = sql::Database::Open(path, sql::Database::Mode::kReadWriteCreate);
  if (!db.ok()) {
    // The store's own words and code for it: "cannot open database PATH: ...",
    // an internal error.
    constexpr std::string_view kCannotOpen = "cannot open ";
    std::string msg = db.status().message();
    if (msg.starts_with(kCannotOpen)) msg.insert(kCannotOpen.size(), "database ");
    return Status::Internal(msg);
  }
  std::unique_ptr<Store> store(new Store(std::move(*db)));
  if (!postgres) {
    for (const char* pragma : {"PRAGMA journal_mode = WAL", "PRAGMA synchronous = NORMAL",
                               "PRAGMA busy_timeout = 5000", "PRAGMA foreign_keys = ON"}) {
      Status s = store->Exec(pragma);
      if (!s.ok()) return s;
    }
  }
  Status s = ApplyMigrations(store->db_, static_cast<int>(Migrations().size()));
  if (!s.ok()) return Status::Internal(store->db_.path() + ": " + s.message());
  {
    std::lock_guard lock(store->mu_);
    auto last = store->ReadLastEventId();
    if (!last.ok()) return last.status();
    store->last_event_id_ = *last;
    if (Status loaded = store->LoadNodes(); !loaded.ok()) return loaded;
  }
  if (file) {
    auto checkpoints = sql::Database::Open(path, sql::Database::Mode::kReadWrite);
    // A connection that has not read the database does not know it is in
    // WAL mode: its checkpoints did nothing, and the log grew until the
    // store closed (32 MB after 1,500 events of 5 kB, the database file
    // still 4 KiB). One read first.
    if (checkpoints.ok()) {
      checkpoints->SetBusyTimeout(5000);
      if (auto mode = checkpoints->QueryInt("PRAGMA user_version"); !mode.ok())
        checkpoints = mode.status();
    }
    if (checkpoints.ok()) {
      store->checkpoint_db_ = std::move(*checkpoints);
      Store* self = store.get();
      store->db_.SetWalHook([self](int pages) { self->OnWalCommit(pages); });
      store->checkpointer_ =
          std::thread([self] { RunGuarded("WAL checkpoint", [self] { self->CheckpointLoop(); }); });
    } else {
      // Without the second connection, commits checkpoint as SQLite does by default.
      spdlog::warn("{}: no connection for checkpoints ({}): commits checkpoint", path,
                   checkpoints.status().message());
    }
  }
  return store;
}

Store::Store(sql::Database db) : db_(std::move(db)) {}

Store::~Store() {
  if (checkpointer_.joinable()) {
    {
      std::lock_guard lock(checkpoint_mu_);
      checkpoint_stop_ = true;
    }
    checkpoint_cv_.notify_all();
    checkpointer_.join();
  }
  checkpoint_db_.reset();
  statements_.clear();    // finalized: a connection closes only without them
  db_ = sql::Database();  // the last connection: it checkpoints the log
}

void Store::OnWalCommit(int pages) {
  bool wake;
  {
    std::lock_guard lock(checkpoint_mu_);
    wal_pages_ = pages;
    wake = pages >= kCheckpointPages;
  }
  if (wake) checkpoint_cv_.notify_one();
}

void Store::CheckpointLoop() {
  std::unique_lock lock(checkpoint_mu_);
  for (;;) {
    checkpoint_cv_.wait(lock, [&] { return checkpoint_stop_ || wal_pages_ >= kCheckpointPages; });
    if (checkpoint_stop_) return;
    wal_pages_ = 0;
    lock.unlock();
    // PASSIVE: copies what no reader still needs, waits for no one; the
    // next commit after a complete one starts the log over.
    if (Status s = checkpoint_db_->Checkpoint(); !s.ok())
      spdlog::warn("WAL checkpoint failed: {}", s.message());
    lock.lock();
  }
}

Status Store::Exec(const char* sql) {
  // The error names the statement: "COMMIT: database or disk is full".
  return db_.Exec(sql, sql);
}

void Store::ExecAfterError(const char* sql) {
  // The writers already have their error; a rollback that fails too leaves
  // nothing more to tell them, only the log (SQLite rolls back by itself on
  // the errors that make ROLLBACK fail).
  if (Status s = Exec(sql); !s.ok()) spdlog::error("store: {}", s.message());
}

sql::Statement& Store::Prepared(const char* sql) {
  auto it = statements_.find(sql);
  if (it != statements_.end()) return it->second;
  // The store's own SQL: one that does not prepare is a bug, not a state of
  // the database.
  auto s = db_.PreparePersistent(sql);
  if (!s.ok()) throw std::logic_error(s.status().message());
  return statements_.emplace(sql, std::move(*s)).first->second;
}

Status Store::CopyFrom(Store& from) {
  if (&from == this) return Status::Invalid("a store cannot be copied onto itself");
  std::scoped_lock lock(mu_, from.mu_);
  if (Status s = sql::CopyDatabase(from.db_, db_); !s.ok()) return s;
  // The copy is in: what was derived from the old content goes either way.
  auto last = ReadLastEventId();
  last_event_id_ = last.ok() ? *last : 0;
  addresses_.reset();
  Status loaded = LoadNodes();
  return last.ok() ? loaded : last.status();
}

int64_t Store::ChangeCount() {
  std::lock_guard lock(mu_);
  return db_.TotalChanges();
}

int Store::schema_version() {
  std::lock_guard lock(mu_);
  auto version = db_.SchemaVersion();
  if (!version.ok()) spdlog::warn("store: {}", version.status().message());
  return version.ok() ? static_cast<int>(*version) : 0;
}

void Store::SetRetention(int64_t events, int64_t runs) {
  std::lock_guard lock(mu_);
  keep_events_ = events;
  keep_runs_ = runs;
}

void Store::Read(const std::function<void(StoreTx&)>& fn) {
  std::lock_guard lock(mu_);
  StoreTx tx(*this);
  fn(tx);
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
    auto last = ReadLastEventId();
    if (!last.ok()) spdlog::warn("store: {}", last.status().message());
    last_event_id_ = last.ok() ? *last : 0;
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

}  // namespace prov
