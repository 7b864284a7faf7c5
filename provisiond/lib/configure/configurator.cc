#include "configure/configurator.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <set>

#include "base/clock.h"
#include "base/file_util.h"
#include "base/strings.h"
#include "configure/ansible_runner.h"
#include "configure/health.h"
#include "configure/node_vars.h"
#include "configure/play_runner.h"
#include "configure/secrets.h"
#include "configure/sessions.h"
#include "configure/work_queue.h"
#include "playbook/playbook.h"
#include "profiles/profile.h"

namespace prov {

using json = nlohmann::json;

namespace {

SessionSettings SessionSettingsOf(const ConfigureSettings& s) {
  SessionSettings out;
  out.ssh_user = s.ssh_user;
  out.ssh_port = s.ssh_port;
  out.connect_timeout_ms = s.connect_timeout_ms;
  return out;
}

// A run that could not get its session: no answer is "unreachable", a
// refusal (host key, control key) "failed".
// What an installed machine's image stage is made of: each bake playbook's
// files (by content), vars and runner, in order. Its node row keeps the key
// of the last one that ran on it (installed_baked): its disk holds what they
// installed, as an image would, so they run again only when this changes.
std::string InstalledBakeKey(const Profile& profile) {
  std::map<std::string, std::string> sha;
  for (const auto& f : profile.files) sha[f.path] = f.sha256;
  std::string inputs = "installed bake v1\n";
  for (const auto& ref : profile.bake) {
    inputs += ref.file + "\n" + ToString(ref.runs_on) + "\n" + ref.vars.dump() + "\n";
    for (const auto& f : ref.files) inputs += f + " " + sha[f] + "\n";
  }
  return Sha256Hex(inputs).substr(0, 16);
}

void SessionFailed(RunRecord& run, const Status& why) {
  run.status = why.code() == Code::kUnavailable ? RunStatus::kUnreachable : RunStatus::kFailed;
  run.message = "ssh: " + why.message();
}

// A node that a run by hand (playbook, health checks) may start on: enrolled
// and with an address.
Status CheckRunnable(const NodeRecord& n) {
  if (n.state == NodeState::kDiscovered || n.state == NodeState::kRetired)
    return Status::Conflict(n.name() + " is " + std::string(ToString(n.state)) +
                            ": enroll it first");
  if (n.ip.empty())
    return Status::Conflict(n.name() + " has no address (enroll it with --ip, or boot it)");
  return Status::Ok();
}

// One run of `kind` per node, recorded as running, in one transaction.
Result<std::vector<RunRecord>> InsertRuns(Store& store, const std::vector<NodeRecord>& nodes,
                                          const std::string& kind,
                                          const std::function<std::string(const NodeRecord&)>& what,
                                          const std::string& who) {
  std::vector<RunRecord> runs;
  Status s = store.Transact([&](StoreTx& tx) -> Status {
    for (const auto& n : nodes) {
      RunRecord run;
      run.node_id = n.id;
      run.node = n.name();
      run.kind = kind;
      run.what = what(n);
      run.who = who;
      Status i = tx.InsertRun(run);
      if (!i.ok()) return i;
      runs.push_back(run);
    }
    return Status::Ok();
  });
  if (!s.ok()) return s;
  return runs;
}

}  // namespace

struct Configurator::Impl {
  Inventory& inventory;
  Store& store;
  const ConfigureSettings settings;
  NodeVarsBuilder node_vars{settings.public_key};
  Clock& clock;
  Sessions sessions;
  std::atomic<bool> cancel{false};
  // Where playbooks' delegate_to: localhost tasks run: this machine, as
  // provisiond's own user.
  LocalRemote control_node{"localhost"};
  // Last: its workers use everything above, and it is stopped first.
  WorkQueue queue;

  Impl(Inventory& inv, ConfigureSettings s)
      : inventory(inv),
        store(inv.store()),
        settings(std::move(s)),
        clock(settings.clock ? *settings.clock : SteadyClock()),
        sessions(store, SessionSettingsOf(settings),
                 settings.connector ? settings.connector : SshConnector(settings.key_path)),
        queue(settings.workers) {}

