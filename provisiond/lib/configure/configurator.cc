#include "configure/configurator.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "configure/play_runner.h"
#include "configure/ssh_client.h"
#include "playbook/playbook.h"
#include "profiles/profile.h"

namespace prov {

using json = nlohmann::json;

json ToJson(const RunRecord& r) {
  return {{"id", r.id},
          {"node", r.node},
          {"kind", r.kind},
          {"what", r.what},
          {"profile_sha256", r.profile_sha256},
          {"status", r.status},
          {"started_ms", r.started_ms},
          {"finished_ms", r.finished_ms},
          {"ok", r.ok},
          {"changed", r.changed},
          {"failed", r.failed},
          {"skipped", r.skipped},
          {"message", r.message},
          {"who", r.who}};
}

json ToJson(const RunTaskRecord& t) {
  return {{"id", t.id},
          {"playbook", t.playbook},
          {"play", t.play},
          {"task", t.task},
          {"module", t.module},
          {"location", t.location},
          {"item", t.item},
          {"status", t.status},
          {"changed", t.changed},
          {"exit_code", t.exit_code},
          {"stdout", t.stdout_tail},
          {"stderr", t.stderr_tail},
          {"msg", t.msg},
          {"duration_ms", t.duration_ms}};
}

json ToJson(const CommandResult& c) {
  json j = {{"node", c.node},  {"status", c.status}, {"exit_code", c.exit_code},
            {"stdout", c.out}, {"stderr", c.err},    {"duration_ms", c.duration_ms}};
  if (!c.error.empty()) j["error"] = c.error;
  return j;
}

namespace {

int64_t SinceMs(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               start)
      .count();
}

std::string Seconds(int64_t ms) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ms) / 1000.0);
  return buf;
}

// Records each task of one run as it finishes, with the run's counters.
class StoreSink : public RunSink {
 public:
  StoreSink(Store& store, RunRecord& run) : store_(store), run_(run) {}
  void OnTask(const std::string& node, const TaskResult& r) override {
    RunTaskRecord t;
    t.run_id = run_.id;
    t.playbook = r.playbook;
    t.play = r.play;
    t.task = r.task;
    t.module = r.module;
    t.location = r.where;
    t.item = r.item;
    t.status = r.status;
    t.changed = r.changed;
    t.exit_code = r.exit_code;
    t.stdout_tail = r.stdout_tail;
    t.stderr_tail = r.stderr_tail;
    t.msg = r.msg;
    t.duration_ms = r.duration_ms;
    Count(r.status);
    Status s = store_.Transact([&](StoreTx& tx) -> Status {
      Status a = tx.AppendRunTask(t);
      return a.ok() ? tx.UpdateRun(run_) : a;
    });
    if (!s.ok()) spdlog::error("{}: cannot record task {}: {}", node, r.task, s.message());
    spdlog::debug("{}: {} [{}] {}", node, r.status, r.where, r.task);
  }
  void Count(const std::string& status) {
    if (status == "ok") ++run_.ok;
    if (status == "changed") ++run_.changed;
    if (status == "failed" || status == "unreachable") ++run_.failed;
    if (status == "skipped") ++run_.skipped;
  }

 private:
  Store& store_;
  RunRecord& run_;
};

// A node's SSH session, used by one run or command at a time.
struct Slot {
  std::mutex mu;
  std::unique_ptr<SshSession> session;
};

}  // namespace

struct Configurator::Impl {
  Inventory& inventory;
  Store& store;
  ConfigureSettings settings;

  std::mutex mu;  // guards everything below
  std::condition_variable cv;
  std::deque<std::function<void()>> jobs;
  std::vector<std::thread> workers;
  bool stopping = false;
  int busy = 0;
  std::set<int64_t> queued;  // configure jobs waiting or running, by node id
  std::set<int64_t> again;   // configure again once the current one ends
  std::map<int64_t, std::shared_ptr<Slot>> slots;
  std::atomic<bool> cancel{false};

  Impl(Inventory& inv, ConfigureSettings s)
      : inventory(inv), store(inv.store()), settings(std::move(s)) {}

  void Submit(std::function<void()> job) {
    std::lock_guard lock(mu);
    jobs.push_back(std::move(job));
    if (static_cast<int>(workers.size()) < settings.workers &&
        busy + static_cast<int>(jobs.size()) > static_cast<int>(workers.size()))
      workers.emplace_back([this] { Work(); });
    cv.notify_one();
  }

