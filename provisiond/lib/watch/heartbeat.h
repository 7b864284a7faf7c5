// The heartbeat: what provisiond learns of an installed machine between its
// boots. A netbooted node tells provisiond when it boots (its boot requests,
// its phone-home); a machine that keeps its own OS (node adopt) asks it for
// nothing. So every interval provisiond reads the boot id of each installed
// node that is ready or failed, over the node's pinned SSH session:
//
//  - another boot id than its facts' means the machine has booted since:
//    its facts are collected again (provision-facts over SSH), it goes
//    `booting` → `booted` with the two boot ids in the event, and it is
//    configured again (its playbooks, its health checks), as a netbooted
//    node is at its phone-home;
//  - no answer: one "heartbeat" event when it stops answering, one when it
//    answers again; last_seen says when it last answered.
//
// Recovery: a node whose profile has `recovery:` (profiles/profile.h) is read
// too, installed or netbooted, while it is ready. When it has not answered for
// the profile's silent_for, it is power-cycled through its power driver (a
// "power" event by "heartbeat" saying why and which try it is, that `node
// why` shows). A netbooted node then goes `booting` and is not read until its
// boot path has brought it back to ready; an installed one is given
// silent_for again (its reboot is seen by its boot id); the tries are counted from those
// events, so a restart of provisiond forgets none. One more than `cycles`
// within `window` and it is `failed` with the reason instead: a machine that
// hangs again after each cycle is not cycled forever.
//
// Nodes being configured, in maintenance or retired are not read.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "base/result.h"
#include "profiles/inventory.h"

namespace prov {

// How the heartbeat reaches nodes (the daemon: the configurator's sessions;
// unit tests: fakes).
struct HeartbeatProbes {
  // Each node's boot id now, in the order given (one round reads them all at
  // once), or why it could not be read.
  std::function<std::vector<Result<std::string>>(const std::vector<NodeRecord>&)> boot_ids;
  // A node's facts, as its adoption collected them (unvalidated).
  std::function<Result<nlohmann::json>(const NodeRecord&)> facts;
  // Starts configuring a node that is `booted` with a profile.
  std::function<void(const std::string& node)> configure;
  // Power-cycles a node through its power config, recording the power event
  // with `why` (power/power.h: NodePower).
  std::function<Result<std::string>(const NodeRecord& node, const std::string& why)> power_cycle;
  // The clock silences are timed by (null: NowMs).
  std::function<int64_t()> now;
};

class Heartbeat {
 public:
  // `interval_ms` > 0. Start() starts the rounds; the destructor stops them.
  Heartbeat(Inventory& inventory, HeartbeatProbes probes, int interval_ms);
  ~Heartbeat();
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  void Start();
  // One round, now, on the caller's thread (the thread's rounds and tests).
  void Beat();

 private:
  void Heard(const NodeRecord& node, const std::string& boot_id);
  void Silent(const NodeRecord& node, const std::string& why, const Recovery& recovery);
  // Cycles a silent node or fails it; true when it was sent booting.
  bool Recover(const NodeRecord& node, const Recovery& recovery, int64_t silent_ms);
  void Event(const NodeRecord& node, const std::string& detail);

  Inventory& inventory_;
  HeartbeatProbes probes_;
  const int interval_ms_;
  // Whether each node answered the last round it was read in (absent: not
  // read yet): an event only when that changes.
  std::map<std::string, bool> answered_;
  // The new boot whose facts could not be read yet, by node: its event is
  // not repeated each round.
  std::map<std::string, std::string> unread_boot_;
  // Since when each silent node has not answered (as the rounds saw it; a
  // power cycle starts its wait again).
  std::map<std::string, int64_t> silent_since_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace prov
