#include "configure/work_queue.h"

#include <spdlog/spdlog.h>

#include <exception>

namespace prov {

WorkQueue::WorkQueue(int max_workers) : max_workers_(max_workers < 1 ? 1 : max_workers) {}

WorkQueue::~WorkQueue() {
  Close();
  Join();
}

bool WorkQueue::Submit(std::function<void()> job) {
  std::lock_guard lock(mu_);
  if (closed_) return false;
  jobs_.push_back(std::move(job));
  const int started = static_cast<int>(workers_.size());
  if (started < max_workers_ && busy_ + static_cast<int>(jobs_.size()) > started)
    workers_.emplace_back([this] { Work(); });
  cv_.notify_one();
  return true;
}

WorkQueue::Keyed WorkQueue::SubmitOnce(int64_t key, std::function<void()> job) {
  {
    std::lock_guard lock(mu_);
    if (closed_) return Keyed::kClosed;
    if (keyed_.count(key)) {
      again_.insert(key);
      return Keyed::kAgain;
    }
    keyed_.insert(key);
  }
  bool queued = Submit([this, key, job = std::move(job)] {
    while (true) {
      // A throwing job must not keep its key: the key would refuse every
      // later job as "again" with nothing left to run it.
      RunSafely(job);
      std::lock_guard lock(mu_);
      if (!again_.erase(key) || closed_) {
        keyed_.erase(key);
        return;
      }
    }
  });
  if (!queued) {
    // Closed between the two locks.
    std::lock_guard lock(mu_);
    keyed_.erase(key);
    again_.erase(key);
    return Keyed::kClosed;
  }
  return Keyed::kQueued;
}

void WorkQueue::Close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    jobs_.clear();
  }
  cv_.notify_all();
}

void WorkQueue::Join() {
  // Submit refuses new workers once closed, so the list no longer grows.
  std::vector<std::thread> workers;
  {
    std::lock_guard lock(mu_);
    workers.swap(workers_);
  }
  for (auto& t : workers) t.join();
}

int WorkQueue::active() const {
  std::lock_guard lock(mu_);
  return busy_ + static_cast<int>(jobs_.size());
}

int WorkQueue::workers() const {
  std::lock_guard lock(mu_);
  return static_cast<int>(workers_.size());
}

void WorkQueue::RunSafely(const std::function<void()>& job) {
  try {
    job();
  } catch (const std::exception& e) {
    spdlog::error("configuration job failed: {}", e.what());
  }
}

void WorkQueue::Work() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return closed_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // closed
    auto job = std::move(jobs_.front());
    jobs_.pop_front();
    ++busy_;
    lock.unlock();
    RunSafely(job);
    lock.lock();
    --busy_;
  }
}

}  // namespace prov
