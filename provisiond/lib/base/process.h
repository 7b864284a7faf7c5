// The one way provisiond runs other programs (dnsmasq, the NFS server,
// mmdebstrap, ipmitool): a full path and an argv vector, never a shell; an
// exit status; a timeout; and a printable command line with secrets redacted.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "base/result.h"

namespace prov {

struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0] is the full path of the program
  std::vector<std::string> env;   // extra NAME=value entries added to ours
  std::string output_file;        // stdout+stderr go here (appended); empty: /dev/null
  // argv entries whose values must never be logged (passwords): their index.
  std::vector<size_t> secret_args;
  // Run in a private mount namespace with its own empty /run (a tmpfs): for
  // daemons (the NFS server) that would otherwise talk to the host's services
  // through sockets under /run.
  bool private_run = false;
};

// "prog arg1 ***" for logs and events.
std::string DescribeCommand(const ProcessSpec& spec);

// Processes (from /proc) whose command line has `arg` as one of its
// arguments, exactly: the children a provisiond killed with SIGKILL left
// behind, found by the config file path only they were started with.
std::vector<pid_t> FindProcessesWithArg(const std::string& arg);

// Stops what FindProcessesWithArg(arg) finds: SIGTERM, then SIGKILL to those
// still there after `grace_ms`. Returns their pids.
std::vector<pid_t> StopProcessesWithArg(const std::string& arg, int grace_ms = 5000);

struct ProcessResult {
  int exit_code = -1;  // -1 when killed by a signal or timed out
  int signal = 0;
  bool timed_out = false;
  std::string output;  // combined stdout/stderr, at most the last 64 KiB
};

// Runs to completion (or `timeout_ms`, then SIGTERM, then SIGKILL). `on_line`,
// when given, sees each line of output as it arrives (progress of long jobs).
// When `*cancel` becomes true the program is stopped as on a timeout.
Result<ProcessResult> RunProcess(const ProcessSpec& spec, int timeout_ms,
                                 const std::function<void(const std::string&)>& on_line = {},
                                 const std::atomic<bool>* cancel = nullptr);

// A long-running child that this object owns: Stop() (or the destructor)
// sends SIGTERM, waits up to `grace_ms`, then SIGKILL. Not copyable.
class ChildProcess {
 public:
  static Result<ChildProcess> Start(const ProcessSpec& spec);
  // Takes over a running process that is not our child (one a provisiond
  // killed with SIGKILL left behind), watched through a pidfd: signals reach
  // that process and no other even if its pid is reused; its exit is seen,
  // its exit status is not (its parent is init now).
  static Result<ChildProcess> Adopt(pid_t pid);
  ChildProcess() = default;
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }
  bool adopted() const { return pidfd_ >= 0; }
  // Non-blocking: true (and fills `status`, clears pid) if it has exited. An
  // adopted process's status is unknown: 0.
  bool Reap(int& status);
  // Sends a signal (e.g. SIGHUP for a reload).
  Status Signal(int sig) const;
  void Stop(int grace_ms = 5000);

 private:
  void Clear();  // forgets the process (closes the pidfd)

  pid_t pid_ = -1;
  int pidfd_ = -1;  // adopted processes only
};

}  // namespace prov
