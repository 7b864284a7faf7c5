// Control nodes sharing one PostgreSQL inventory: exactly one is active, the
// one holding the lease (a row of control_lease, store/migrations/014), and
// only it serves the boot network and writes. The others are standbys: they
// wait, and take the lease over when its holder has let it lapse.
//
// The database's clock decides when a lease lapses: a standby takes it only
// once the database's now is past `expires`, which its holder set to the
// database's now at its last renewal plus lease_ms. The holder keeps its own
// deadline on its monotonic clock: lease_ms - stop_margin_ms after it *sent*
// its last successful renewal (so before the database stamped it). When a
// renewal has not succeeded by then (the database unreachable, a renewal
// stuck in the network), it stops serving and exits, stop_margin_ms before
// any standby may take over: never two DHCP servers, never two writers.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "base/result.h"
#include "db/sql.h"
#include "ha/control_nodes.h"

namespace prov {

struct LeaseSettings {
  std::string database;  // a postgresql:// URI (the inventory's)
  std::string holder;    // this control node's name
  int64_t lease_ms = 10000;
  int64_t renew_ms = 2000;
  int64_t stop_margin_ms = 3000;
};

// The relations the timings must keep: at least two renewals fit before the
// holder gives up (2 x renew_ms + stop_margin_ms <= lease_ms), and the margin
// leaves time to stop (stop_margin_ms >= 1000).
Status CheckLeaseTimings(const LeaseSettings& s);

struct LeaseState {
  std::string holder;  // "" when no one ever held it
  int64_t epoch = 0;   // takeovers so far (1: the first holder)
  int64_t since_ms = 0;
  int64_t expires_ms = 0;
  int64_t now_ms = 0;  // the database's clock when read
};

class ControlLease {
 public:
  // A connection of its own: renewals never wait behind the store's writes.
  static Result<std::unique_ptr<ControlLease>> Open(const LeaseSettings& settings);
  ~ControlLease();

  // One attempt: takes the lease when it is free or lapsed, renews it when
  // it is ours. True when this control node holds it now.
  Result<bool> TryTake();
  // The lease as the database has it.
  Result<LeaseState> Read();

  // Waits as a standby until this control node holds the lease or `stop`
  // says so (then false); `standby` is told each holder seen.
  Result<bool> AwaitActive(const std::function<bool()>& stop,
                           const std::function<void(const LeaseState&)>& standby);
  // As the active: renews every renew_ms from a thread, and a watchdog calls
  // `fence` once when the deadline passes without a renewal (`fence` stops
  // serving; it should not return).
  void KeepActive(std::function<void(const std::string& why)> fence);

  // This control node's row of control_nodes, and every control node's
  // (ha/control_nodes.h), through the lease's connection.
  Status Report(const ControlNodeReport& report);
  Result<std::vector<ControlNodeReport>> ControlNodes();

  // What this control node's tenure is: since when (the database's clock)
  // and which takeover it was.
  LeaseState tenure() const;
  const LeaseSettings& settings() const { return settings_; }

 private:
  ControlLease(LeaseSettings settings, sql::Database db, sql::Statement take, sql::Statement read);
  void RenewLoop();
  void WatchLoop(const std::function<void(const std::string&)>& fence);

  LeaseSettings settings_;
  sql::Database db_;
  // Prepared once: a renewal is one round trip. Used under db_mu_ (the
  // renewer's thread, and a standby's or a test's calls).
  std::mutex db_mu_;
  sql::Statement take_, read_;
  mutable std::mutex mu_;  // guards the members below
  LeaseState tenure_;
  std::chrono::steady_clock::time_point deadline_{};
  std::string last_error_;
  bool stop_ = false;
  std::condition_variable cv_;
  std::thread renewer_, watchdog_;
};

}  // namespace prov
