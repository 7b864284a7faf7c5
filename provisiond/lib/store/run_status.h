// How runs, tasks and commands end, as types: the configurator, the runners,
// health checks, the recorder, the store and the API share these instead of
// comparing words. The words (ToString) are the API's, the database's and
// Ansible's, unchanged.
#pragma once

#include <optional>
#include <string_view>

namespace prov {

// A run of a playbook, a configure or health run on one node, and the
// outcome of a playbook or of health checks there.
enum class RunStatus {
  kRunning,      // not ended (a run's record only)
  kOk,           // every task ok, changed or skipped (or failed and ignored)
  kFailed,       // a task or a check failed
  kUnreachable,  // the node did not answer or its session broke
  kInterrupted,  // cancelled: provisiond stopped
  kRebooted,     // a reboot task restarted the node: it is configured again at its phone-home
};

// One task's result on one node (Ansible's words).
enum class TaskStatus { kOk, kChanged, kFailed, kSkipped, kUnreachable };

// A command or a file read on one node (`cmd`, `gather`).
enum class CommandStatus { kOk, kFailed, kUnreachable, kTimeout };

inline const char* ToString(RunStatus s) {
  switch (s) {
    case RunStatus::kRunning:
      return "running";
    case RunStatus::kOk:
      return "ok";
    case RunStatus::kFailed:
      return "failed";
    case RunStatus::kUnreachable:
      return "unreachable";
    case RunStatus::kInterrupted:
      return "interrupted";
    case RunStatus::kRebooted:
      return "rebooted";
  }
  return "failed";
}

inline std::optional<RunStatus> ParseRunStatus(std::string_view text) {
  for (RunStatus s : {RunStatus::kRunning, RunStatus::kOk, RunStatus::kFailed,
                      RunStatus::kUnreachable, RunStatus::kInterrupted, RunStatus::kRebooted})
    if (text == ToString(s)) return s;
  return std::nullopt;
}

inline const char* ToString(TaskStatus s) {
  switch (s) {
    case TaskStatus::kOk:
      return "ok";
    case TaskStatus::kChanged:
      return "changed";
    case TaskStatus::kFailed:
      return "failed";
    case TaskStatus::kSkipped:
      return "skipped";
    case TaskStatus::kUnreachable:
      return "unreachable";
  }
  return "failed";
}

inline std::optional<TaskStatus> ParseTaskStatus(std::string_view text) {
  for (TaskStatus s : {TaskStatus::kOk, TaskStatus::kChanged, TaskStatus::kFailed,
                       TaskStatus::kSkipped, TaskStatus::kUnreachable})
    if (text == ToString(s)) return s;
  return std::nullopt;
}

inline const char* ToString(CommandStatus s) {
  switch (s) {
    case CommandStatus::kOk:
      return "ok";
    case CommandStatus::kFailed:
      return "failed";
    case CommandStatus::kUnreachable:
      return "unreachable";
    case CommandStatus::kTimeout:
      return "timeout";
  }
  return "failed";
}

}  // namespace prov
