// The configurator's pool of workers: jobs run in the order they were
// submitted on at most `max_workers` threads, started on demand (an idle
// provisiond holds no threads; a burst of 1,000 hellos holds `max_workers`).
// Keyed jobs (one node's configuration) never run twice at once: asking
// again while one waits or runs makes it run once more when it ends, so the
// last change is always applied and a burst of requests costs one extra run.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace prov {

class WorkQueue {
 public:
  explicit WorkQueue(int max_workers);
  ~WorkQueue();  // Close(), then Join()
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Queues `job`; a worker is started when every worker is busy and fewer
  // than `max_workers` run. An exception out of a job is logged, not
  // rethrown. Returns false (and drops the job) once Close() was called.
  bool Submit(std::function<void()> job);

  enum class Keyed {
    kQueued,  // a new job for the key was queued
    kAgain,   // one waits or runs: it runs once more when it ends
    kClosed,  // the queue is closed: nothing will run
  };
  // Queues `job` for `key` unless a job for that key waits or runs; then
  // that job is run once more after it ends (however often this is called
  // meanwhile), unless the queue is closed by then. The job that runs again
  // is the first one queued for the key.
  Keyed SubmitOnce(int64_t key, std::function<void()> job);

  // Refuses new jobs and drops the ones still waiting; running jobs go on
  // (tell them to stop before Join()).
  void Close();
  // Waits for every worker to end. Call after Close(); not from a job.
  void Join();

  // Jobs waiting or running now.
  int active() const;
  // Worker threads started and not yet joined (at most max_workers).
  int workers() const;

 private:
  void Work();
  void RunSafely(const std::function<void()>& job);

  const int max_workers_;
  mutable std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> workers_;
  bool closed_ = false;
  int busy_ = 0;
  std::set<int64_t> keyed_;  // keys whose job waits or runs
  std::set<int64_t> again_;  // keys to run once more when their job ends
};

}  // namespace prov