  // The node's cluster: its profile's nodes, less discovered and retired ones.
  std::vector<NodeRecord> Group(const std::string& profile_version) {
    NodeFilter f;
    f.profile_version = profile_version;
    std::vector<NodeRecord> out;
    for (auto& n : store.ListNodes(f))
      if (n.state != NodeState::kRetired && n.state != NodeState::kDiscovered)
        out.push_back(std::move(n));
    return out;
  }

  AnsibleRunSettings Ansible() const {
    AnsibleRunSettings a;
    a.tool = settings.ansible;
    a.key_path = settings.key_path;
    a.ssh_user = settings.ssh_user;
    a.connect_timeout_s = std::max(1, settings.connect_timeout_ms / 1000);
    a.work_dir = settings.ansible_dir;
    return a;
  }

  // The node as ansible-playbook sees it: its address, its pinned host key
  // (read again when `node` had none: its session's first contact pinned
  // it since), its variables, and where its results go.
  AnsibleHost HostOf(const NodeRecord& node, const json& vars, RunSink* sink) {
    AnsibleHost h;
    h.name = node.name();
    h.address = node.ip;
    h.port = settings.ssh_port;
    h.host_key = node.host_key;
    if (h.host_key.empty())
      if (auto fresh = store.FindNode(node.name()); fresh.ok()) h.host_key = fresh->host_key;
    h.vars = vars;
    h.sink = sink;
    return h;
  }

  RunOptions Options() {
    RunOptions o;
    o.default_timeout_s = settings.task_timeout_s;
    o.cancel = &cancel;
    o.local = &control_node;
    o.sleep = [this](int ms) { return clock.Sleep(ms, &cancel); };
    return o;
  }

  // Where a job on one node runs: its lease (one run at a time on a node),
  // the node as stored when the job began, its run and the run's recorder.
  struct NodeJob {
    Sessions::Lease& lease;
    const NodeRecord& node;
    RunRecord& run;
    RunRecorder& recorder;
  };

  // The frame every job on one node shares: the node as stored (one gone
  // meanwhile fails the run), the run's recorder, the body (which sets the
  // run's status and message), then the run finished with its event, and
  // `also` in the same transaction. `start`: when the job began.
  void OnNode(Sessions::Lease& lease, RunRecord& run, Clock::TimePoint start,
              const std::function<void(NodeJob&)>& body,
              const std::function<Status(StoreTx&, const std::string&)>& also = {}) {
    auto node = store.FindNode(run.node);
    if (!node.ok()) {
      run.status = RunStatus::kFailed;
      run.message = node.status().message();
    } else {
      RunRecorder recorder(store, run);
      NodeJob job{lease, *node, run, recorder};
      body(job);
    }
    FinishRun(store, run, clock.SinceMs(start), also);
  }

  // One configure run of a node: `configuring`, its profile's playbooks,
  // its health checks, then `ready` or `failed` (MoveNodeOn).
  void RunConfigure(int64_t node_id, const std::string& who) {
    const auto start = clock.Now();
    auto lease = sessions.Acquire(node_id);
    NodeRecord node;
    std::shared_ptr<const Profile> profile;
    RunRecord run;
    // The applied snapshot is found before the transaction: no disk read or
    // parse ever runs under the store's lock.
    std::string version;
    store.Read([&](StoreTx& tx) {
      auto n = tx.NodeById(node_id);
      if (n.ok()) version = n->profile_version;
    });
    if (!version.empty()) {
      auto p = inventory.Snapshot(version);
      if (!p.ok()) {
        spdlog::warn("node {}: not configured: {}", node_id, p.status().message());
        return;
      }
      profile = std::move(*p);
    }
    Status s = store.Transact([&](StoreTx& tx) -> Status {
      auto n = tx.NodeById(node_id);
      if (!n.ok()) return n.status();
      node = *n;
      if (node.profile_version.empty() || !profile)
        return Status::Conflict(node.name() + " has no profile");
      if (node.profile_version != version)
        return Status::Conflict(node.name() + "'s profile changed meanwhile");
      if (node.state != NodeState::kConfiguring) {
        std::string names;
        for (const auto& ref : profile->playbooks) names += (names.empty() ? "" : ", ") + ref.file;
        Status t =
            tx.Transition(node, NodeState::kConfiguring,
                          "profile " + profile->version + (names.empty() ? "" : ": " + names), who);
        if (!t.ok()) return t;
      }
      run.node_id = node.id;
      run.node = node.name();
      run.kind = "configure";
      run.what = profile->version;
      run.profile_sha256 = profile->sha256;
      run.who = who;
      return tx.InsertRun(run);
    });
    if (!s.ok()) {
      spdlog::warn("node {}: not configured: {}", node_id, s.message());
      return;
    }
    OnNode(
        lease, run, start, [&](NodeJob& job) { ConfigureNode(job, *profile); },
        [&](StoreTx& tx, const std::string& summary) {
          return MoveNodeOn(tx, run, profile->sha256, summary);
        });
  }

