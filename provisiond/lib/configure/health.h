// Health checks gate `ready`: after its playbooks, a configure run runs the
// profile's checks in order on the node, each one recorded as a task of the
// run (playbook "health", play "health checks") and as a "health" event. The
// first check that does not pass ends the run as failed, and a node becomes
// `ready` only from a configure run that ended ok.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "configure/play_runner.h"
#include "playbook/remote.h"
#include "profiles/profile.h"
#include "store/store.h"

namespace prov {

struct HealthCheckResult {
  std::string name;
  TaskStatus status = TaskStatus::kOk;  // ok, failed or unreachable
  std::string detail;                   // why not ok: "exit code 1: the end of its output"
};

struct HealthOutcome {
  RunStatus status = RunStatus::kOk;  // ok, failed or unreachable
  // "health check NAME: why[: the end of its output]" when not ok (the
  // first check that did not pass).
  std::string message;
  std::vector<HealthCheckResult> checks;  // in the profile's order, as run
};

// Runs `profile`'s health checks on `remote` as the login user, each within
// its timeout (a timeout fails the check); reports each to `sink` and
// appends its event to `store`. Stops at the first check that fails when
// `stop_at_failure` (the gate of a configure run), else runs them all (`node
// check`) unless the node stops answering.
HealthOutcome RunHealthChecks(const Profile& profile, const NodeRecord& node, Remote& remote,
                              RunSink& sink, Store& store, bool stop_at_failure = true);

// The outcome as the node's health (NodeRecord::health): JSON text.
std::string HealthJson(const HealthOutcome& outcome, int64_t run_id, int64_t time_ms);

// Keeps the outcome: on the node's row (health), and, when the profile
// names a health_log, on the node as seed 002 keeps its checks' results:
// each check a line appended to that file and the status ("ok", or "failed:
// NAME...") in <file>.status (written, then renamed). A node that cannot be
// written to is logged, not an error of the run.
void KeepHealth(Store& store, Remote* remote, const Profile& profile, const NodeRecord& node,
                int64_t run_id, const HealthOutcome& outcome);

// Runs the profile's health_hook on the node with the outcome in its
// environment (see Profile::health_hook); the values reach it on stdin, never
// in the script. What it prints, or why it failed, becomes a "health" event
// of the node. Nothing when the checks did not run (unreachable).
void RunHealthHook(Store& store, Remote& remote, const Profile& profile, const NodeRecord& node,
                   const HealthOutcome& outcome);

// The gate, inside FinishRun's transaction for a finished configure run
// (`summary` is its RunSummary): the node goes `ready`, configured with
// `profile_sha`, when the run is ok; `failed` with the run's message when it
// failed or was unreachable; stays when the run was interrupted or the node
// rebooted (configured again at its hello). A node that is no longer
// `configuring` (a new hello, retired, deleted meanwhile) is not this run's
// to change. Other kinds of run change no node.
Status MoveNodeOn(StoreTx& tx, const RunRecord& run, const std::string& profile_sha,
                  const std::string& summary);

}  // namespace prov
