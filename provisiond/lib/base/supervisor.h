// A program provisiond keeps running (dnsmasq, the NFS server): started with
// provisiond, restarted with a growing delay and an event when it dies,
// stopped with provisiond. A tick callback runs on the supervising thread
// between checks (dnsmasq's log reading and reservation sync).
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "base/process.h"

namespace prov {

class SupervisedProcess {
 public:
  // Records one event about the program (its detail: "started on br0",
  // "exited with status 1, restarting in 2 s").
  using EventFn = std::function<void(const std::string& detail)>;

  // `name` names the program in logs; `what` is the detail of the "started"
  // event ("on br0, full DHCP"). `adopt` > 0: that process, left running by
  // a provisiond killed with SIGKILL and started from the same `spec`, is
  // taken over instead of starting another (it keeps serving meanwhile);
  // restarts, if it dies, start `spec`.
  static Result<std::unique_ptr<SupervisedProcess>> Start(std::string name, ProcessSpec spec,
                                                          std::string what, EventFn on_event,
                                                          int tick_ms,
                                                          std::function<void()> on_tick,
                                                          pid_t adopt = -1);
  ~SupervisedProcess();  // stops the program (SIGTERM, then SIGKILL) and the thread

  pid_t pid() const;
  int restarts() const { return restarts_; }
  Status Signal(int sig) const;
  // Kills the program (no grace) and has the supervising thread start it
  // again at once, without the crash backoff; `why` goes into the event.
  Status Restart(const std::string& why);

 private:
  SupervisedProcess(std::string name, ProcessSpec spec, std::string what, EventFn on_event,
                    int tick_ms, std::function<void()> on_tick)
      : name_(std::move(name)),
        spec_(std::move(spec)),
        what_(std::move(what)),
        on_event_(std::move(on_event)),
        tick_ms_(tick_ms),
        on_tick_(std::move(on_tick)) {}
  Status Launch();  // requires mu_
  void Run();
  void Event(const std::string& detail);

  const std::string name_;
  const ProcessSpec spec_;
  const std::string what_;
  const EventFn on_event_;
  const int tick_ms_;
  const std::function<void()> on_tick_;

  mutable std::mutex mu_;
  ChildProcess child_;        // guarded by mu_
  bool restart_now_ = false;  // Restart() asked; guarded by mu_
  std::atomic<int> restarts_{0};
  std::atomic<bool> stop_{false};
  std::condition_variable wake_;
  std::thread thread_;
};

// What to do with processes that a provisiond killed with SIGKILL left
// running, found by `arg` (the config file only they were started with): the
// one to adopt (pid) when there is exactly one and `same_config` (it runs with
// the config provisiond would start it with: it keeps serving nodes, no gap);
// otherwise they are stopped, each with an event, and -1 is returned.
pid_t AdoptOrStopLeftover(const std::string& name, const std::string& arg, bool same_config,
                          const SupervisedProcess::EventFn& on_event);

}  // namespace prov
