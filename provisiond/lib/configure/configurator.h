// Drives booted nodes to `ready` over SSH: `configuring`, the profile's
// playbooks in order, its health checks, then `ready` (or `failed` with the
// task and output that failed). Also runs playbooks and commands on demand.
// Each node has one persistent SSH session, reused by every run and command;
// nodes run in parallel on a pool of workers and never wait for each other.
// Every run and task is stored (runs, run_tasks) as it happens.
//
// This is the composition; each concern is a unit of its own: the pool of
// workers (work_queue.h), the nodes' sessions and host-key pinning
// (sessions.h), run records (run_recorder.h), node variables (node_vars.h),
// the playbook runner (play_runner.h), health checks and the `ready` gate
// (health.h) and commands (command.h).
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "configure/command.h"       // CommandResult, ToJson(CommandResult)
#include "configure/run_recorder.h"  // ToJson(RunRecord), ToJson(RunTaskRecord)
#include "configure/sessions.h"      // SessionConnector
#include "playbook/runner_choice.h"
#include "profiles/inventory.h"
#include "store/store.h"

namespace prov {

class SecretStore;

struct ConfigureSettings {
  std::string key_path;    // the control key (private half)
  std::string public_key;  // its public half, for the playbooks
  std::string ssh_user = "root";
  int ssh_port = 22;
  int connect_timeout_ms = 10000;
  int workers = 64;          // nodes configured at once
  int task_timeout_s = 600;  // per task unless the task says otherwise
  // How long a configure run tries again to reach a node that does not
  // answer (its sshd may still be starting), backing off from 1 s.
  int connect_retry_s = 30;
  // Where an installed machine gets the cluster's names (a netbooted node's
  // overlay writes its /etc/hosts): a block of this file; empty: nowhere.
  std::string installed_hosts_file = "/etc/hosts";
  // Where vars that name a secret are filled from (owned by the daemon);
  // null: such vars fail the run.
  SecretStore* secrets = nullptr;
  // Playbooks that run on ansible-playbook (ansible_runner.h) keep their
  // ssh control sockets and private run folders here.
  std::string ansible_dir;
  AnsibleTool ansible;  // the program, roles path and interpreter they run with
  // How nodes are reached: empty, SshConnector(key_path) (unit tests give a
  // fake network: configure/testing/fake_sessions.h).
  SessionConnector connector = {};
  // The static fact collector (provision-facts), sent to installed machines
  // when they are adopted; empty: adoption is not possible.
  std::string facts_program;
  // What runs wait on (connect retries, wait_for_peers, tasks' retries and
  // pauses); null: SteadyClock(). Must outlive the Configurator.
  Clock* clock = nullptr;
};

class Configurator {
 public:
  Configurator(Inventory& inventory, ConfigureSettings settings);
  ~Configurator();  // cancels what runs (marked interrupted) and joins
  Configurator(const Configurator&) = delete;
  Configurator& operator=(const Configurator&) = delete;

  // Queues the node for configuration with its profile. A node already
  // configured with the same profile hash since its last boot is left
  // alone unless `force`. Returns false when the node is not in a state
  // that can be configured (the reason in `why_not`).
  bool Configure(const std::string& node, const std::string& who, bool force = false,
                 std::string* why_not = nullptr);

  // After a start: the nodes whose configuration the last stop cut off (left
  // `configuring`, their runs marked interrupted) and those that phoned home
  // but were never configured (`booted` with a profile) are queued again.
  // Returns how many.
  int ResumeCutOff(const std::string& who);

  // Starts `playbook_path` on `nodes` (enrolled nodes with an address) on
  // the runner `wanted` asks (auto: native when it loads there); returns the
  // runs it created, one per node, already recorded as running, and the
  // runner chosen (`choice`, when given). A playbook no runner accepts is
  // refused before any node runs it.
  Result<std::vector<RunRecord>> StartPlaybook(const std::string& playbook_path,
                                               const std::vector<std::string>& nodes,
                                               const nlohmann::json& extra_vars,
                                               const std::string& who,
                                               PlaybookRunner wanted = PlaybookRunner::kAuto,
                                               RunnerChoice* choice = nullptr);

  // `node check`: a run of kind "health" per node (its profile's health
  // checks, all of them, kept on the node: health.h), queued; the runs are
  // returned as they start. A node without an address, a profile or checks
  // is an error naming it, and nothing starts.
  Result<std::vector<RunRecord>> StartHealthChecks(const std::vector<std::string>& nodes,
                                                   const std::string& who);

  // Runs `command` on every node at once and waits for all of them.
  // `user` empty: the login user.
  std::vector<CommandResult> Command(const std::vector<std::string>& nodes,
                                     const std::string& command, const std::string& user,
                                     int timeout_ms);
  // Adopting a machine that boots its own OS (node adopt): the host key it
  // shows at `node.ip` now, pinning nothing, for the operator to confirm.
  Result<std::string> ProbeHostKey(const NodeRecord& node);
  // A one-time password instead of a key already in place: logs in as
  // `user` (empty: the configured SSH user) with `password`, the session
  // pinned to `host_key`, and puts the control key in the SSH user's
  // authorized_keys (through `sudo -S` with the same password when `user`
  // is another). The password is used for this one session and kept
  // nowhere.
  Status InstallControlKey(const NodeRecord& node, const std::string& host_key,
                           const std::string& user, const std::string& password);
  // Its facts, from provision-facts sent over SSH and run there, the
  // session pinned to `host_key` (a node showing another is refused):
  // unvalidated JSON, as a phone-home's body.
  Result<nlohmann::json> CollectFacts(const NodeRecord& node, const std::string& host_key);
  // Reads one file from every node (command.h: GatherFromNodes).
  std::vector<GatherResult> Gather(const std::vector<std::string>& nodes, const std::string& path,
                                   const std::string& user, int timeout_ms);

  // The variables a node's playbooks see (inventory_hostname, ansible_host,
  // groups, hostvars, provisiond_facts, provisiond_control_key).
  nlohmann::json NodeVars(const NodeRecord& node, const std::vector<NodeRecord>& group);

  // Number of runs queued or running now.
  int active() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace prov
