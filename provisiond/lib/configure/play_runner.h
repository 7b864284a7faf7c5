// Runs playbooks on nodes. Each node runs its tasks on its own (Ansible's
// "free" strategy): a slow or failed node never holds up or stops another.
// Every task result goes to a RunSink as it happens (the store records it,
// the CLI shows progress).
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "playbook/playbook.h"
#include "playbook/remote.h"
#include "store/run_status.h"

namespace prov {

// The part of a task's output kept with its result (runs, run_tasks, the
// web page): the last 4 KiB, where errors usually are; messages quote less.
constexpr size_t kOutputTailBytes = 4096;
std::string OutputTail(std::string_view output, size_t bytes = kOutputTailBytes);

struct TaskResult {
  std::string playbook;  // file name
  std::string play;
  std::string task;  // name, or "module: args" when unnamed
  std::string module;
  std::string where;  // file:line
  TaskStatus status = TaskStatus::kOk;
  bool changed = false;
  int exit_code = -1;       // -1: no command ran
  std::string stdout_tail;  // the last 4 KiB
  std::string stderr_tail;
  std::string msg;
  int64_t duration_ms = 0;
  std::string item;  // the loop item, as JSON text, when in a loop
  // no_log (the task's, its play's, or implied by a secret it uses): only
  // status, changed, exit code and duration are recorded.
  bool no_log = false;
};

class RunSink {
 public:
  virtual ~RunSink() = default;
  virtual void OnTask(const std::string& node, const TaskResult& result) = 0;
};

struct NodeRunOutcome {
  std::string node;
  // ok: every task ok/changed/skipped (or failed with ignore_errors);
  // failed: a task failed; unreachable: the session broke; rebooted: a
  // reboot task restarted the node (it is configured again at its next
  // phone-home); interrupted: cancelled.
  RunStatus status = RunStatus::kOk;
  int ok = 0, changed = 0, failed = 0, skipped = 0;
  std::string failed_task;                               // "task (file:line): msg" of the failure
  nlohmann::json registered = nlohmann::json::object();  // vars set by register
};

// run_once across the nodes of one run (a playbook run on several nodes):
// the first node to reach such a task runs it; the others wait for it and
// take its result as theirs (registered value, facts, handlers notified). A
// failure there fails them all, as Ansible fails every host of the play; a
// node that could not finish it (unreachable, cancelled) leaves it to the
// next one. A configure run has one node, so there run_once just runs.
class RunOnceTable {
 public:
  struct Done {
    std::string node;                     // who ran it
    TaskStatus status = TaskStatus::kOk;  // ok, changed, skipped or failed
    std::string msg;
    nlohmann::json result;
  };
  enum class Turn { kRun, kTaken, kCancelled };
  // kRun: the caller runs the task and then calls Finish; kTaken: `done`
  // holds the result; kCancelled: `cancel` was set while waiting.
  Turn Take(const std::string& key, const std::atomic<bool>* cancel, Done* done);
  // The result of a task the caller ran; nullopt: it could not finish it.
  void Finish(const std::string& key, std::optional<Done> done);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::optional<Done>> tasks_;  // nullopt: running
};

struct RunOptions {
  int default_timeout_s = 600;
  // Delays of until/retries and wait_for/reboot polls go through here so
  // tests need not sleep; returns false when the run is cancelled.
  std::function<bool(int ms)> sleep;
  const std::atomic<bool>* cancel = nullptr;
  // Variables that win over the play's and the task's (`-e` on the command
  // line, a profile's vars for its playbooks), as Ansible's extra vars do.
  nlohmann::json extra_vars = nlohmann::json::object();
  // Extra vars filled from the secrets store (ResolveSecretVars): a task that
  // names one is no_log, and no value is ever recorded (every result, message
  // and the outcome pass through RedactSecrets).
  std::vector<std::string> secret_vars;
  std::vector<std::string> secret_values;
  // Where delegate_to: localhost runs (the control node); null: such a task
  // fails.
  Remote* local = nullptr;
  // Shared by the nodes of one run; null: run_once tasks run on each node.
  std::shared_ptr<RunOnceTable> once;
};

// Runs every play of `playbook` that selects `hostname` on `remote`.
// `vars` holds everything the node's tasks can see (inventory_hostname,
// groups, hostvars, provisiond_facts, profile and extra vars).
NodeRunOutcome RunPlaybook(const Playbook& playbook, const std::string& hostname, Remote& remote,
                           const nlohmann::json& vars, RunSink* sink, const RunOptions& options);

}  // namespace prov