  void Work() {
    std::unique_lock lock(mu);
    while (true) {
      cv.wait(lock, [&] { return stopping || !jobs.empty(); });
      if (jobs.empty()) return;  // stopping
      auto job = std::move(jobs.front());
      jobs.pop_front();
      ++busy;
      lock.unlock();
      try {
        job();
      } catch (const std::exception& e) {
        spdlog::error("configuration job failed: {}", e.what());
      }
      lock.lock();
      --busy;
    }
  }

  std::shared_ptr<Slot> SlotFor(int64_t node_id) {
    std::lock_guard lock(mu);
    auto& slot = slots[node_id];
    if (!slot) slot = std::make_shared<Slot>();
    return slot;
  }

  void Event(const NodeRecord& node, const std::string& kind, const std::string& detail,
             const std::string& who) {
    EventRecord e{0, 0, node.id, node.name(), kind, detail, who};
    store.AppendEvent(e);
  }

  // The node's session in `slot` (whose lock the caller holds), connecting
  // when there is none, it broke, or the node's address or pinned key
  // changed. A key seen at first contact is pinned, with an event.
  Result<SshSession*> Session(Slot& slot, const NodeRecord& node) {
    if (node.ip.empty())
      return Status::Error(Code::kUnavailable, node.name() +
                                                   " has no address yet (it has not booted, or was "
                                                   "enrolled without --ip)");
    if (slot.session && slot.session->alive() &&
        (node.host_key.empty() || SameKey(slot.session->host_key(), node.host_key)))
      return slot.session.get();
    slot.session.reset();
    SshEndpoint ep;
    ep.node = node.name();
    ep.host = node.ip;
    ep.port = settings.ssh_port;
    ep.user = settings.ssh_user;
    ep.pinned_host_key = node.host_key;
    ep.connect_timeout_ms = settings.connect_timeout_ms;
    auto session = SshSession::Connect(ep, settings.key_path);
    if (!session.ok()) {
      if (session.status().code() == Code::kForbidden)
        Event(node, "ssh", session.status().message(), "provisiond");
      return session.status();
    }
    if ((*session)->pinned_now()) {
      const std::string key = (*session)->host_key();
      store.Transact([&](StoreTx& tx) -> Status {
        auto n = tx.NodeById(node.id);
        if (!n.ok() || !n->host_key.empty()) return Status::Ok();
        n->host_key = key;
        Status s = tx.UpdateNode(*n);
        if (!s.ok()) return s;
        EventRecord e{
            0,           0,
            n->id,       n->name(),
            "ssh",       "host key pinned at first contact over SSH: " + key.substr(0, 60) + "...",
            "provisiond"};
        return tx.AppendEvent(e);
      });
    }
    slot.session = std::move(*session);
    return slot.session.get();
  }

  static bool SameKey(const std::string& a, const std::string& b) {
    // "type base64 [comment]": the comment does not matter.
    auto head = [](const std::string& k) {
      auto first = k.find(' ');
      if (first == std::string::npos) return k;
      auto second = k.find(' ', first + 1);
      return k.substr(0, second);
    };
    return head(a) == head(b);
  }

  std::vector<NodeRecord> Group(const std::string& profile_version) {
    NodeFilter f;
    f.profile_version = profile_version;
    std::vector<NodeRecord> out;
    for (auto& n : store.ListNodes(f))
      if (n.state != NodeState::kRetired && n.state != NodeState::kDiscovered)
        out.push_back(std::move(n));
    return out;
  }

  json NodeVars(const NodeRecord& node, const std::vector<NodeRecord>& group) {
    auto facts_of = [](const NodeRecord& n) {
      json f = json::parse(n.facts, nullptr, false);
      return f.is_discarded() ? json::object() : f;
    };
    json all = json::array();
    json hostvars = json::object();
    for (const auto& n : group) {
      all.push_back(n.name());
      hostvars[n.name()] = {
          {"ansible_host", n.ip}, {"provisiond_mac", n.mac}, {"provisiond_facts", facts_of(n)}};
    }
    if (!hostvars.contains(node.name())) {
      all.push_back(node.name());
      hostvars[node.name()] = {{"ansible_host", node.ip},
                               {"provisiond_mac", node.mac},
                               {"provisiond_facts", facts_of(node)}};
    }
    json groups = {{"all", all}, {"ungrouped", json::array()}};
    if (!node.profile_version.empty()) groups[node.profile_version] = all;
    return {{"inventory_hostname", node.name()},
            {"inventory_hostname_short", node.name().substr(0, node.name().find('.'))},
            {"ansible_host", node.ip},
            {"groups", groups},
            {"hostvars", hostvars},
            {"provisiond_facts", facts_of(node)},
            {"provisiond_mac", node.mac},
            {"provisiond_profile", node.profile_version},
            {"provisiond_control_key", settings.public_key}};
  }