  // The profile's nodes that have not phoned home since they were powered
  // on (no address and host key yet, or booting).
  std::vector<std::string> PeersNotHome(const NodeRecord& node, const Profile& profile) {
    std::set<std::string> home;
    for (const auto& n : Group(profile.version))
      if (!n.ip.empty() && !n.host_key.empty() &&
          (n.state == NodeState::kBooted || n.state == NodeState::kConfiguring ||
           n.state == NodeState::kReady || n.state == NodeState::kFailed))
        home.insert(n.name());
    std::vector<std::string> missing;
    for (const auto& name : profile.nodes.hostnames)
      if (name != node.name() && !home.count(name)) missing.push_back(name);
    return missing;
  }

  // The profile's wait_for_peers: until every node its hostlist names has
  // phoned home, or the time is up (then the run goes on with those there
  // are). Each wait is an event of the node. False when cancelled.
  bool WaitForPeers(const NodeRecord& node, const Profile& profile, RunOptions& options) {
    if (profile.wait_for_peers_s <= 0) return true;
    auto missing = PeersNotHome(node, profile);
    if (missing.empty()) return true;
    auto note = [&](const std::string& text) {
      EventRecord e{.node_id = node.id,
                    .node = node.name(),
                    .kind = "configure",
                    .detail = text,
                    .who = "provisiond"};
      store.RecordEvent(e);
    };
    note("waiting up to " + std::to_string(profile.wait_for_peers_s) +
         " s for the profile's other nodes to phone home: " + Join(missing, ", "));
    const auto start = clock.Now();
    while (!missing.empty()) {
      if (clock.Now() - start >= std::chrono::seconds(profile.wait_for_peers_s)) {
        note("went on without " + Join(missing, ", ") + " (not home after " +
             std::to_string(profile.wait_for_peers_s) + " s)");
        return true;
      }
      if (!options.sleep(1000)) return false;
      missing = PeersNotHome(node, profile);
    }
    note("every node of profile " + profile.version + " has phoned home");
    return true;
  }

