// Runs a playbook with Debian's ansible-playbook for nodes the native runner
// cannot serve (runner_choice.h), with what the native runner gives them:
// the same inventory (each node's variables as host vars: its facts, its
// profile's group), the profile's vars and secrets as extra vars (a file
// only the run can read, removed after it), the control key, host keys
// checked against the pinned ones (a known_hosts written from the store,
// StrictHostKeyChecking on), and every task result per host recorded through
// a RunSink as it happens (provisiond's stdout callback, ansible/provisiond.py).
//
// One ansible-playbook serves all the hosts of one run (forks = hosts); its
// strategy is Ansible's, but each host's outcome is its own: a host that
// fails never fails another. When ansible-playbook dies mid-way, each host
// it left without a recap is failed with the output's tail.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "configure/play_runner.h"
#include "playbook/runner_choice.h"

namespace prov {

struct AnsibleHost {
  std::string name;
  std::string address;
  int port = 22;
  std::string host_key;     // pinned, "type base64"
  nlohmann::json vars;      // NodeVarsBuilder::For (the magic vars are Ansible's own)
  RunSink* sink = nullptr;  // this host's task results
  // Image stage: the root tree Ansible's chroot connection works in (address,
  // port and host key unused); empty: a node over SSH.
  std::string chroot;
};

struct AnsibleRunSettings {
  AnsibleTool tool;
  std::string key_path;  // the control key
  std::string ssh_user = "root";
  int connect_timeout_s = 10;
  // Persistent state: ssh control sockets (so runs reuse connections as
  // Ansible's own ~/.ansible/cp does) and each run's private folder.
  std::string work_dir;
  int timeout_s = 6 * 3600;  // the whole run
  // Image stage: ansible-playbook runs in ImageStageCommand(image_root)'s
  // mounts (playbook/remote.h), its hosts chroot into it.
  std::string image_root;
};

// One line of what provisiond's callback prints, read back.
struct AnsibleEvent {
  enum class Kind { kPlay, kTask, kResult, kStats } kind = Kind::kResult;
  std::string host;
  TaskResult result;
  bool ignored = false;  // a failure under ignore_errors
  std::string task;      // kPlay: the play's name; kTask: the task's
  // kStats: per host ok/changed/failed/unreachable/skipped/rescued/ignored.
  nlohmann::json stats;
};
// nullopt for a line that is not the callback's (Ansible's own output).
std::optional<AnsibleEvent> ParseAnsibleEvent(const std::string& line);

// The inventory provisiond writes (YAML's JSON subset): every host under
// `all` with ansible_host/ansible_port and its vars, the groups of the hosts'
// profile. Magic vars (inventory_hostname, groups, hostvars) and the facts
// Ansible gathers itself are left out. With `python_interpreter` discovery
// (auto...), a host whose facts say Debian's family gets /usr/bin/python3.
nlohmann::json AnsibleInventory(const std::vector<AnsibleHost>& hosts,
                                const std::string& python_interpreter = "auto_silent");

// known_hosts lines for the hosts' pinned keys, each under the host's key
// alias (ssh's HostKeyAlias, set per host in the inventory).
std::string AnsibleKnownHosts(const std::vector<AnsibleHost>& hosts);

// One Ansible setting of a run: its ini section and key, and the
// environment variable that sets it too (the environment wins over the file).
struct AnsibleSetting {
  std::string section, key, env, value;
};
// The settings of one run whose private folder is `run_dir`; ssh control
// sockets (connections kept between runs) when `reuse_connections`.
std::vector<AnsibleSetting> AnsibleSettings(const AnsibleRunSettings& settings,
                                            const std::string& run_dir,
                                            const std::string& playbook_dir, size_t forks,
                                            bool reuse_connections);
// Them as ansible.cfg.
std::string AnsibleConfig(const std::vector<AnsibleSetting>& settings);

// The ssh option that names provisiond's control sockets (one per login
// user and host key alias).
std::string AnsibleControlPathArg(const AnsibleRunSettings& settings);
// Asks the ssh control masters of those sockets to exit (when provisiond
// stops), and removes their folder when it is provisiond's own under /tmp.

void StopAnsibleMasters(const AnsibleRunSettings& settings);

// Runs `playbook_path` for `hosts`; returns each host's outcome (by name).
// `secret_values` are redacted from everything recorded.
std::map<std::string, NodeRunOutcome> RunAnsiblePlaybook(
    const std::string& playbook_path, const std::vector<AnsibleHost>& hosts,
    const nlohmann::json& extra_vars, const std::vector<std::string>& secret_values,
    const AnsibleRunSettings& settings, const std::atomic<bool>* cancel);

}  // namespace prov