  RunOptions Options() {
    RunOptions o;
    o.default_timeout_s = settings.task_timeout_s;
    o.cancel = &cancel;
    o.sleep = [this](int ms) {
      // Sleeps in small steps so a stopping provisiond does not wait.
      auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
      while (std::chrono::steady_clock::now() < until) {
        if (cancel) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(std::min(ms, 100)));
      }
      return !cancel;
    };
    return o;
  }

  // Ends `run` (and, for a configure run, moves the node on) in one
  // transaction, with the run's event.
  void FinishRun(RunRecord& run, int64_t elapsed_ms, const std::string& profile_sha) {
    run.finished_ms = NowMs();
    std::string summary = run.status + ": " + std::to_string(run.ok) + " ok, " +
                          std::to_string(run.changed) + " changed, " + std::to_string(run.failed) +
                          " failed, " + std::to_string(run.skipped) + " skipped in " +
                          Seconds(elapsed_ms);
    if (!run.message.empty()) summary += "; " + run.message;
    Status s = store.Transact([&](StoreTx& tx) -> Status {
      Status u = tx.UpdateRun(run);
      if (!u.ok()) return u;
      EventRecord e{
          0,
          0,
          run.node_id,
          run.node,
          "run",
          "run " + std::to_string(run.id) + " (" + run.kind + " " + run.what + ") " + summary,
          run.who};
      u = tx.AppendEvent(e);
      if (!u.ok() || run.kind != "configure" || run.status == "interrupted") return u;
      auto n = tx.NodeById(run.node_id);
      // The node may have rebooted (a new hello), been retired or deleted
      // meanwhile: then its state is not this run's to change.
      if (!n.ok() || n->state != NodeState::kConfiguring) return Status::Ok();
      if (run.status == "ok") {
        n->configured = profile_sha;
        return tx.Transition(*n, NodeState::kReady,
                             "profile " + run.what + " configured (" + summary + ")", run.who);
      }
      if (run.status == "rebooted") return Status::Ok();  // configured after its hello
      return tx.Transition(*n, NodeState::kFailed, "configure: " + run.message, run.who);
    });
    if (!s.ok())
      spdlog::error("{}: cannot record the end of run {}: {}", run.node, run.id, s.message());
    spdlog::info("{}: run {} {}", run.node, run.id, summary);
  }

  void RunConfigure(int64_t node_id, const std::string& who) {
    auto start = std::chrono::steady_clock::now();
    auto slot = SlotFor(node_id);
    std::lock_guard slot_lock(slot->mu);
    NodeRecord node;
    std::optional<Profile> profile;
    RunRecord run;
    Status s = store.Transact([&](StoreTx& tx) -> Status {
      auto n = tx.NodeById(node_id);
      if (!n.ok()) return n.status();
      node = *n;
      if (node.profile_version.empty()) return Status::Conflict(node.name() + " has no profile");
      auto p = inventory.GetProfile(node.profile_version);
      if (!p.ok()) return p.status();
      profile = std::move(*p);
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
    Configure(*slot, node, *profile, run);
    FinishRun(run, SinceMs(start), profile->sha256);
  }

  // The body of a configure run: playbooks, then health checks.
  void Configure(Slot& slot, const NodeRecord& node, const Profile& profile, RunRecord& run) {
    StoreSink sink(store, run);
    auto session = Session(slot, node);
    if (!session.ok()) {
      run.status = session.status().code() == Code::kUnavailable ? "unreachable" : "failed";
      run.message = "ssh: " + session.status().message();
      return;
    }
    json vars = NodeVars(node, Group(node.profile_version));
    RunOptions options = Options();
    for (const auto& ref : profile.playbooks) {
      auto playbook = LoadPlaybook(settings.playbooks_dir + "/" + ref.file);
      if (!playbook.ok()) {
        run.status = "failed";
        run.message = playbook.status().message();
        return;
      }
      // The profile's vars for this playbook win over the playbook's own.
      options.extra_vars = ref.vars;
      NodeRunOutcome out = RunPlaybook(*playbook, node.name(), **session, vars, &sink, options);
      if (out.status != "ok") {
        run.status = out.status;
        run.message = ref.file + ": " + out.failed_task;
        if (out.status == "unreachable") slot.session.reset();
        return;
      }
    }
    for (const auto& check : profile.health_checks) {
      auto start = std::chrono::steady_clock::now();
      TaskResult r;
      r.playbook = "health";
      r.play = "health checks";
      r.task = check.name;
      r.module = "health";
      r.where = profile.file;
      auto result =
          (*session)->Run(check.command, "", "", static_cast<int>(check.timeout_s) * 1000);
      r.duration_ms = SinceMs(start);
      if (!result.ok()) {
        r.status = "unreachable";
        r.msg = result.status().message();
      } else {
        r.exit_code = result->exit_code;
        r.stdout_tail =
            result->out.substr(result->out.size() > 4096 ? result->out.size() - 4096 : 0);
        r.stderr_tail =
            result->err.substr(result->err.size() > 4096 ? result->err.size() - 4096 : 0);
        r.status = result->exit_code == 0 ? "ok" : "failed";
        if (result->timed_out)
          r.msg = "timed out after " + std::to_string(check.timeout_s) + " s";
        else if (result->exit_code != 0)
          r.msg = "exit code " + std::to_string(result->exit_code);
      }
      sink.OnTask(node.name(), r);
      Event(node, "health",
            check.name + ": " + (r.status == "ok" ? "ok" : r.status + " (" + r.msg + ")"),
            "provisiond");
      if (r.status != "ok") {
        run.status = r.status == "unreachable" ? "unreachable" : "failed";
        std::string out = r.stderr_tail.empty() ? r.stdout_tail : r.stderr_tail;
        if (out.size() > 300) out = out.substr(out.size() - 300);
        run.message = "health check " + check.name + ": " + r.msg + (out.empty() ? "" : ": " + out);
        return;
      }
    }
    run.status = cancel ? "interrupted" : "ok";
  }

  void RunPlaybookJob(std::shared_ptr<Playbook> playbook, RunRecord run, json vars,
                      json extra_vars) {
    auto start = std::chrono::steady_clock::now();
    auto slot = SlotFor(run.node_id);
    std::lock_guard slot_lock(slot->mu);
    auto node = store.FindNode(run.node);
    if (!node.ok()) {
      run.status = "failed";
      run.message = node.status().message();
      FinishRun(run, SinceMs(start), "");
      return;
    }
    StoreSink sink(store, run);
    auto session = Session(*slot, *node);
    if (!session.ok()) {
      run.status = session.status().code() == Code::kUnavailable ? "unreachable" : "failed";
      run.message = "ssh: " + session.status().message();
    } else {
      RunOptions options = Options();
      options.extra_vars = std::move(extra_vars);
      NodeRunOutcome out = RunPlaybook(*playbook, node->name(), **session, vars, &sink, options);
      run.status = out.status;
      run.message = out.failed_task;
      if (out.status == "unreachable") slot->session.reset();
    }
    FinishRun(run, SinceMs(start), "");
  }
};

Configurator::Configurator(Inventory& inventory, ConfigureSettings settings)
    : impl_(std::make_unique<Impl>(inventory, std::move(settings))) {
  int64_t interrupted = impl_->store.InterruptRunningRuns();
  if (interrupted)
    spdlog::warn(
        "{} run(s) were interrupted when provisiond last stopped; they are marked "
        "interrupted and finish at the next profile apply",
        interrupted);
}

Configurator::~Configurator() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
    impl_->jobs.clear();
  }
  impl_->cancel = true;
  impl_->cv.notify_all();
  for (auto& t : impl_->workers) t.join();
  // Runs cut short by the stop are "interrupted" already (the runner saw
  // the cancel flag); anything else still running is marked now.
  impl_->store.InterruptRunningRuns();
}

