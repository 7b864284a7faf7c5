// The inventory in SQLite or PostgreSQL (through db/sql.h): nodes, events, runs,
// applied profiles. store.cc opens it and commits; store_nodes.cc,
// store_events.cc and store_runs.cc hold the queries. One connection
// guarded by a mutex (WAL, synchronous=NORMAL, busy_timeout); statements are
// prepared once and bound. A state change and its event are written in one
// transaction, so the history never disagrees with the inventory.
//
// Transactions are group-committed: callers that arrive while one commits
// queue up, and the first of them runs every queued transaction in one
// SQLite transaction, each in a savepoint of its own (one's failure rolls
// back only its own writes), then commits once for all (LevelDB's writer
// queue). Each caller still returns only once its writes are committed.
// The nodes table is also kept in memory (store/node_cache.h): lookups and
// the node list outside a transaction read that, not SQLite.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/result.h"
#include "db/sql.h"
#include "store/boot_stage.h"
#include "store/node_cache.h"
#include "store/node_state.h"
#include "store/run_status.h"
#include "store/store_metrics.h"

namespace prov {

struct NodeRecord {
  int64_t id = 0;
  std::string mac;
  std::string hostname;  // empty while only discovered
  std::string ip;
  NodeState state = NodeState::kEnrolled;
  std::string reason;
  std::string profile_version;
  std::string image_version;
  std::string facts = "{}";  // JSON text
  std::string host_key;
  std::string token;
  std::optional<BootStage> stage;  // the last boot stage it passed
  std::string power = "{}";        // JSON: {"driver": ...}
  // The profile hash this boot of the node was configured with ("" since
  // its last hello, or never).
  std::string configured;
  // The one-boot ticket outstanding ("" when none): migration 007. Like the
  // token, never in an API answer, an event or a log.
  std::string ticket;
  // The loader its UEFI firmware is given, when chosen for this node: "grub"
  // or "ipxe"; "" : its profile's choice, else dhcp.uefi_loader (migration
  // 008).
  std::string uefi_loader;
  // Its latest health checks, JSON (migration 009); "" when never checked.
  std::string health;
  // The disk wipes allowed for its next boot, JSON: by-id names or ["*"]
  // (migration 011); "" when none. Spent by that boot's hello.
  std::string storage_wipe;
  // It boots its own installed OS, adopted over SSH (migration 012): never
  // netbooted; its profile's image-stage playbooks run on it at configure.
  bool installed = false;
  // The key of the image stage that last ran on it (migration 013), so that
  // its bake playbooks run again only when they change; "" until then.
  std::string installed_baked;
  int64_t last_seen_ms = 0;
  int64_t created_ms = 0;
  int64_t updated_ms = 0;

  // The name to show: the hostname, or the MAC for a discovered node.
  const std::string& name() const { return hostname.empty() ? mac : hostname; }
};

// Built by named fields (EventRecord{.node_id = n.id, .kind = "power", ...});
// every member has a default, so what a kind of event has not stays empty.
struct EventRecord {
  int64_t id = 0;
  int64_t time_ms = 0;
  int64_t node_id = 0;  // 0: not about one node
  std::string node{};
  std::string kind{};
  std::string detail{};
  std::string who{};
  // Boot events ("boot"): the stage the node passed, in a column of its own
  // (the detail starts with its name, for people).
  std::optional<BootStage> stage = std::nullopt;
};

struct AppliedProfile {
  int64_t id = 0;
  std::string version;
  std::string sha256;
  int64_t time_ms = 0;
  std::string who;
};

// One run over SSH on one node: the profile's playbooks ("configure"), a
// playbook run by hand ("playbook"), or a command ("cmd").
struct RunRecord {
  int64_t id = 0;
  int64_t node_id = 0;
  std::string node;
  std::string kind;  // configure | playbook | cmd
  std::string what;  // profile version, playbook file or command
  std::string profile_sha256;
  RunStatus status = RunStatus::kRunning;
  int64_t started_ms = 0;
  int64_t finished_ms = 0;
  int64_t ok = 0, changed = 0, failed = 0, skipped = 0;
  std::string message;  // the failed task and why
  std::string who;
};

struct RunTaskRecord {
  int64_t id = 0;
  int64_t run_id = 0;
  std::string playbook, play, task, module;
  std::string location;  // file:line
  std::string item;
  TaskStatus status = TaskStatus::kOk;
  bool changed = false;
  int64_t exit_code = -1;
  std::string stdout_tail, stderr_tail, msg;
  int64_t duration_ms = 0;
};

// Where a node is on the cluster network: what the dnsmasq hosts file and
// every node's /etc/hosts list.
struct NodeAddress {
  std::string mac;
  std::string ip;
  std::string hostname;
};
// The listed nodes' addresses (enrolled and later, not retired, with an IP),
// ordered by node id, and the address counter they were read at.
struct AddressBook {
  int64_t version = 0;
  std::vector<NodeAddress> entries;
};

struct RunFilter {
  int64_t node_id = 0;              // 0: all nodes
  std::optional<RunStatus> status;  // nullopt: any
  std::vector<int64_t> ids;         // empty: any
  int64_t limit = 100;              // the newest ones
};

struct NodeFilter {
  std::optional<NodeState> state;
  std::optional<std::string> profile_version;
};

int64_t NowMs();

class Store;

// The operations available inside one transaction. Only valid inside the
// callback given to Store::Transact.
class StoreTx {
 public:
  Result<NodeRecord> FindNode(const std::string& hostname_or_mac);
  Result<NodeRecord> NodeById(int64_t id);
  // Inserts; fills id, created/updated and a fresh token when empty.
  Result<NodeRecord> InsertNode(NodeRecord node);
  // Writes every column of `node` (matched by id).
  Status UpdateNode(NodeRecord& node);
  Status DeleteNode(int64_t id);
  // Appends; fills id and time (when 0).
  Status AppendEvent(EventRecord& event);
  // Moves the node to `to` when the life cycle allows it and appends the
  // event "state" with "from -> to: detail".
  Status Transition(NodeRecord& node, NodeState to, const std::string& detail,
                    const std::string& who);
  Status InsertAppliedProfile(AppliedProfile& applied);
  std::vector<NodeRecord> ListNodes(const NodeFilter& filter = {});
  // How many nodes are in `state` (by index).
  int64_t CountInState(NodeState state);
  // Fills id (and started when 0).
  Status InsertRun(RunRecord& run);
  Status UpdateRun(const RunRecord& run);
  Status AppendRunTask(RunTaskRecord& task);
  std::vector<AppliedProfile> AppliedProfiles();
  std::optional<AppliedProfile> CurrentProfile();
  // Makes snapshot `sha256` the one that stands for `version` (profiles/snapshot.h).
  Status RecordSnapshot(const std::string& sha256, const std::string& version,
                        const std::string& who);
  // The snapshot that stands for `version` now, if it was ever committed.
  std::optional<std::string> SnapshotOf(const std::string& version);
  // Every committed snapshot (id: its seq), the one committed last at the end.
  std::vector<AppliedProfile> Snapshots();

