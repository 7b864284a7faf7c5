#include "configure/health.h"

#include <chrono>

namespace prov {

HealthOutcome RunHealthChecks(const Profile& profile, const NodeRecord& node, Remote& remote,
                              RunSink& sink, Store& store) {
  for (const auto& check : profile.health_checks) {
    auto start = std::chrono::steady_clock::now();
    TaskResult r;
    r.playbook = "health";
    r.play = "health checks";
    r.task = check.name;
    r.module = "health";
    r.where = profile.file;
    auto result = remote.Run(check.command, "", "", static_cast<int>(check.timeout_s) * 1000);
    r.duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - start)
                        .count();
    if (!result.ok()) {
      r.status = "unreachable";
      r.msg = result.status().message();
    } else {
      r.exit_code = result->exit_code;
      r.stdout_tail = OutputTail(result->out);
      r.stderr_tail = OutputTail(result->err);
      r.status = result->exit_code == 0 ? "ok" : "failed";
      if (result->timed_out)
        r.msg = "timed out after " + std::to_string(check.timeout_s) + " s";
      else if (result->exit_code != 0)
        r.msg = "exit code " + std::to_string(result->exit_code);
    }
    sink.OnTask(node.name(), r);
    EventRecord e{
        0,           0,
        node.id,     node.name(),
        "health",    check.name + ": " + (r.status == "ok" ? "ok" : r.status + " (" + r.msg + ")"),
        "provisiond"};
    store.AppendEvent(e);
    if (r.status != "ok") {
      HealthOutcome out;
      out.status = r.status == "unreachable" ? "unreachable" : "failed";
      std::string output = OutputTail(r.stderr_tail.empty() ? r.stdout_tail : r.stderr_tail, 300);
      out.message =
          "health check " + check.name + ": " + r.msg + (output.empty() ? "" : ": " + output);
      return out;
    }
  }
  return {};
}

Status MoveNodeOn(StoreTx& tx, const RunRecord& run, const std::string& profile_sha,
                  const std::string& summary) {
  if (run.kind != "configure" || run.status == "interrupted") return Status::Ok();
  auto n = tx.NodeById(run.node_id);
  if (!n.ok() || n->state != NodeState::kConfiguring) return Status::Ok();
  if (run.status == "ok") {
    n->configured = profile_sha;
    return tx.Transition(*n, NodeState::kReady,
                         "profile " + run.what + " configured (" + summary + ")", run.who);
  }
  if (run.status == "rebooted") return Status::Ok();
  return tx.Transition(*n, NodeState::kFailed, "configure: " + run.message, run.who);
}

}  // namespace prov