  // The body of a configure run: playbooks, then health checks; sets the
  // run's status and message.
  void ConfigureNode(NodeJob& job, const Profile& profile) {
    Sessions::Lease& lease = job.lease;
    const NodeRecord& node = job.node;
    RunRecord& run = job.run;
    RunRecorder& recorder = job.recorder;
    RunOptions options = Options();
    // A node phones home once systemd has started its sshd, which may still
    // refuse for a moment (starting slowly, or restarted): tries again,
    // backing off, for up to connect_retry_s. A wrong host key is final.
    auto session = lease.Get(node);
    for (int waited_ms = 0, wait_ms = 1000;
         !session.ok() && session.status().code() == Code::kUnavailable &&
         waited_ms + wait_ms <= settings.connect_retry_s * 1000;
         waited_ms += wait_ms, wait_ms *= 2) {
      spdlog::info("{}: {}; trying again in {} s", node.name(), session.status().message(),
                   wait_ms / 1000);
      if (!options.sleep(wait_ms)) break;
      session = lease.Get(node);
    }
    if (!session.ok()) return SessionFailed(run, session.status());
    if (!WaitForPeers(node, profile, options)) {
      run.status = RunStatus::kInterrupted;
      return;
    }
    // A netbooted node's overlay lists the cluster's nodes in /etc/hosts; a
    // machine with its own OS gets them in a block of its own /etc/hosts.
    if (node.installed && !settings.installed_hosts_file.empty()) {
      Status named = WriteClusterNames(**session);
      if (!named.ok()) {
        run.status =
            named.code() == Code::kUnavailable ? RunStatus::kUnreachable : RunStatus::kFailed;
        run.message = named.message();
        if (run.status == RunStatus::kUnreachable) lease.Drop();
        return;
      }
    }
    json vars = node_vars.For(node, Group(node.profile_version));
    // A machine with its own OS has no image its image-stage playbooks were
    // baked into: they run on it first, at image stage (provisiond_stage is
    // "image": what they would bake, with the vars the profile's bake list
    // gives), then the node stage.
    json image_vars = vars;
    image_vars["provisiond_stage"] = "image";
    std::vector<std::pair<const PlaybookRef*, const json*>> refs;
    // Its disk keeps the image stage that last ran on it (InstalledBakeKey):
    // again only when that changed (a reboot does not).
    std::string bake_key;
    if (node.installed && !profile.bake.empty()) {
      bake_key = InstalledBakeKey(profile);
      if (node.installed_baked == bake_key) {
        spdlog::info("{}: its image stage ({}) ran already; node stage only", node.name(),
                     bake_key);
        bake_key.clear();
      } else {
        for (const auto& ref : profile.bake) refs.emplace_back(&ref, &image_vars);
      }
    }
    for (const auto& ref : profile.playbooks) refs.emplace_back(&ref, &vars);
    for (const auto& [each, stage_vars] : refs) {
      const PlaybookRef& ref = *each;
      if (!ref.parsed && ref.runs_on != PlaybookRunner::kAnsible) {
        run.status = RunStatus::kFailed;
        run.message = ref.file + ": not loaded with profile " + profile.version;
        return;
      }
      // The profile's vars for this playbook win over the playbook's own;
      // those that name a secret are filled from the store.
      auto resolved = ResolveSecretVars(profile, ref.vars, settings.secrets);
      if (!resolved.ok()) {
        run.status = RunStatus::kFailed;
        run.message = ref.file + ": " + resolved.status().message();
        return;
      }
      options.extra_vars = std::move(resolved->vars);
      options.secret_vars = std::move(resolved->secret_vars);
      options.secret_values = std::move(resolved->secret_values);
      NodeRunOutcome out;
      if (ref.runs_on == PlaybookRunner::kAnsible) {
        auto outs =
            RunAnsiblePlaybook(ref.path, {HostOf(node, *stage_vars, &recorder)}, options.extra_vars,
                               options.secret_values, Ansible(), &cancel);
        out = outs[node.name()];
      } else {
        out = RunPlaybook(*ref.parsed, node.name(), **session, *stage_vars, &recorder, options);
      }
      if (out.status != RunStatus::kOk) {
        run.status = out.status;
        run.message = ref.file + ": " + out.failed_task;
        if (out.status == RunStatus::kUnreachable) lease.Drop();
        return;
      }
      if (!bake_key.empty() && each == &profile.bake.back()) {
        // The image stage is on its disk now: kept for its next boots.
        Status kept = store.Transact([&](StoreTx& tx) {
          auto n = tx.FindNode(node.name());
          if (!n.ok()) return n.status();
          n->installed_baked = bake_key;
          return tx.UpdateNode(*n);
        });
        if (!kept.ok())
          spdlog::warn("{}: its image stage's key was not kept: {}", node.name(), kept.message());
      }
    }
    HealthOutcome health = RunHealthChecks(profile, node, **session, recorder, store);
    if (!profile.health_checks.empty()) KeepHealth(store, *session, profile, node, run.id, health);
    if (health.status != RunStatus::kOk) {
      run.status = health.status;
      run.message = health.message;
      return;
    }
    run.status = cancel ? RunStatus::kInterrupted : RunStatus::kOk;
  }