 private:
  friend class Store;
  explicit StoreTx(Store& store) : store_(store) {}
  Store& store_;
};

class Store {
 public:
  // Opens (creating if needed) the database at `path` and migrates it to the
  // latest schema. ":memory:" works for tests.
  static Result<std::unique_ptr<Store>> Open(const std::string& path);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Runs `fn` in one IMMEDIATE transaction; commits when it returns Ok,
  // rolls back otherwise (and on exceptions). Wakes WaitForEvents callers.
  Status Transact(const std::function<Status(StoreTx&)>& fn);
  // Runs `fn` under the store's lock without a write transaction: a
  // consistent read of several tables.
  void Read(const std::function<void(StoreTx&)>& fn);

  // From memory (the node cache), like ListNodes, NodeList and FindNodeByIp.
  Result<NodeRecord> FindNode(const std::string& hostname_or_mac);
  std::vector<NodeRecord> ListNodes(const NodeFilter& filter = {});
  // Every node, sorted as ListNodes sorts them, shared until a node changes.
  std::shared_ptr<const NodeListSnapshot> NodeList() { return nodes_.List(); }
  // Moves whenever a node's row changes.
  int64_t NodesVersion() const { return nodes_.version(); }
  std::map<NodeState, int64_t> CountByState();
  Status AppendEvent(EventRecord& event);
  // AppendEvent for what is done already and can only be told (a refusal, a
  // removal, a check's outcome): a failure to record it is logged, the
  // caller goes on.
  void RecordEvent(EventRecord event);
  // Events with id > `after`, oldest first; node_id 0 means all nodes.
  std::vector<EventRecord> ListEvents(int64_t after, int64_t node_id, int64_t limit);
  // The newest `count` events (of one node when node_id != 0), oldest first.
  std::vector<EventRecord> LastEvents(int64_t node_id, int64_t count);
  // Blocks until an event with id > `after` exists, `timeout_ms` passes or
  // WakeWaiters is called; returns false once WakeWaiters has been called.
  bool WaitForEvents(int64_t after, int64_t timeout_ms);
  // Keeps the newest `events` events and `runs` runs (with their tasks);
  // older ones are deleted as new ones come (every 256th insert: at most 256
  // more than asked are kept). 0: keep everything.
  void SetRetention(int64_t events, int64_t runs);