int Configurator::active() const {
  std::lock_guard lock(impl_->mu);
  return impl_->busy + static_cast<int>(impl_->jobs.size());
}

json Configurator::NodeVars(const NodeRecord& node, const std::vector<NodeRecord>& group) {
  return impl_->NodeVars(node, group);
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
    auto profile = impl_->inventory.GetProfile(node->profile_version);
    if (profile.ok() && profile->sha256 == node->configured)
      return refuse(node->name() + " is ready with profile " + node->profile_version + " already");
  }
  const int64_t id = node->id;
  {
    std::lock_guard lock(impl_->mu);
    if (impl_->stopping) return refuse("provisiond is stopping");
    if (impl_->queued.count(id)) {
      // It runs now or waits: once it ends it runs again with what changed.
      impl_->again.insert(id);
      return true;
    }
    impl_->queued.insert(id);
  }
  Impl* impl = impl_.get();
  impl_->Submit([impl, id, who] {
    while (true) {
      impl->RunConfigure(id, who);
      std::lock_guard lock(impl->mu);
      if (!impl->again.erase(id) || impl->stopping) {
        impl->queued.erase(id);
        return;
      }
    }
  });
  return true;
}

Result<std::vector<RunRecord>> Configurator::StartPlaybook(const std::string& playbook_path,
                                                           const std::vector<std::string>& nodes,
                                                           const json& extra_vars,
                                                           const std::string& who) {
  auto playbook = LoadPlaybook(playbook_path);
  if (!playbook.ok()) return playbook.status();
  auto shared = std::make_shared<Playbook>(std::move(*playbook));
  std::vector<NodeRecord> records;
  for (const auto& name : nodes) {
    auto n = impl_->store.FindNode(name);
    if (!n.ok()) return n.status();
    if (n->state == NodeState::kDiscovered || n->state == NodeState::kRetired)
      return Status::Conflict(n->name() + " is " + std::string(ToString(n->state)) +
                              ": enroll it first");
    if (n->ip.empty())
      return Status::Conflict(n->name() + " has no address (enroll it with --ip, or boot it)");
    records.push_back(*n);
  }
  std::vector<RunRecord> runs;
  Status s = impl_->store.Transact([&](StoreTx& tx) -> Status {
    for (const auto& n : records) {
      RunRecord run;
      run.node_id = n.id;
      run.node = n.name();
      run.kind = "playbook";
      run.what = playbook_path;
      run.who = who;
      Status i = tx.InsertRun(run);
      if (!i.ok()) return i;
      runs.push_back(run);
    }
    return Status::Ok();
  });
  if (!s.ok()) return s;
  for (size_t i = 0; i < runs.size(); ++i) {
    // The same inventory a configure run sees: the node's profile is its
    // cluster (groups['all']); a node without one sees the nodes of this run.
    const auto& node = records[i];
    json vars = impl_->NodeVars(
        node, node.profile_version.empty() ? records : impl_->Group(node.profile_version));
    Impl* impl = impl_.get();
    impl_->Submit([impl, shared, run = runs[i], vars = std::move(vars), extra_vars] {
      impl->RunPlaybookJob(shared, run, vars, extra_vars);
    });
  }
  return runs;
}

