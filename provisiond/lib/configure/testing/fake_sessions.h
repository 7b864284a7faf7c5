// Test doubles for sessions.h, for unit tests where no sshd runs: a fake
// network of nodes, each with a host key, whose connector behaves as
// SshSession::Connect does (a key other than the pinned one is kForbidden,
// a node that does not answer kUnavailable) and whose sessions run scripts on
// this machine (LocalRemote). Real sshd targets: tests/sshd/sshd-targets.sh.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "configure/sessions.h"
#include "configure/ssh_client.h"
#include "playbook/remote.h"

namespace prov::testing {

class FakeSession : public NodeSession {
 public:
  FakeSession(std::string node, std::string host_key, bool pinned_now,
              std::shared_ptr<std::atomic<bool>> alive)
      : local_(std::move(node)),
        host_key_(std::move(host_key)),
        pinned_now_(pinned_now),
        alive_(std::move(alive)) {}

  const std::string& node() const override { return local_.node(); }
  Result<RemoteResult> Run(const std::string& script, const std::string& input,
                           const std::string& become_user, int timeout_ms) override {
    if (!*alive_) return Status::Error(Code::kUnavailable, "node " + node() + ": session broke");
    ++runs;
    return local_.Run(script, input, become_user, timeout_ms);
  }
  const std::string& host_key() const override { return host_key_; }
  bool pinned_now() const override { return pinned_now_; }
  bool alive() const override { return *alive_; }

  std::atomic<int> runs{0};

 private:
  LocalRemote local_;
  std::string host_key_;
  bool pinned_now_;
  std::shared_ptr<std::atomic<bool>> alive_;
};

// Nodes by address. Thread-safe.
class FakeNetwork {
 public:
  void Add(const std::string& ip, const std::string& host_key) {
    std::lock_guard lock(mu_);
    hosts_[ip].host_key = host_key;
  }
  // A node that stops answering: new connections fail, open sessions break.
  void Unplug(const std::string& ip) {
    std::lock_guard lock(mu_);
    auto& h = hosts_[ip];
    h.reachable = false;
    for (auto& alive : h.sessions) *alive = false;
  }
  void Plug(const std::string& ip) {
    std::lock_guard lock(mu_);
    hosts_[ip].reachable = true;
  }
  int connects() const {
    std::lock_guard lock(mu_);
    return connects_;
  }
  std::vector<SshEndpoint> endpoints() const {
    std::lock_guard lock(mu_);
    return endpoints_;
  }

  SessionConnector Connector() {
    return [this](const SshEndpoint& ep) -> Result<std::unique_ptr<NodeSession>> {
      std::lock_guard lock(mu_);
      ++connects_;
      endpoints_.push_back(ep);
      auto h = hosts_.find(ep.host);
      if (h == hosts_.end() || !h->second.reachable)
        return Status::Error(Code::kUnavailable, "node " + ep.node + " (" + ep.host + ":" +
                                                     std::to_string(ep.port) +
                                                     "): no SSH connection");
      const std::string& key = h->second.host_key;
      if (!ep.pinned_host_key.empty() && !SameHostKey(ep.pinned_host_key, key))
        return Status::Error(Code::kForbidden, "node " + ep.node + ": host key changed: pinned " +
                                                   ep.pinned_host_key + ", offered " + key);
      auto alive = std::make_shared<std::atomic<bool>>(true);
      h->second.sessions.push_back(alive);
      return std::unique_ptr<NodeSession>(
          new FakeSession(ep.node, key, ep.pinned_host_key.empty(), alive));
    };
  }

 private:
  struct Host {
    std::string host_key;
    bool reachable = true;
    std::vector<std::shared_ptr<std::atomic<bool>>> sessions;
  };
  mutable std::mutex mu_;
  std::map<std::string, Host> hosts_;
  int connects_ = 0;
  std::vector<SshEndpoint> endpoints_;
};

}  // namespace prov::testing