  // Wakes every WaitForEvents caller now and makes later calls return at
  // once (provisiond is stopping: long-polls must not hold up the stop).
  void WakeWaiters();
  int64_t LastEventId();
  // Moves whenever a node's address entry changes (migration 006); one
  // indexed read.
  int64_t AddressesVersion();
  // Moves when the loader some node gets may have changed (its profile, its
  // own choice, a profile applied): migration 008.
  int64_t BootLoadersVersion();
  // The profile versions of nodes that boot (not discovered, not retired).
  std::vector<std::string> ProfileVersionsInUse();
  // The nodes that boot and chose a UEFI loader of their own, or have one of
  // `versions` as their profile.
  std::vector<NodeRecord> UefiLoaderChoosers(const std::vector<std::string>& versions);
  // The address book, read again only when AddressesVersion moved since the
  // last call; shared by every caller until then.
  std::shared_ptr<const AddressBook> Addresses();
  // The node (not retired) that holds `ip`, by index.
  Result<NodeRecord> FindNodeByIp(const std::string& ip);
  std::optional<AppliedProfile> CurrentProfile();
  std::vector<AppliedProfile> AppliedProfiles();
  std::optional<std::string> SnapshotOf(const std::string& version);
  std::vector<AppliedProfile> Snapshots();

  // Runs, newest first.
  std::vector<RunRecord> ListRuns(const RunFilter& filter);
  Result<RunRecord> GetRun(int64_t id);
  std::vector<RunTaskRecord> RunTasks(int64_t run_id);
  Status AppendRunTask(RunTaskRecord& task);
  // Runs still "running" from a provisiond that stopped become
  // "interrupted" (with an event each); returns how many.
  int64_t InterruptRunningRuns();

  int schema_version();

  // Boot-stage and run durations as Prometheus histograms (store_metrics.h),
  // from what committed transactions wrote since the store was opened.
  // With the group commit's counters.
  std::string MetricsText() const;
  // Transactions run and SQLite commits made for them since the store was
  // opened (fewer commits than transactions: some were committed together).
  struct CommitStats {
    int64_t transactions = 0;
    int64_t commits = 0;
  };
  CommitStats TransactStats() const;
  // Callers of Transact queued or committing now.
  size_t QueuedTransactions();

  // Replaces this database's whole content by `from`'s (SQLite's backup
  // API) and forgets what it had derived from the old content (the event
  // cursor, the address book). The fuzz harness restores a pristine store
  // this way between inputs. `from` must be another store; no transaction
  // may be open on either.
  Status CopyFrom(Store& from);
  // Rows changed by writes since the store was opened (SQLite's total
  // changes, rolled-back ones included): unchanged means no write happened.
  int64_t ChangeCount();

 private:
  friend class StoreTx;
  class Stmt;
  struct Writer;  // one caller of Transact, queued
  explicit Store(sql::Database db);
  // Runs the queued transactions of `batch` in one SQLite transaction and
  // commits it; each writer's status (and exception) is set.
  void CommitBatch(const std::vector<Writer*>& batch);
  Status LoadNodes();                 // fills nodes_ from the table; mu_ held
  Result<int64_t> ReadLastEventId();  // mu_ held
  Status Exec(const char* sql);
  void ExecAfterError(const char* sql);       // a rollback: a failure is logged
  sql::Statement& Prepared(const char* sql);  // cached per SQL text

  sql::Database db_;
  std::mutex mu_;  // guards db_ and statements_
  // Prepared once each, for the connection's life; finalized before it
  // closes.
  std::map<const char*, sql::Statement> statements_;
  std::condition_variable events_cv_;
  int64_t last_event_id_ = 0;                     // guarded by mu_
  int64_t keep_events_ = 0;                       // guarded by mu_
  int64_t keep_runs_ = 0;                         // guarded by mu_
  std::shared_ptr<const AddressBook> addresses_;  // guarded by mu_
  bool stopping_ = false;                         // guarded by mu_
  // What the open transaction wrote that /metrics counts: guarded by mu_,
  // handed to metrics_ when it commits.
  std::vector<MetricObservation> pending_metrics_;
  StoreMetrics metrics_;
  // The node rows the open transaction wrote, as they are now (nullopt:
  // deleted), handed to nodes_ when it commits: guarded by mu_.
  std::vector<std::pair<int64_t, std::optional<NodeRecord>>> pending_nodes_;
  NodeCache nodes_;
  // WAL checkpoints (the log copied back into the database file, with an
  // fsync) run on a thread with a connection of its own, not inside the
  // commit that crossed SQLite's threshold: a commit only appends to the
  // log. None for ":memory:".
  void OnWalCommit(int pages);
  void CheckpointLoop();
  std::optional<sql::Database> checkpoint_db_;
  std::thread checkpointer_;
  std::mutex checkpoint_mu_;
  std::condition_variable checkpoint_cv_;
  int wal_pages_ = 0;             // guarded by checkpoint_mu_
  bool checkpoint_stop_ = false;  // guarded by checkpoint_mu_
  std::mutex writers_mu_;         // guards writers_
  std::deque<Writer*> writers_;
  std::atomic<int64_t> transactions_{0}, commits_{0};
};

// A function that appends an event of `kind` (no node, by `kind`) with the
// detail it is given; a failure to record is logged. For the parts that only
// report (the supervised programs).
std::function<void(const std::string& detail)> EventRecorder(Store& store, std::string kind);

// Applies migrations 1..`upto` to a database that is no store yet;
// Store::Open applies all. Exposed for the migration tests.
Status ApplyMigrations(sql::Database& db, int upto);

}  // namespace prov
