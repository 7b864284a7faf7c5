// Each node's one persistent SSH session, kept between runs and commands and
// used by one of them at a time, and the node's host key: a key seen at first
// contact is pinned (stored on the node, with an event), a key that differs
// from the pinned one is refused (with an event naming both fingerprints).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "base/result.h"
#include "configure/ssh_client.h"
#include "store/store.h"

namespace prov {

struct SessionSettings {
  std::string ssh_user = "root";
  int ssh_port = 22;
  int connect_timeout_ms = 10000;
};

// Opens a session to `endpoint`; the same contract as SshSession::Connect
// (a key other than endpoint.pinned_host_key is Code::kForbidden, no answer
// is Code::kUnavailable). Called from many threads at once.
using SessionConnector =
    std::function<Result<std::unique_ptr<NodeSession>>(const SshEndpoint& endpoint)>;

// The real connector: SshSession::Connect with the control key at `key_path`.
SessionConnector SshConnector(std::string key_path);

// Host keys as "type base64 [comment]": equal when type and key are; the
// comment does not count.
bool SameHostKey(const std::string& a, const std::string& b);

// Thread-safe. `store` must outlive it; leases must not outlive it.
class Sessions {
  struct Slot;

 public:
  Sessions(Store& store, SessionSettings settings, SessionConnector connect);
  ~Sessions();
  Sessions(const Sessions&) = delete;
  Sessions& operator=(const Sessions&) = delete;

  // The use of one node's session by one run or command, until it ends.
  class Lease {
   public:
    Lease(Lease&&) noexcept;
    ~Lease();

    // The node's session: the kept one while it is alive and shows the key
    // pinned on `node` now, else a new connection (to node.ip, pinned to
    // node.host_key). The pointer is valid until Drop() or the lease ends.
    // Fails with Code::kUnavailable when the node has no address or does not
    // answer, Code::kForbidden when its host key is not the pinned one.
    Result<NodeSession*> Get(const NodeRecord& node);
    // The session broke (the node is unreachable): the next Get connects.
    void Drop();

   private:
    friend class Sessions;
    Lease(Sessions& owner, std::shared_ptr<Slot> slot, std::unique_lock<std::mutex> lock);
    Sessions* owner_;
    std::shared_ptr<Slot> slot_;
    std::unique_lock<std::mutex> lock_;  // released before slot_ goes
  };

  // Waits until no other lease holds the node's session.
  Lease Acquire(int64_t node_id);
  // Never waits: while another lease holds the node's session, this one gets
  // a session of its own, closed when the lease ends (a command on a node
  // busy with a run).
  Lease AcquireOrSpare(int64_t node_id);
  // How many Acquire calls wait for the node's session now.
  int waiting(int64_t node_id);

 private:
  std::shared_ptr<Slot> SlotFor(int64_t node_id);
  Result<std::unique_ptr<NodeSession>> Connect(const NodeRecord& node);
  void PinFirstContact(const NodeRecord& node, const std::string& key);

  Store& store_;
  const SessionSettings settings_;
  const SessionConnector connect_;
  std::mutex mu_;                                   // guards slots_
  std::map<int64_t, std::shared_ptr<Slot>> slots_;  // by node id
};

}  // namespace prov