  // The cluster's nodes, from the address book, between two marker lines of
  // /etc/hosts (replaced at each configure run; the rest of the file is the
  // machine's own), written to a temporary file, then renamed.
  Status WriteClusterNames(NodeSession& session) {
    std::string block;
    for (const auto& n : store.Addresses()->entries)
      if (!n.hostname.empty()) block += n.ip + "\t" + n.hostname + "\n";
    const std::string script =
        "set -e\n"
        "f=" +
        ShellQuote(settings.installed_hosts_file) +
        "\n"
        "begin='# BEGIN provisiond: the cluster nodes (rewritten at each configure run)'\n"
        "end='# END provisiond'\n"
        "tmp=$(mktemp \"$(dirname \"$f\")/.hosts.provisiond.XXXXXX\")\n"
        "trap 'rm -f \"$tmp\"' EXIT\n"
        "{ if [ -f \"$f\" ]; then awk -v b=\"$begin\" -v e=\"$end\" "
        "'$0 == b {skip = 1} !skip {print} $0 == e {skip = 0}' \"$f\"; fi; "
        "echo \"$begin\"; cat; echo \"$end\"; } >\"$tmp\"\n"
        "chmod 0644 \"$tmp\"\n"
        "mv -f \"$tmp\" \"$f\"\n";
    auto r = session.Run(script, block, "", settings.task_timeout_s * 1000);
    if (!r.ok()) return r.status();
    if (r->exit_code != 0)
      return Status::Invalid(settings.installed_hosts_file +
                             ": the cluster's names could not be written (exit code " +
                             std::to_string(r->exit_code) + "): " + r->err.substr(0, 300));
    return Status::Ok();
  }

  // `node check`: the profile's health checks on one node, all of them,
  // kept on its row and in its log (health.h); its state does not change.
  void RunHealthJob(RunRecord run) {
    const auto start = clock.Now();
    auto lease = sessions.Acquire(run.node_id);
    OnNode(lease, run, start, [&](NodeJob& job) {
      auto profile = inventory.Snapshot(job.node.profile_version);
      if (!profile.ok()) {
        run.status = RunStatus::kFailed;
        run.message = "profile " + job.node.profile_version + " cannot be loaded";
        return;
      }
      auto session = lease.Get(job.node);
      HealthOutcome health;
      if (!session.ok()) {
        SessionFailed(run, session.status());
        health.status = RunStatus::kUnreachable;
        health.message = run.message;
      } else {
        health = RunHealthChecks(**profile, job.node, **session, job.recorder, store,
                                 /*stop_at_failure=*/false);
        if (health.status == RunStatus::kUnreachable) lease.Drop();
        run.status = health.status;
        run.message = health.message;
      }
      KeepHealth(store, session.ok() ? *session : nullptr, **profile, job.node, run.id, health);
    });
  }

  // A playbook run by hand on one node (its run recorded as running).
  void RunPlaybookJob(const Playbook& playbook, RunRecord run, const json& vars, json extra_vars,
                      std::shared_ptr<RunOnceTable> once) {
    const auto start = clock.Now();
    auto lease = sessions.Acquire(run.node_id);
    OnNode(lease, run, start, [&](NodeJob& job) {
      auto session = lease.Get(job.node);
      if (!session.ok()) return SessionFailed(run, session.status());
      RunOptions options = Options();
      options.extra_vars = std::move(extra_vars);
      options.once = std::move(once);
      NodeRunOutcome out =
          RunPlaybook(playbook, job.node.name(), **session, vars, &job.recorder, options);
      run.status = out.status;
      run.message = out.failed_task;
      if (out.status == RunStatus::kUnreachable) lease.Drop();
    });
  }

  // A playbook run by hand under ansible-playbook: one process for all the
  // run's nodes whose sessions connect (host keys checked or pinned first),
  // each node's run recorded and finished on its own.
  void RunAnsibleJob(const std::string& playbook_path, std::vector<RunRecord> runs,
                     std::vector<json> vars, json extra_vars) {
    const auto start = clock.Now();
    // Leases in node id order: two jobs never wait for each other.
    std::vector<size_t> order(runs.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return runs[a].node_id < runs[b].node_id; });
    std::vector<Sessions::Lease> leases;
    std::vector<std::unique_ptr<RunRecorder>> recorders(runs.size());
    std::vector<AnsibleHost> hosts;
    std::vector<size_t> host_run;  // hosts[i] is runs[host_run[i]]
    for (size_t i : order) {
      leases.push_back(sessions.Acquire(runs[i].node_id));
      auto node = store.FindNode(runs[i].node);
      if (!node.ok()) {
        runs[i].status = RunStatus::kFailed;
        runs[i].message = node.status().message();
        continue;
      }
      // A node seen for the first time is connected by provisiond, which
      // pins its key; a pinned key is checked by ssh itself (known_hosts,
      // StrictHostKeyChecking), so there is nothing to connect for.
      if (node->host_key.empty()) {
        auto session = leases.back().Get(*node);
        if (!session.ok()) {
          SessionFailed(runs[i], session.status());
          continue;
        }
      }
      recorders[i] = std::make_unique<RunRecorder>(store, runs[i]);
      hosts.push_back(HostOf(*node, vars[i], recorders[i].get()));
      host_run.push_back(i);
    }
    if (!hosts.empty()) {
      auto outs = RunAnsiblePlaybook(playbook_path, hosts, extra_vars, {}, Ansible(), &cancel);
      for (size_t h = 0; h < hosts.size(); ++h) {
        RunRecord& run = runs[host_run[h]];
        const NodeRunOutcome& out = outs[hosts[h].name];
        run.status = out.status;
        run.message = out.failed_task;
      }
    }
    for (auto& run : runs) FinishRun(store, run, clock.SinceMs(start));
  }
};

