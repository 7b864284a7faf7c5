#include "configure/health.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/strings.h"

namespace prov {

HealthOutcome RunHealthChecks(const Profile& profile, const NodeRecord& node, Remote& remote,
                              RunSink& sink, Store& store, bool stop_at_failure) {
  HealthOutcome out;
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
      r.status = TaskStatus::kUnreachable;
      r.msg = result.status().message();
    } else {
      r.exit_code = result->exit_code;
      r.stdout_tail = OutputTail(result->out);
      r.stderr_tail = OutputTail(result->err);
      r.status = result->exit_code == 0 ? TaskStatus::kOk : TaskStatus::kFailed;
      if (result->timed_out)
        r.msg = "timed out after " + std::to_string(check.timeout_s) + " s";
      else if (result->exit_code != 0)
        r.msg = "exit code " + std::to_string(result->exit_code);
    }
    sink.OnTask(node.name(), r);
    EventRecord e{.node_id = node.id,
                  .node = node.name(),
                  .kind = "health",
                  .detail = check.name + ": " +
                            (r.status == TaskStatus::kOk
                                 ? std::string("ok")
                                 : ToString(r.status) + std::string(" (") + r.msg + ")"),
                  .who = "provisiond"};
    store.RecordEvent(e);
    HealthCheckResult c{check.name, r.status, ""};
    if (r.status != TaskStatus::kOk) {
      std::string output = OutputTail(r.stderr_tail.empty() ? r.stdout_tail : r.stderr_tail, 300);
      c.detail = r.msg + (output.empty() ? "" : ": " + output);
      if (out.status == RunStatus::kOk) {
        out.status =
            r.status == TaskStatus::kUnreachable ? RunStatus::kUnreachable : RunStatus::kFailed;
        out.message = "health check " + check.name + ": " + c.detail;
      }
    }
    out.checks.push_back(std::move(c));
    if (r.status != TaskStatus::kOk && (stop_at_failure || r.status == TaskStatus::kUnreachable))
      break;
  }
  return out;
}

