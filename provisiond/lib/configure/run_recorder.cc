#include "configure/run_recorder.h"

#include <spdlog/spdlog.h>

#include <cstdio>

namespace prov {

using json = nlohmann::json;

json ToJson(const RunRecord& r) {
  return {{"id", r.id},
          {"node", r.node},
          {"kind", r.kind},
          {"what", r.what},
          {"profile_sha256", r.profile_sha256},
          {"status", ToString(r.status)},
          {"started_ms", r.started_ms},
          {"finished_ms", r.finished_ms},
          {"ok", r.ok},
          {"changed", r.changed},
          {"failed", r.failed},
          {"skipped", r.skipped},
          {"message", r.message},
          {"who", r.who}};
}

json ToJson(const RunTaskRecord& t) {
  return {{"id", t.id},
          {"playbook", t.playbook},
          {"play", t.play},
          {"task", t.task},
          {"module", t.module},
          {"location", t.location},
          {"item", t.item},
          {"status", ToString(t.status)},
          {"changed", t.changed},
          {"exit_code", t.exit_code},
          {"stdout", t.stdout_tail},
          {"stderr", t.stderr_tail},
          {"msg", t.msg},
          {"duration_ms", t.duration_ms}};
}

void RunRecorder::OnTask(const std::string& node, const TaskResult& r) {
  RunTaskRecord t;
  t.run_id = run_.id;
  t.playbook = r.playbook;
  t.play = r.play;
  t.task = r.task;
  t.module = r.module;
  t.location = r.where;
  t.item = r.item;
  t.status = r.status;
  t.changed = r.changed;
  t.exit_code = r.exit_code;
  t.stdout_tail = r.stdout_tail;
  t.stderr_tail = r.stderr_tail;
  t.msg = r.msg;
  t.duration_ms = r.duration_ms;
  if (r.status == TaskStatus::kOk) ++run_.ok;
  if (r.status == TaskStatus::kChanged) ++run_.changed;
  if (r.status == TaskStatus::kFailed || r.status == TaskStatus::kUnreachable) ++run_.failed;
  if (r.status == TaskStatus::kSkipped) ++run_.skipped;
  Status s = store_.Transact([&](StoreTx& tx) -> Status {
    Status a = tx.AppendRunTask(t);
    return a.ok() ? tx.UpdateRun(run_) : a;
  });
  if (!s.ok()) spdlog::error("{}: cannot record task {}: {}", node, r.task, s.message());
  spdlog::debug("{}: {} [{}] {}", node, ToString(r.status), r.where, r.task);
}

std::string RunSummary(const RunRecord& run, int64_t elapsed_ms) {
  char seconds[32];
  snprintf(seconds, sizeof seconds, "%.1f s", static_cast<double>(elapsed_ms) / 1000.0);
  std::string summary = std::string(ToString(run.status)) + ": " + std::to_string(run.ok) +
                        " ok, " + std::to_string(run.changed) + " changed, " +
                        std::to_string(run.failed) + " failed, " + std::to_string(run.skipped) +
                        " skipped in " + seconds;
  if (!run.message.empty()) summary += "; " + run.message;
  return summary;
}

void FinishRun(Store& store, RunRecord& run, int64_t elapsed_ms,
               const std::function<Status(StoreTx&, const std::string& summary)>& also) {
  run.finished_ms = NowMs();
  const std::string summary = RunSummary(run, elapsed_ms);
  Status s = store.Transact([&](StoreTx& tx) -> Status {
    Status u = tx.UpdateRun(run);
    if (!u.ok()) return u;
    EventRecord e{.node_id = run.node_id,
                  .node = run.node,
                  .kind = "run",
                  .detail = "run " + std::to_string(run.id) + " (" + run.kind + " " + run.what +
                            ") " + summary,
                  .who = run.who};
    u = tx.AppendEvent(e);
    if (!u.ok() || !also) return u;
    return also(tx, summary);
  });
  if (!s.ok())
    spdlog::error("{}: cannot record the end of run {}: {}", run.node, run.id, s.message());
  spdlog::info("{}: run {} {}", run.node, run.id, summary);
}

}  // namespace prov