Configurator::Configurator(Inventory& inventory, ConfigureSettings settings)
    : impl_(std::make_unique<Impl>(inventory, std::move(settings))) {
  // The ssh control masters of Ansible runs that a provisiond killed
  // without its stop (SIGKILL, a crash) left behind.
  if (!impl_->settings.ansible_dir.empty()) StopAnsibleMasters(impl_->Ansible());
  int64_t interrupted = impl_->store.InterruptRunningRuns();
  if (interrupted)
    spdlog::warn(
        "{} run(s) were interrupted when provisiond last stopped; they are marked "
        "interrupted and their nodes are configured again",
        interrupted);
}

Configurator::~Configurator() {
  // Waiting jobs are dropped before the cancel, so none of them starts a
  // run only to be interrupted; running ones see the cancel and end.
  impl_->queue.Close();
  impl_->cancel = true;
  impl_->queue.Join();
  // Runs cut short by the stop are "interrupted" already (the runner saw
  // the cancel flag); anything else still running is marked now.
  impl_->store.InterruptRunningRuns();
  if (!impl_->settings.ansible_dir.empty()) StopAnsibleMasters(impl_->Ansible());
}

int Configurator::active() const {
  return impl_->queue.active();
}

json Configurator::NodeVars(const NodeRecord& node, const std::vector<NodeRecord>& group) {
  return impl_->node_vars.For(node, group);
}

bool Configurator::Configure(const std::string& name, const std::string& who, bool force,
                             std::string* why_not) {
  auto node = impl_->store.FindNode(name);
  auto refuse = [&](const std::string& why) {
    if (why_not) *why_not = why;
    return false;
  };
  if (!node.ok()) return refuse(node.status().message());
  if (node->profile_version.empty()) return refuse(node->name() + " has no profile");
  switch (node->state) {
    case NodeState::kBooted:
    case NodeState::kConfiguring:
    case NodeState::kReady:
    case NodeState::kFailed:
      break;
    default:
      return refuse(node->name() + " is " + std::string(ToString(node->state)) +
                    ": it is configured when it phones home");
  }
  if (node->state == NodeState::kFailed && node->ip.empty())
    return refuse(node->name() + " failed before it booted");
  if (!force && node->state == NodeState::kReady) {
    auto profile = impl_->inventory.Snapshot(node->profile_version);
    if (profile.ok() && (*profile)->sha256 == node->configured)
      return refuse(node->name() + " is ready with profile " + node->profile_version + " already");
  }
  // A node whose run waits or runs is configured once more when it ends,
  // with what changed meanwhile.
  Impl* impl = impl_.get();
  const int64_t id = node->id;
  auto queued = impl_->queue.SubmitOnce(id, [impl, id, who] { impl->RunConfigure(id, who); });
  if (queued == WorkQueue::Keyed::kClosed) return refuse("provisiond is stopping");
  return true;
}

int Configurator::ResumeCutOff(const std::string& who) {
  int queued = 0;
  for (NodeState state : {NodeState::kConfiguring, NodeState::kBooted}) {
    NodeFilter filter;
    filter.state = state;
    for (const auto& node : impl_->store.ListNodes(filter)) {
      std::string why;
      if (Configure(node.name(), who, false, &why))
        ++queued;
      else
        spdlog::info("{}: not configured again: {}", node.name(), why);
    }
  }
  return queued;
}

