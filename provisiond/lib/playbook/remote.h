// What the playbook runner needs from a node: run a POSIX shell script there,
// as some user, with bytes on its stdin, within a time limit. The SSH client
// implements it over one persistent session per node; unit tests use a local
// implementation (LocalRemote) that runs /bin/sh on this machine, and image
// stage one (ChrootRemote) that runs it inside an image's root tree.
#pragma once

#include <string>
#include <utility>
#include <vector>

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

// Runs scripts inside an image's root tree on this machine (image stage: a
// profile's playbooks run once, on the control node, on the image rather
// than on each booted node). Each Run is one `unshare --mount --uts` whose
// private mount namespace gets proc, /sys and /dev (recursive binds), fresh
// tmpfs on /tmp, /run and /dev/shm (what a task leaves there never reaches
// the image, and no socket of this machine's daemons shows in /run), and
// this machine's /etc/resolv.conf bound read-only over the tree's (so apt
// resolves names; the tree's file is left as it was); then chroot(8) runs
// /bin/sh of the tree, as root or through the tree's `runuser -u`. The
// mounts, and a host name a task sets, go with the namespace when the
// script ends. Missing mount points (/proc, /sys, /dev, /tmp, /run) are
// created; nothing else in the tree is touched. The environment is ours with
// PATH, HOME=/root, LC_ALL=C and DEBIAN_FRONTEND=noninteractive set and
// TMPDIR dropped (a path of this machine); http_proxy and the like pass
// through. stdin, fd 3, the timeout and the process group's kill are
// LocalRemote's. A tree that cannot be entered (no /bin/sh, a mount that
// fails) is a failed script (exit code 125) whose stderr names the tree.
// Needs root (mounts and chroot).
class ChrootRemote : public Remote {
 public:
  ChrootRemote(std::string name, std::string root)
      : name_(std::move(name)), root_(std::move(root)) {}
  const std::string& node() const override { return name_; }
  const std::string& root() const { return root_; }
  Result<RemoteResult> Run(const std::string& script, const std::string& input,
                           const std::string& become_user, int timeout_ms) override;

 private:
  std::string name_;
  std::string root_;
};

// The argv that runs a command of this machine's in what ChrootRemote's
// scripts see of `root` (the same namespaces and mounts), without entering
// it: append the command. ansible-playbook at image stage runs so, with its
// chroot connection into `root`.
std::vector<std::string> ImageStageCommand(const std::string& root);

// Before and after the image stage works in `root` (a profile's bake, the
// packages an imported image gets on top): Begin writes a policy-rc.d that
// says no to every daemon start (Debian's maintainer scripts ask it) and lets
// dpkg skip its syncs (a tree that fails is thrown away); End removes both,
// with any policy-rc.d the tree came with (a container image's: a node's
// services must start), apt's downloaded packages and its binary caches (the
// package lists stay: a node-stage install still finds the mirror's index).
Status BeginImageStage(const std::string& root);
void EndImageStage(const std::string& root);

}  // namespace prov
