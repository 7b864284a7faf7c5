// SSH to the nodes with libssh: one persistent session per node,
// authenticated with the control node's key, the node's host key checked
// against the one pinned at phone-home. Scripts run in a long-lived shell
// worker on the node (one per become-user), so a task costs one round trip
// and no new process on the sshd side.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "base/result.h"
#include "playbook/remote.h"

namespace prov {

struct SshEndpoint {
  std::string node;  // name for messages
  std::string host;  // address
  int port = 22;
  std::string user = "root";
  // "ssh-ed25519 AAAA..." as pinned; empty: accept the key the node shows
  // and report it (SshSession::pinned_now()).
  std::string pinned_host_key;
  int connect_timeout_ms = 10000;
  // Non-empty: log in with this password instead of the control key (an
  // adoption's one-time password; never stored, never in a message).
  std::string password;
  // False: connect only to see the host key (node adopt's first look, before
  // the machine has provisiond's key); the session runs nothing.
  bool authenticate = true;
};

// A user name provisiond logs in as or becomes on a node: letters, digits,
// '_', '-', '.', at most 64, not starting with '-'.
bool ValidUserName(const std::string& u);

// A connected session to one node as the configurator uses it (sessions.h):
// scripts run through Remote, plus the host key the node showed. SshSession
// is the real one; unit tests put fakes behind it.
class NodeSession : public Remote {
 public:
  // The host key the node showed, "type base64".
  virtual const std::string& host_key() const = 0;
  // True when no key was pinned and this one was accepted.
  virtual bool pinned_now() const = 0;
  // False once the connection broke.
  virtual bool alive() const = 0;
};

// Threads: one SshSession is used by one thread at a time (its calls are not
// synchronised); different sessions may be used from different threads at
// once. libssh is initialised once per process on the first Connect.
//
// Run() starts, on first use for each become-user, a shell worker on the node
// (one channel of the session; sudo -n, or runuser when logged in as root)
// and sends it each task as one request; the worker runs the script with
// stdin, stdout, stderr and fd 3 on files in its own temporary directory.
// The node needs GNU coreutils (head -c, stat -c) and /proc. A timeout_ms
// <= 0 means no time limit. On a timeout the worker's process group is
// killed and the next Run starts a new worker.
class SshSession : public NodeSession {
 public:
  // Connects, checks the host key, authenticates with the private key at
  // `key_path`. A host key that differs from the pinned one is
  // Code::kForbidden with both fingerprints in the message; no answer is
  // Code::kUnavailable.
  static Result<std::unique_ptr<SshSession>> Connect(const SshEndpoint& endpoint,
                                                     const std::string& key_path);
  ~SshSession() override;

  const std::string& node() const override;
  Result<RemoteResult> Run(const std::string& script, const std::string& input,
                           const std::string& become_user, int timeout_ms) override;

  const std::string& host_key() const override;
  bool pinned_now() const override;
  bool alive() const override;

 private:
  struct Impl;
  explicit SshSession(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace prov
