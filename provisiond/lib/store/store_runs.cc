// What configuring nodes has done and with what: the runs over SSH and their
// tasks (the oldest deleted past the retention; those a stopped provisiond
// left running marked interrupted), and the profiles they apply, the
// versions applied and the snapshots that stand for them.
#include <string>
#include <string_view>

#include "store/store.h"
#include "store/store_sql.h"

namespace prov {
namespace {

constexpr const char* kRunColumns =
    "id, node_id, node, kind, what, profile_sha256, status, started, finished, ok, changed, "
    "failed, skipped, message, who";
constexpr const char* kInsertRun =
    "INSERT INTO runs (node_id, node, kind, what, profile_sha256, status, started, finished, ok, "
    "changed, failed, skipped, message, who) "
    "VALUES (?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15) RETURNING id";
constexpr const char* kUpdateRun =
    "UPDATE runs SET status = ?7, finished = ?9, ok = ?10, changed = ?11, failed = ?12, "
    "skipped = ?13, message = ?14 WHERE id = ?1";
constexpr const char* kPruneRuns = "DELETE FROM runs WHERE id <= ?1 AND status != 'running'";
constexpr const char* kInsertRunTask =
    "INSERT INTO run_tasks (run_id, playbook, play, task, module, location, item, status, "
    "changed, exit_code, stdout, stderr, msg, duration_ms) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14) RETURNING id";
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
constexpr const char* kInsertApplied =
    "INSERT INTO applied_profiles (version, sha256, time, who) VALUES (?1, ?2, ?3, ?4) "
    "RETURNING id";
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

void BindRun(sql::Statement& s, const RunRecord& r) {
  s.Bind(1, r.id);
  s.Bind(2, r.node_id);
  BindText(s, 3, r.node);
  BindText(s, 4, r.kind);
  BindText(s, 5, r.what);
  BindText(s, 6, r.profile_sha256);
  BindText(s, 7, ToString(r.status));
  s.Bind(8, r.started_ms);
  s.Bind(9, r.finished_ms);
  s.Bind(10, r.ok);
  s.Bind(11, r.changed);
  s.Bind(12, r.failed);
  s.Bind(13, r.skipped);
  BindText(s, 14, r.message);
  BindText(s, 15, r.who);
}

RunRecord ReadRun(const sql::Statement& s) {
  RunRecord r;
  r.id = s.Int(0);
  r.node_id = s.Int(1);
  r.node = s.Text(2);
  r.kind = s.Text(3);
  r.what = s.Text(4);
  r.profile_sha256 = s.Text(5);
  // A word this provisiond does not know (a newer one wrote it) reads as failed.
  r.status = ParseRunStatus(s.Text(6)).value_or(RunStatus::kFailed);
  r.started_ms = s.Int(7);
  r.finished_ms = s.Int(8);
  r.ok = s.Int(9);
  r.changed = s.Int(10);
  r.failed = s.Int(11);
  r.skipped = s.Int(12);
  r.message = s.Text(13);
  r.who = s.Text(14);
  return r;
}

// Rows of (id or seq, version, sha256, time, who): applied profiles and
// snapshots are read the same way.
std::vector<AppliedProfile> ReadAppliedRows(sql::Statement& s, std::string_view what) {
  std::vector<AppliedProfile> out;
  while (ReadRow(s, what)) {
    AppliedProfile a;
    a.id = s.Int(0);
    a.version = s.Text(1);
    a.sha256 = s.Text(2);
    a.time_ms = s.Int(3);
    a.who = s.Text(4);
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace

Status StoreTx::InsertRun(RunRecord& run) {
  if (!run.started_ms) run.started_ms = NowMs();
  Store::Stmt s(store_, kInsertRun);
  BindRun(*s, run);
  auto id = s->Insert("cannot record a run on " + run.node);
  if (!id.ok()) return id.status();
  run.id = *id;
  if (store_.keep_runs_ > 0 && run.id % 256 == 0 && run.id > store_.keep_runs_) {
    // Their tasks go with them (ON DELETE CASCADE); a running one stays.
    Store::Stmt prune(store_, kPruneRuns);
    prune->Bind(1, run.id - store_.keep_runs_);
    if (Status e = prune->Run("cannot delete old runs"); !e.ok()) return e;
  }
  return Status::Ok();
}

Status StoreTx::UpdateRun(const RunRecord& run) {
  Store::Stmt s(store_, kUpdateRun);
  BindRun(*s, run);
  if (Status e = s->Run("cannot update run " + std::to_string(run.id)); !e.ok()) return e;
  if (run.status != RunStatus::kRunning && run.started_ms > 0 && run.finished_ms >= run.started_ms)
    store_.pending_metrics_.push_back(
        {MetricObservation::Kind::kRun, run.node_id, run.kind, ToString(run.status), 0,
         static_cast<double>(run.finished_ms - run.started_ms) / 1000.0});
  return Status::Ok();
}

Status StoreTx::AppendRunTask(RunTaskRecord& t) {
  Store::Stmt s(store_, kInsertRunTask);
  s->Bind(1, t.run_id);
  BindText(*s, 2, t.playbook);
  BindText(*s, 3, t.play);
  BindText(*s, 4, t.task);
  BindText(*s, 5, t.module);
  BindText(*s, 6, t.location);
  BindText(*s, 7, t.item);
  BindText(*s, 8, ToString(t.status));
  s->Bind(9, t.changed ? 1 : 0);
  s->Bind(10, t.exit_code);
  BindText(*s, 11, t.stdout_tail);
  BindText(*s, 12, t.stderr_tail);
  BindText(*s, 13, t.msg);
  s->Bind(14, t.duration_ms);
  auto id = s->Insert("cannot record a task of run " + std::to_string(t.run_id));
  if (!id.ok()) return id.status();
  t.id = *id;
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
      s->Bind(1, id);
      if (ReadRow(*s, "cannot read a run")) out.push_back(ReadRun(*s));
      s->Reset();
    }
    return out;
  }
  Stmt s(*this, kSelectRuns.c_str());
  s->Bind(1, filter.node_id);
  BindText(*s, 2, filter.status ? ToString(*filter.status) : "");
  s->Bind(3, filter.limit);
  while (ReadRow(*s, "cannot list the runs")) out.push_back(ReadRun(*s));
  return out;
}

Result<RunRecord> Store::GetRun(int64_t id) {
  auto runs = ListRuns(RunFilter{0, std::nullopt, {id}, 1});
  if (runs.empty()) return Status::NotFound("no run with id " + std::to_string(id));
  return runs.front();
}

std::vector<RunTaskRecord> Store::RunTasks(int64_t run_id) {
  std::lock_guard lock(mu_);
  Stmt s(*this, kSelectRunTasks);
  s->Bind(1, run_id);
  std::vector<RunTaskRecord> out;
  while (ReadRow(*s, "cannot read the tasks of a run")) {
    RunTaskRecord t;
    t.id = s->Int(0);
    t.run_id = s->Int(1);
    t.playbook = s->Text(2);
    t.play = s->Text(3);
    t.task = s->Text(4);
    t.module = s->Text(5);
    t.location = s->Text(6);
    t.item = s->Text(7);
    t.status = ParseTaskStatus(s->Text(8)).value_or(TaskStatus::kFailed);
    t.changed = s->Int(9) != 0;
    t.exit_code = s->Int(10);
    t.stdout_tail = s->Text(11);
    t.stderr_tail = s->Text(12);
    t.msg = s->Text(13);
    t.duration_ms = s->Int(14);
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
      Status read = ForEachRow(*q, "cannot read the running runs",
                               [&](const sql::Statement& row) { running.push_back(ReadRun(row)); });
      if (!read.ok()) return read;
    }
    for (RunRecord& r : running) {
      r.status = RunStatus::kInterrupted;
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

Status StoreTx::InsertAppliedProfile(AppliedProfile& a) {
  if (!a.time_ms) a.time_ms = NowMs();
  Store::Stmt s(store_, kInsertApplied);
  BindText(*s, 1, a.version);
  BindText(*s, 2, a.sha256);
  s->Bind(3, a.time_ms);
  BindText(*s, 4, a.who);
  auto id = s->Insert("cannot record applied profile");
  if (!id.ok()) return id.status();
  a.id = *id;
  return Status::Ok();
}

Status StoreTx::RecordSnapshot(const std::string& sha256, const std::string& version,
                               const std::string& who) {
  Store::Stmt s(store_, kRecordSnapshot);
  BindText(*s, 1, sha256);
  BindText(*s, 2, version);
  s->Bind(3, NowMs());
  BindText(*s, 4, who);
  return s->Run("cannot record profile snapshot");
}

std::optional<std::string> StoreTx::SnapshotOf(const std::string& version) {
  Store::Stmt s(store_, kSnapshotOf);
  BindText(*s, 1, version);
  if (!ReadRow(*s, "cannot look up a profile snapshot")) return std::nullopt;
  return s->Text(0);
}

std::vector<AppliedProfile> StoreTx::Snapshots() {
  Store::Stmt s(store_, kSelectSnapshots);
  return ReadAppliedRows(*s, "cannot read the profile snapshots");
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
  return ReadAppliedRows(*s, "cannot read the applied profiles");
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
