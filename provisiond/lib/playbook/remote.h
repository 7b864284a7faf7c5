// What the playbook runner needs from a node: run a POSIX shell script there,
// as some user, with bytes on its stdin, within a time limit. The SSH client
// implements it over one persistent session per node; unit tests use a local
// implementation (LocalRemote) that runs /bin/sh on this machine.
#pragma once

#include <string>

#include "base/result.h"

namespace prov {

struct RemoteResult {
  int exit_code = -1;
  std::string out;  // stdout, whole
  std::string err;  // stderr, whole
  // Written by the script to file descriptor 3: "key=value" lines a module
  // uses to report what it did (changed=1, checksum=..., ...).
  std::string meta;
  bool timed_out = false;
};

class Remote {
 public:
  virtual ~Remote() = default;
  // The node's name, for messages.
  virtual const std::string& node() const = 0;
  // Runs `script` with /bin/sh. `become_user` empty: the login user;
  // otherwise that user (through sudo -n when the login user is not root).
  // A failing script is a RemoteResult with its exit code; an error Status
  // means the node could not be reached or the session broke
  // (Code::kUnavailable), so the caller marks the node unreachable.
  virtual Result<RemoteResult> Run(const std::string& script, const std::string& input,
                                   const std::string& become_user, int timeout_ms) = 0;
};

// Runs scripts on this machine (tests, and `localhost` targets). stdin and
// fd 3 are in-memory files (a script that never reads stdin cannot block);
// the script runs in its own process group, all of which is killed at the
// timeout (timed_out, exit_code -1). become_user other than ours runs
// through `runuser -u` when we are root, else `sudo -n -C 4 -u` (keeping fd 3
// needs closefrom_override in sudoers).
class LocalRemote : public Remote {
 public:
  explicit LocalRemote(std::string name = "localhost") : name_(std::move(name)) {}
  const std::string& node() const override { return name_; }
  Result<RemoteResult> Run(const std::string& script, const std::string& input,
                           const std::string& become_user, int timeout_ms) override;

 private:
  std::string name_;
};

}  // namespace prov