std::string HealthJson(const HealthOutcome& outcome, int64_t run_id, int64_t time_ms) {
  nlohmann::json checks = nlohmann::json::array();
  for (const auto& c : outcome.checks)
    checks.push_back({{"name", c.name}, {"status", ToString(c.status)}, {"detail", c.detail}});
  return nlohmann::json{
      {"time", time_ms}, {"status", ToString(outcome.status)}, {"run", run_id}, {"checks", checks}}
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {

// "2026-11-24T20:44:01Z".
std::string UtcStamp(int64_t ms) {
  const time_t t = static_cast<time_t>(ms / 1000);
  struct tm tm {};
  gmtime_r(&t, &tm);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void WriteHealthLog(Remote& remote, const Profile& profile, const NodeRecord& node,
                    const HealthOutcome& outcome, int64_t now) {
  // One line per check, then the status; check names and details are the
  // profile's and the checks' own text: on the node's stdin, never in the
  // script.
  std::string lines, failed;
  const std::string stamp = UtcStamp(now);
  for (const auto& c : outcome.checks) {
    std::string line = stamp + " " + node.name() + " " + c.name + " " + ToString(c.status) +
                       (c.detail.empty() ? "" : " (" + c.detail + ")");
    for (char& ch : line)
      if (ch == '\n' || ch == '\r') ch = ' ';
    lines += line + "\n";
    if (c.status != TaskStatus::kOk) failed += (failed.empty() ? "" : ", ") + c.name;
  }
  const std::string status = failed.empty() ? "ok" : "failed: " + failed;
  const std::string script = "set -e\nlog=" + ShlexQuote(profile.health_log) +
                             "\nmkdir -p \"$(dirname \"$log\")\"\ncat >>\"$log\"\n"
                             "printf '%s\\n' " +
                             ShlexQuote(status) +
                             " >\"$log.status.tmp\"\nmv -f \"$log.status.tmp\" \"$log.status\"\n";
  auto r = remote.Run(script, lines, "", 30000);
  if (!r.ok() || r->exit_code != 0)
    spdlog::warn("{}: health log not written on the node: {}", node.name(),
                 r.ok() ? OutputTail(r->err, 300) : r.status().message());
}

}  // namespace

void KeepHealth(Store& store, Remote* remote, const Profile& profile, const NodeRecord& node,
                int64_t run_id, const HealthOutcome& outcome) {
  const int64_t now = NowMs();
  const std::string health = HealthJson(outcome, run_id, now);
  Status s = store.Transact([&](StoreTx& tx) -> Status {
    auto n = tx.NodeById(node.id);
    if (!n.ok()) return Status::Ok();  // deleted meanwhile
    n->health = health;
    return tx.UpdateNode(*n);
  });
  if (!s.ok()) spdlog::warn("{}: health not kept: {}", node.name(), s.message());
  if (!remote || outcome.status == RunStatus::kUnreachable || outcome.checks.empty()) return;
  if (!profile.health_log.empty()) WriteHealthLog(*remote, profile, node, outcome, now);
  if (!profile.health_hook.empty()) RunHealthHook(store, *remote, profile, node, outcome);
}

void RunHealthHook(Store& store, Remote& remote, const Profile& profile, const NodeRecord& node,
                   const HealthOutcome& outcome) {
  if (profile.health_hook.empty() || outcome.status == RunStatus::kUnreachable ||
      outcome.checks.empty())
    return;
  std::string reason = outcome.message;
  const std::string prefix = "health check ";
  if (reason.rfind(prefix, 0) == 0) reason.erase(0, prefix.size());
  for (char& ch : reason)  // one line
    if (ch == '\n' || ch == '\r') ch = ' ';
  const std::string input =
      std::string(ToString(outcome.status)) + "\n" + reason + "\n" + node.name() + "\n";
  const std::string script =
      "IFS= read -r PROVISION_HEALTH_STATUS || exit 97\n"
      "IFS= read -r PROVISION_HEALTH_REASON || true\n"
      "IFS= read -r PROVISION_NODE || true\n"
      "export PROVISION_HEALTH_STATUS PROVISION_HEALTH_REASON PROVISION_NODE\n" +
      profile.health_hook + "\n";
  auto r = remote.Run(script, input, "", 60000);
  std::string what;
  if (!r.ok())
    what = "hook failed: " + r.status().message();
  else if (r->exit_code != 0)
    what = "hook failed (exit code " + std::to_string(r->exit_code) +
           "): " + OutputTail(r->err.empty() ? r->out : r->err, 300);
  else
    what = "hook: " + OutputTail(r->out.empty() ? std::string("done") : r->out, 300);
  for (char& ch : what)
    if (ch == '\n' || ch == '\r') ch = ' ';
  what.erase(what.find_last_not_of(' ') + 1);
  if (what.rfind("hook failed", 0) == 0) spdlog::warn("{}: health {}", node.name(), what);
  EventRecord e{.node_id = node.id,
                .node = node.name(),
                .kind = "health",
                .detail = what,
                .who = "provisiond"};
  store.RecordEvent(e);
}

Status MoveNodeOn(StoreTx& tx, const RunRecord& run, const std::string& profile_sha,
                  const std::string& summary) {
  if (run.kind != "configure" || run.status == RunStatus::kInterrupted) return Status::Ok();
  auto n = tx.NodeById(run.node_id);
  if (!n.ok() || n->state != NodeState::kConfiguring) return Status::Ok();
  if (run.status == RunStatus::kOk) {
    n->configured = profile_sha;
    return tx.Transition(*n, NodeState::kReady,
                         "profile " + run.what + " configured (" + summary + ")", run.who);
  }
  if (run.status == RunStatus::kRebooted) return Status::Ok();
  return tx.Transition(*n, NodeState::kFailed, "configure: " + run.message, run.who);
}

}  // namespace prov
