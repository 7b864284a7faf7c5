#include "base/supervisor.h"

#include <spdlog/spdlog.h>
#include <sys/wait.h>

#include <chrono>
#include <vector>

#include "base/thread.h"

namespace prov {

Result<std::unique_ptr<SupervisedProcess>> SupervisedProcess::Start(
    std::string name, ProcessSpec spec, std::string what, EventFn on_event, int tick_ms,
    std::function<void()> on_tick, pid_t adopt) {
  std::unique_ptr<SupervisedProcess> p(new SupervisedProcess(std::move(name), std::move(spec),
                                                             std::move(what), std::move(on_event),
                                                             tick_ms, std::move(on_tick)));
  {
    std::lock_guard lock(p->mu_);
    Result<ChildProcess> adopted = Status::NotFound("nothing to adopt");
    if (adopt > 0) adopted = ChildProcess::Adopt(adopt);
    if (adopted.ok()) {
      p->child_ = std::move(*adopted);
      spdlog::info("{} (pid {}) left running by a provisiond that did not stop: adopted, {}",
                   p->name_, adopt, p->what_);
      p->Event("adopted (pid " + std::to_string(adopt) +
               "), left running by a provisiond that did not stop; " + p->what_);
    } else {
      Status s = p->Launch();
      if (!s.ok()) return s;
    }
  }
  p->thread_ = std::thread([raw = p.get()] { RunGuarded("supervisor", [raw] { raw->Run(); }); });
  return p;
}

SupervisedProcess::~SupervisedProcess() {
  stop_ = true;
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(mu_);
  if (child_.running()) {
    child_.Stop(10000);
    Event("stopped with provisiond");
  }
}

void SupervisedProcess::Event(const std::string& detail) {
  if (on_event_) on_event_(detail);
}

pid_t SupervisedProcess::pid() const {
  std::lock_guard lock(mu_);
  return child_.pid();
}

Status SupervisedProcess::Signal(int sig) const {
  std::lock_guard lock(mu_);
  return child_.Signal(sig);
}

Status SupervisedProcess::Restart(const std::string& why) {
  {
    std::lock_guard lock(mu_);
    if (!child_.running()) return Status::Ok();  // starting again anyway
    spdlog::info("{} restarting: {}", name_, why);
    Event("restarting: " + why);
    restart_now_ = true;
    if (Status s = child_.Signal(SIGKILL); !s.ok()) return s;
  }
  wake_.notify_all();  // the supervising thread starts it again
  return Status::Ok();
}

Status SupervisedProcess::Launch() {
  auto child = ChildProcess::Start(spec_);
  if (!child.ok()) return child.status();
  child_ = std::move(*child);
  spdlog::info("{} started (pid {}) {}", name_, child_.pid(), what_);
  Event("started (pid " + std::to_string(child_.pid()) + ") " + what_);
  return Status::Ok();
}

void SupervisedProcess::Run() {
  int backoff_ms = 500;
  auto next_start = std::chrono::steady_clock::now();
  while (!stop_) {
    {
      std::unique_lock lock(mu_);
      wake_.wait_for(lock, std::chrono::milliseconds(tick_ms_), [&] { return stop_.load(); });
      if (stop_) break;
      int status = 0;
      const bool adopted = child_.adopted();
      if (restart_now_) {
        // Restart(): killed on purpose; started again as soon as it is gone.
        for (int i = 0; i < 500 && child_.running() && !child_.Reap(status); ++i)
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        if (!child_.running()) {
          restart_now_ = false;
          next_start = std::chrono::steady_clock::now();
        }
      } else if (child_.Reap(status)) {
        std::string how = adopted ? "(adopted) exited"
                          : WIFEXITED(status)
                              ? "exited with status " + std::to_string(WEXITSTATUS(status))
                              : "was killed by signal " + std::to_string(WTERMSIG(status));
        spdlog::warn("{} {}; restarting in {} ms", name_, how, backoff_ms);
        Event(how + "; restarting");
        next_start = std::chrono::steady_clock::now() + std::chrono::milliseconds(backoff_ms);
        backoff_ms = std::min(backoff_ms * 2, 30000);
      }
      if (!child_.running() && std::chrono::steady_clock::now() >= next_start) {
        Status s = Launch();
        if (s.ok()) {
          restarts_++;
        } else {
          spdlog::error("cannot restart {}: {}", name_, s.message());
          next_start = std::chrono::steady_clock::now() + std::chrono::milliseconds(backoff_ms);
        }
      }
    }
    if (on_tick_) on_tick_();
  }
}

pid_t AdoptOrStopLeftover(const std::string& name, const std::string& arg, bool same_config,
                          const SupervisedProcess::EventFn& on_event) {
  std::vector<pid_t> found = FindProcessesWithArg(arg);
  if (found.size() == 1 && same_config) return found.front();
  const std::string why = same_config ? "" : " (its config changed)";
  for (pid_t pid : StopProcessesWithArg(arg)) {
    spdlog::warn("stopped {} (pid {}) left running by a provisiond that did not stop{}", name, pid,
                 why);
    if (on_event)
      on_event("stopped pid " + std::to_string(pid) +
               ", left running by a provisiond that did not stop" + why);
  }
  return -1;
}

}  // namespace prov