namespace {

// A session to `node` as an adoption makes it: the configured user and port,
// pinned to `host_key` (empty: whatever the machine shows).
Result<std::unique_ptr<NodeSession>> ConnectForAdoption(
    const ConfigureSettings& settings, const NodeRecord& node, const std::string& host_key,
    const std::string& user = "", const std::string& password = "", bool authenticate = true) {
  if (node.ip.empty())
    return Status::Invalid(node.name() + " has no address: give it one (node set --ip) first");
  SshEndpoint ep;
  ep.node = node.name();
  ep.host = node.ip;
  ep.port = settings.ssh_port;
  ep.user = user.empty() ? settings.ssh_user : user;
  ep.password = password;
  ep.authenticate = authenticate;
  ep.pinned_host_key = host_key;
  ep.connect_timeout_ms = settings.connect_timeout_ms;
  SessionConnector connect =
      settings.connector ? settings.connector : SshConnector(settings.key_path);
  return connect(ep);
}

}  // namespace

Result<std::string> Configurator::ProbeHostKey(const NodeRecord& node) {
  // Only the key exchange: the machine need not take provisiond's key yet
  // (node adopt --password puts it there).
  auto session = ConnectForAdoption(impl_->settings, node, "", "", "", false);
  if (!session.ok()) return session.status();
  return (*session)->host_key();
}

Status Configurator::InstallControlKey(const NodeRecord& node, const std::string& host_key,
                                       const std::string& user, const std::string& password) {
  if (host_key.empty()) return Status::Invalid("adopting " + node.name() + " needs its host key");
  if (password.empty()) return Status::Invalid("no password given");
  if (impl_->settings.public_key.empty())
    return Status::Error(Code::kUnavailable, "provisiond has no control key to install");
  const std::string login = user.empty() ? impl_->settings.ssh_user : user;
  auto session = ConnectForAdoption(impl_->settings, node, host_key, login, password);
  if (!session.ok()) return session.status();
  // The key into the SSH user's authorized_keys (once); through sudo, which
  // reads the same password on stdin, when the login is another user. The
  // password goes over stdin only, never in the script or a message.
  const std::string target = impl_->settings.ssh_user;
  const std::string key = ShellQuote(Trim(impl_->settings.public_key));
  const std::string install = "set -e; umask 077; h=$(getent passwd " + ShellQuote(target) +
                              " | cut -d: -f6); [ -n \"$h\" ]; mkdir -p \"$h/.ssh\"; "
                              "touch \"$h/.ssh/authorized_keys\"; grep -qxF " +
                              key + " \"$h/.ssh/authorized_keys\" || echo " + key +
                              " >>\"$h/.ssh/authorized_keys\"; " + "chown -R " +
                              ShellQuote(target) + ": \"$h/.ssh\"";
  const std::string script =
      login == target ? install + "\n"
                      : "sudo -S -p '' -u root -- sh -c " + ShellQuote(install) + " 2>&1\n";
  auto r = (*session)->Run(script, login == target ? "" : password + "\n", "",
                           impl_->settings.task_timeout_s * 1000);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0)
    return Status::Error(Code::kConflict, node.name() + ": the control key could not be put in " +
                                              target + "'s authorized_keys as " + login +
                                              " (exit code " + std::to_string(r->exit_code) +
                                              "): " + (r->out + r->err).substr(0, 300));
  return Status::Ok();
}

Result<nlohmann::json> Configurator::CollectFacts(const NodeRecord& node,
                                                  const std::string& host_key) {
  if (host_key.empty()) return Status::Invalid("adopting " + node.name() + " needs its host key");
  if (impl_->settings.facts_program.empty())
    return Status::Error(Code::kUnavailable, "no provision-facts program configured (tools_dir)");
  auto program = ReadFile(impl_->settings.facts_program);
  if (!program.ok()) return program.status();
  auto session = ConnectForAdoption(impl_->settings, node, host_key);
  if (!session.ok()) return session.status();
  // The static collector goes over stdin into a private file, runs, and is
  // removed: nothing is installed on the machine.
  auto r = (*session)->Run(
      "f=$(mktemp /tmp/provision-facts.XXXXXX) || exit 1\n"
      "trap 'rm -f \"$f\"' EXIT\n"
      "cat >\"$f\" && chmod 0700 \"$f\" && \"$f\"\n",
      *program, "", impl_->settings.task_timeout_s * 1000);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0)
    return Status::Error(Code::kUnavailable, node.name() + ": provision-facts failed (exit code " +
                                                 std::to_string(r->exit_code) +
                                                 "): " + r->err.substr(0, 500));
  auto facts = nlohmann::json::parse(r->out, nullptr, false);
  if (facts.is_discarded() || !facts.is_object())
    return Status::Invalid(node.name() + ": provision-facts printed no JSON object");
  return facts;
}