std::vector<CommandResult> Configurator::Command(const std::vector<std::string>& nodes,
                                                 const std::string& command,
                                                 const std::string& user, int timeout_ms) {
  std::vector<CommandResult> results(nodes.size());
  std::vector<std::thread> threads;
  threads.reserve(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    threads.emplace_back([this, &nodes, &results, &command, &user, timeout_ms, i] {
      auto start = std::chrono::steady_clock::now();
      CommandResult& r = results[i];
      r.node = nodes[i];
      auto node = impl_->store.FindNode(nodes[i]);
      if (!node.ok()) {
        r.status = "failed";
        r.error = node.status().message();
        return;
      }
      r.node = node->name();
      // A node busy with a run gets a second session for the command.
      auto slot = impl_->SlotFor(node->id);
      Slot spare;
      std::unique_lock lock(slot->mu, std::try_to_lock);
      Slot& use = lock.owns_lock() ? *slot : spare;
      auto session = impl_->Session(use, *node);
      if (!session.ok()) {
        r.status = session.status().code() == Code::kUnavailable ? "unreachable" : "failed";
        r.error = session.status().message();
        r.duration_ms = SinceMs(start);
        return;
      }
      auto out = (*session)->Run(command, "", user, timeout_ms);
      r.duration_ms = SinceMs(start);
      if (!out.ok()) {
        r.status = "unreachable";
        r.error = out.status().message();
        use.session.reset();
        return;
      }
      r.exit_code = out->exit_code;
      r.out = std::move(out->out);
      r.err = std::move(out->err);
      r.status = out->timed_out ? "timeout" : out->exit_code == 0 ? "ok" : "failed";
      if (out->timed_out) r.error = "timed out after " + std::to_string(timeout_ms / 1000) + " s";
    });
  }
  for (auto& t : threads) t.join();
  return results;
}

}  // namespace prov