Result<std::vector<RunRecord>> Configurator::StartPlaybook(
    const std::string& playbook_path, const std::vector<std::string>& nodes, const json& extra_vars,
    const std::string& who, PlaybookRunner wanted, RunnerChoice* choice_out) {
  auto choice =
      ReadAndChoosePlaybookRunner(playbook_path, wanted, impl_->settings.ansible.roles_path);
  if (!choice.ok()) return choice.status();
  if (Status s = CheckWithAnsible(playbook_path, *choice, impl_->settings.ansible); !s.ok())
    return s;
  if (choice_out) *choice_out = *choice;
  std::vector<NodeRecord> records;
  for (const auto& name : nodes) {
    auto n = impl_->store.FindNode(name);
    if (!n.ok()) return n.status();
    if (Status r = CheckRunnable(*n); !r.ok()) return r;
    records.push_back(*n);
  }
  const std::string what =
      playbook_path + (choice->runner == PlaybookRunner::kAnsible ? " (ansible-playbook)" : "");
  auto inserted = InsertRuns(
      impl_->store, records, "playbook", [&](const NodeRecord&) { return what; }, who);
  if (!inserted.ok()) return inserted.status();
  std::vector<RunRecord> runs = std::move(*inserted);
  // The same inventory a configure run sees: the node's profile is its
  // cluster (groups['all']); a node without one sees the nodes of this run.
  std::vector<json> vars;
  for (const auto& node : records)
    vars.push_back(impl_->node_vars.For(
        node, node.profile_version.empty() ? records : impl_->Group(node.profile_version)));
  Impl* impl = impl_.get();
  if (choice->runner == PlaybookRunner::kAnsible) {
    impl_->queue.Submit([impl, playbook_path, runs, vars = std::move(vars), extra_vars] {
      impl->RunAnsibleJob(playbook_path, runs, vars, extra_vars);
    });
    return runs;
  }
  auto shared = choice->native;
  // The nodes of this run share its run_once tasks.
  auto once = std::make_shared<RunOnceTable>();
  for (size_t i = 0; i < runs.size(); ++i)
    impl_->queue.Submit([impl, shared, once, run = runs[i], vars = std::move(vars[i]), extra_vars] {
      impl->RunPlaybookJob(*shared, run, vars, extra_vars, once);
    });
  return runs;
}

Result<std::vector<RunRecord>> Configurator::StartHealthChecks(
    const std::vector<std::string>& nodes, const std::string& who) {
  std::vector<NodeRecord> records;
  for (const auto& name : nodes) {
    auto n = impl_->store.FindNode(name);
    if (!n.ok()) return n.status();
    if (Status r = CheckRunnable(*n); !r.ok()) return r;
    if (n->profile_version.empty())
      return Status::Conflict(n->name() + " has no profile, so no health checks");
    auto profile = impl_->inventory.Snapshot(n->profile_version);
    if (!profile.ok()) return profile.status();
    if ((*profile)->health_checks.empty())
      return Status::Conflict(n->name() + "'s profile " + n->profile_version +
                              " has no health checks");
    records.push_back(*n);
  }
  auto runs = InsertRuns(
      impl_->store, records, "health", [](const NodeRecord& n) { return n.profile_version; }, who);
  if (!runs.ok()) return runs.status();
  Impl* impl = impl_.get();
  for (const auto& run : *runs) impl_->queue.Submit([impl, run] { impl->RunHealthJob(run); });
  return runs;
}

std::vector<CommandResult> Configurator::Command(const std::vector<std::string>& nodes,
                                                 const std::string& command,
                                                 const std::string& user, int timeout_ms) {
  return RunCommandOnNodes(impl_->store, impl_->sessions, nodes, command, user, timeout_ms);
}

std::vector<GatherResult> Configurator::Gather(const std::vector<std::string>& nodes,
                                               const std::string& path, const std::string& user,
                                               int timeout_ms) {
  return GatherFromNodes(impl_->store, impl_->sessions, nodes, path, user, timeout_ms);
}

}  // namespace prov
