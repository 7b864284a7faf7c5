#include "configure/play_runner.h"

#include <chrono>
#include <optional>
#include <set>
#include <thread>

#include "base/clock.h"
#include "configure/secrets.h"
#include "playbook/jinja/jinja.h"
#include "playbook/modules/modules.h"

namespace prov {
namespace {

using json = nlohmann::json;

std::string Tail(const json& result, const char* key) {
  auto it = result.find(key);
  if (it == result.end() || !it->is_string()) return "";
  return OutputTail(it->get_ref<const std::string&>());
}

// The name shown for a task: its own, or "module: first argument".
std::string TaskTitle(const Task& task) {
  if (!task.name.empty()) return task.name;
  std::string title = task.module;
  if (auto raw = task.args.find("_raw_params"); raw != task.args.end() && raw->is_string())
    title += ": " + raw->get<std::string>();
  else if (!task.args.empty())
    title += ": " + task.args.begin().key() + "=" +
             (task.args.begin()->is_string() ? task.args.begin()->get<std::string>()
                                             : task.args.begin()->dump());
  return title.size() > 80 ? title.substr(0, 77) + "..." : title;
}

// Arguments whose strings are conditions the module evaluates itself, so
// they are not rendered as templates first (Ansible does the same): the
// module's rules say so.
bool KeepsRawArgs(const std::string& module) {
  const ModuleSpec* spec = FindModule(module);
  return spec && spec->rules.raw_args;
}

// One node's run: its variables (which registered results and set_fact
// extend) and the counters of the outcome.
class NodeRun {
 public:
  NodeRun(const Playbook& playbook, const std::string& hostname, Remote& remote, json vars,
          RunSink* sink, const RunOptions& options)
      : playbook_(playbook),
        hostname_(hostname),
        remote_(remote),
        host_vars_(std::move(vars)),
        sink_(sink),
        options_(options) {
    outcome_.node = hostname;
  }

  NodeRunOutcome Run() {
    for (const Play& play : playbook_.plays) {
      if (!HostsMatch(play.hosts, hostname_)) continue;
      if (!RunPlay(play)) break;
    }
    return outcome_;
  }

 private:
  bool Cancelled() const { return options_.cancel && options_.cancel->load(); }

  bool Sleep(int ms) {
    if (options_.sleep) return options_.sleep(ms);
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    return !Cancelled();
  }

  // False when the node must stop (a failure, unreachable, cancelled).
  bool RunPlay(const Play& play) {
    json vars = host_vars_;
    // Play vars may use the extra vars, which then win over them.
    for (const auto& [key, value] : options_.extra_vars.items()) vars[key] = value;
    for (const auto& [key, value] : play.vars.items()) {
      auto rendered = RenderValue(value, vars);
      if (!rendered.ok())
        return Fail(play, "play vars: " + key + ": " + rendered.status().message());
      vars[key] = *rendered;
    }
    for (const auto& [key, value] : options_.extra_vars.items()) vars[key] = value;
    play_vars_ = std::move(vars);
    play_defaults_ = json::object();
    // pre_tasks, then roles and tasks, then post_tasks; the handlers they
    // notified run after each, as Ansible flushes them.
    for (const std::vector<Task>* section : {&play.pre_tasks, &play.tasks, &play.post_tasks}) {
      std::set<std::string> notified;
      if (!RunTasks(play, *section, notified)) return false;
      if (!RunHandlers(play, notified)) return false;
    }
    return true;
  }

  bool RunTasks(const Play& play, const std::vector<Task>& tasks, std::set<std::string>& notified) {
    for (const Task& task : tasks) {
      if (Cancelled()) return Interrupted();
      if (!RunTask(play, task, notified)) return false;
    }
    return true;
  }

  bool RunHandlers(const Play& play, const std::set<std::string>& notified) {
    for (const Task& handler : play.handlers) {
      bool wanted = notified.count(handler.name) > 0;
      for (const auto& topic : handler.listen) wanted = wanted || notified.count(topic) > 0;
      if (!wanted) continue;
      if (Cancelled()) return Interrupted();
      std::set<std::string> unused;
      if (!RunTask(play, handler, unused)) return false;
    }
    return true;
  }

  // A block (block:, an include, a role): its condition once, then its
  // tasks with its vars; a failure runs `rescue` (the node goes on when the
  // rescue succeeds), and `always` runs after both.
  bool RunBlock(const Play& play, const Task& block, std::set<std::string>& notified) {
    TaskResult base;
    base.playbook = playbook_.file;
    base.play = play.name;
    base.task = block.name.empty() ? "block" : block.name;
    base.module = "block";
    base.where = block.where();
    // A role's defaults stay visible to the rest of the play, as Ansible
    // exposes them.
    for (const auto& [key, value] : block.defaults.items()) play_defaults_[key] = value;
    scopes_.push_back(&block);
    struct Pop {
      std::vector<const Task*>& v;
      ~Pop() { v.pop_back(); }
    } pop{scopes_};
    auto vars = TaskVars(block);
    if (!vars.ok()) return TaskFailed(base, block, vars.status().message(), json::object());
    for (const auto& cond : block.when) {
      auto holds = EvalCondition(cond, *vars);
      if (!holds.ok()) return TaskFailed(base, block, "when: " + holds.status().message(), {});
      if (!*holds) {
        base.status = TaskStatus::kSkipped;
        base.msg = "when: " + cond + " is false";
        Report(base);
        return true;
      }
    }
    bool ok = RunTasks(play, block.block, notified);
    if (!ok && outcome_.status == RunStatus::kFailed && !block.rescue.empty()) {
      // Rescued: the failure is the rescue's to handle.
      registered_["ansible_failed_task"] = {{"name", last_failed_.task},
                                            {"where", last_failed_.where}};
      registered_["ansible_failed_result"] = {{"failed", true}, {"msg", last_failed_.msg}};
      outcome_.status = RunStatus::kOk;
      outcome_.failed_task.clear();
      ok = RunTasks(play, block.rescue, notified);
    }
    if (!block.always.empty() && (ok || outcome_.status == RunStatus::kFailed)) {
      // The failure stands aside while the always tasks run, and comes back
      // unless one of them fails in its turn.
      const RunStatus status = outcome_.status;
      std::string failed_task = std::move(outcome_.failed_task);
      outcome_.status = RunStatus::kOk;
      outcome_.failed_task.clear();
      bool always_ok = RunTasks(play, block.always, notified);
      if (always_ok) {
        outcome_.status = status;
        outcome_.failed_task = std::move(failed_task);
      }
      ok = ok && always_ok;
    }
    return ok;
  }

  bool Fail(const Play& play, const std::string& msg) {
    TaskResult r;
    r.playbook = playbook_.file;
    r.play = play.name;
    r.task = "(play)";
    r.where = play.file + ":" + std::to_string(play.line);
    r.status = TaskStatus::kFailed;
    r.msg = msg;
    Report(r);
    outcome_.status = RunStatus::kFailed;
    outcome_.failed_task = "play " + play.name + " (" + r.where + "): " + r.msg;
    return false;
  }

  bool Interrupted() {
    outcome_.status = RunStatus::kInterrupted;
    return false;
  }

  // Whether `task` names a var filled from the secrets store (in its args,
  // conditions, loop or vars): Ansible's no_log, implied.
  bool UsesSecret(const Task& task) const {
    if (options_.secret_vars.empty()) return false;
    std::string text = task.args.dump() + task.vars.dump() + task.changed_when + task.failed_when +
                       task.until + (task.loop ? task.loop->dump() : "");
    for (const auto& cond : task.when) text += cond;
    for (const auto& name : options_.secret_vars)
      if (text.find(name) != std::string::npos) return true;
    return false;
  }

  // What is recorded of a result: with no_log, its status and exit code
  // only; never a secret's value.
  void Report(TaskResult& r) {
    if (r.no_log) {
      r.stdout_tail.clear();
      r.stderr_tail.clear();
      r.item.clear();
      r.msg = "(output hidden: no_log)";
    }
    if (!options_.secret_values.empty()) {
      for (std::string* field : {&r.task, &r.msg, &r.stdout_tail, &r.stderr_tail, &r.item})
        *field = RedactSecrets(std::move(*field), options_.secret_values);
    }
    if (r.status == TaskStatus::kOk) ++outcome_.ok;
    if (r.status == TaskStatus::kChanged) ++outcome_.changed;
    if (r.status == TaskStatus::kFailed) ++outcome_.failed;
    if (r.status == TaskStatus::kSkipped) ++outcome_.skipped;
    if (sink_) sink_->OnTask(hostname_, r);
  }

  // The variables a task sees: host variables (with what was registered so
  // far), the play's vars, the task's own vars, the extra vars last.
  Result<json> TaskVars(const Task& task) {
    // Every layer's values first, by precedence (roles' defaults lose to
    // everything; then the play's vars; the blocks' and roles' vars, outer
    // first; registered results; the task's vars; extra vars win), then the
    // templated ones rendered against the result, so a default may use a
    // var a role's parameters set, as Ansible's lazy templating allows.
    json vars = play_vars_;
    json raw = json::object();
    auto defaults = [&](const json& d) {
      for (const auto& [key, value] : d.items())
        if (!play_vars_.contains(key)) raw[key] = value;
    };
    defaults(play_defaults_);
    for (const Task* scope : scopes_) defaults(scope->defaults);
    defaults(task.defaults);
    auto layer = [&](const json& v) {
      for (const auto& [key, value] : v.items()) {
        raw[key] = value;
        vars.erase(key);
      }
    };
    for (const Task* scope : scopes_)
      if (scope != &task) layer(scope->vars);
    for (const auto& [k, v] : registered_.items()) {
      vars[k] = v;
      raw.erase(k);
    }
    layer(task.vars);
    for (const auto& [key, value] : options_.extra_vars.items()) {
      vars[key] = value;
      raw.erase(key);
    }
    Status s = RenderPending(raw, vars);
    if (!s.ok()) return s;
    return vars;
  }

  // Renders each of `pending` into `vars`, in as many passes as their
  // references to each other need; what still fails names its variable.
  static Status RenderPending(json& pending, json& vars) {
    while (!pending.empty()) {
      std::string first_error;
      std::vector<std::string> done;
      for (const auto& [key, value] : pending.items()) {
        auto rendered = RenderValue(value, vars);
        if (rendered.ok()) {
          vars[key] = std::move(*rendered);
          done.push_back(key);
        } else if (first_error.empty()) {
          first_error = "vars: " + key + ": " + rendered.status().message();
        }
      }
      if (done.empty()) return Status::Invalid(first_error);
      for (const auto& key : done) pending.erase(key);
    }
    return Status::Ok();
  }

  bool RunTask(const Play& play, const Task& task, std::set<std::string>& notified) {
    if (task.is_block) return RunBlock(play, task, notified);
    TaskResult base;
    base.playbook = playbook_.file;
    base.play = play.name;
    base.task = TaskTitle(task);
    base.module = task.module;
    base.where = task.where();
    base.no_log = task.no_log || play.no_log || UsesSecret(task);
    for (const Task* scope : scopes_) base.no_log = base.no_log || scope->no_log;
    auto vars = TaskVars(task);
    if (!vars.ok()) return TaskFailed(base, task, vars.status().message(), json::object());
    if (task.run_once && options_.once) return RunTaskOnce(play, task, *vars, base, notified);
    return RunTaskBody(play, task, *vars, base, notified);
  }

  // A run_once task: run here, or take the result of the node that ran it.
  bool RunTaskOnce(const Play& play, const Task& task, json& vars, TaskResult& base,
                   std::set<std::string>& notified) {
    // The same task reached again (a handler flushed twice, a loop over an
    // include) is another turn.
    const std::string key = std::to_string(reinterpret_cast<uintptr_t>(&task)) + "#" +
                            std::to_string(once_seen_[&task]++);
    RunOnceTable::Done done;
    switch (options_.once->Take(key, options_.cancel, &done)) {
      case RunOnceTable::Turn::kCancelled:
        return Interrupted();
      case RunOnceTable::Turn::kRun: {
        last_status_.reset();
        bool go_on = RunTaskBody(play, task, vars, base, notified);
        if (!last_status_ || outcome_.status == RunStatus::kUnreachable ||
            outcome_.status == RunStatus::kInterrupted) {
          options_.once->Finish(key, std::nullopt);
        } else {
          options_.once->Finish(
              key, RunOnceTable::Done{hostname_, *last_status_, last_msg_, last_result_});
        }
        return go_on;
      }
      case RunOnceTable::Turn::kTaken:
        break;
    }
    TaskResult r = base;
    r.msg = "run_once: ran on " + done.node + " (" + ToString(done.status) + ")" +
            (done.msg.empty() ? "" : ": " + done.msg);
    if (done.status == TaskStatus::kFailed) return TaskFailed(r, task, r.msg, done.result);
    r.status = done.status == TaskStatus::kSkipped ? TaskStatus::kSkipped : TaskStatus::kOk;
    Report(r);
    return Finish(task, done.result, notified);
  }

  // A task's module, once or once per loop item; then register and notify.
  bool RunTaskBody(const Play& play, const Task& task, json& vars, TaskResult& base,
                   std::set<std::string>& notified) {
    if (!task.loop) {
      json result;
      Step step = RunItem(play, task, vars, base, result);
      if (step == Step::kStop) return false;
      return Finish(task, result, notified);
    }
    // A loop: the condition and the module run once per item; the registered
    // value holds every item's result, as in Ansible.
    Result<json> items = RenderValue(*task.loop, vars);
    if (!items.ok()) return TaskFailed(base, task, "loop: " + items.status().message(), {});
    if (!items->is_array())
      return TaskFailed(base, task, "loop: expected a list, got " + items->dump(), {});
    json results = json::array();
    bool changed = false, failed = false;
    size_t index = 0;
    for (const json& item : *items) {
      json item_vars = vars;
      item_vars[task.loop_var] = item;
      if (!task.index_var.empty()) item_vars[task.index_var] = index;
      ++index;
      TaskResult r = base;
      r.item = item.is_string() ? item.get<std::string>() : item.dump();
      if (!task.loop_label.empty()) {
        auto label = RenderValue(json(task.loop_label), item_vars);
        if (label.ok()) r.item = label->is_string() ? label->get<std::string>() : label->dump();
      }
      json result;
      Step step = RunItem(play, task, item_vars, r, result);
      // set_fact in a loop: each item's facts are seen by the next item and
      // the rest of the run, as Ansible sets them item by item.
      if (auto facts = result.find("ansible_facts"); facts != result.end() && facts->is_object())
        for (const auto& [k, v] : facts->items()) {
          registered_[k] = v;
          vars[k] = v;
        }
      result[task.loop_var] = item;
      results.push_back(result);
      if (step == Step::kStop) return false;
      changed = changed || result.value("changed", false);
      failed = failed || result.value("failed", false);
    }
    json all = {{"results", results}, {"changed", changed}, {"failed", failed}};
    if (failed) all["msg"] = "one or more items failed";
    return Finish(task, all, notified);
  }

  // After a task (all its items): register, set_fact, notify.
  bool Finish(const Task& task, const json& result, std::set<std::string>& notified) {
    last_result_ = result;
    if (!last_status_) {
      last_status_ = result.value("skipped", false)   ? TaskStatus::kSkipped
                     : result.value("changed", false) ? TaskStatus::kChanged
                                                      : TaskStatus::kOk;
      last_msg_ = result.contains("msg") && result["msg"].is_string() ? result["msg"] : "";
    }
    if (!task.register_as.empty()) registered_[task.register_as] = result;
    if (auto facts = result.find("ansible_facts"); facts != result.end() && facts->is_object())
      for (const auto& [k, v] : facts->items()) registered_[k] = v;
    if (result.value("changed", false))
      for (const auto& h : task.notify) notified.insert(h);
    return true;
  }

  bool TaskFailed(TaskResult r, const Task& task, const std::string& msg, const json& result) {
    r.status = TaskStatus::kFailed;
    r.msg = msg;
    Report(r);
    last_failed_ = r;
    last_status_ = TaskStatus::kFailed;
    last_msg_ = msg;
    last_result_ = result.is_object() ? result : json::object();
    last_result_["failed"] = true;
    last_result_["msg"] = msg;
    bool ignore = task.ignore_errors;
    for (const Task* scope : scopes_) ignore = ignore || (scope != &task && scope->ignore_errors);
    if (ignore) {
      if (!task.register_as.empty()) {
        json failed = result.is_object() ? result : json::object();
        failed["failed"] = true;
        failed["msg"] = msg;
        registered_[task.register_as] = failed;
      }
      return true;
    }
    outcome_.status = RunStatus::kFailed;
    outcome_.failed_task = r.task + " (" + r.where + "): " + r.msg;
    return false;
  }

  enum class Step { kContinue, kStop };

  // Runs the module once for one item (with until/retries), fills `result`
  // and reports the task. kStop: the node must stop here.
  Step RunItem(const Play& play, const Task& task, json& vars, TaskResult r, json& result) {
    auto start = std::chrono::steady_clock::now();
    for (const auto& cond : task.when) {
      auto holds = EvalCondition(cond, vars);
      if (!holds.ok()) {
        result = {{"failed", true}, {"msg", "when: " + holds.status().message()}};
        r.duration_ms = SinceMs(start);
        return TaskFailed(r, task, "when: " + holds.status().message(), result) ? Step::kContinue
                                                                                : Step::kStop;
      }
      if (!*holds) {
        result = {{"changed", false}, {"skipped", true}, {"skip_reason", "when: " + cond}};
        r.status = TaskStatus::kSkipped;
        r.msg = "when: " + cond + " is false";
        Report(r);
        return Step::kContinue;
      }
    }
    const ModuleSpec* spec = FindModule(task.module);
    if (!spec) {
      result = {{"failed", true}};
      return TaskFailed(r, task, "unknown module " + task.module, result) ? Step::kContinue
                                                                          : Step::kStop;
    }
    // A task's own become wins, then its blocks' (innermost first), then
    // the play's.
    std::optional<bool> become_set = task.become;
    std::string user_set = task.become_user;
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      if (!become_set && (*it)->become) become_set = (*it)->become;
      if (user_set.empty()) user_set = (*it)->become_user;
    }
    bool become = become_set.value_or(play.become);
    std::string become_user;
    if (become) become_user = !user_set.empty() ? user_set : play.become_user;
    const int timeout_s = task.timeout_s > 0 ? task.timeout_s : options_.default_timeout_s;
    const int attempts = task.until.empty() ? 1 : std::max(1, task.retries + 1);
    ModuleOutcome outcome;
    std::string error;
    int attempt = 0;
    for (attempt = 1; attempt <= attempts; ++attempt) {
      error.clear();
      Result<json> args =
          KeepsRawArgs(task.module) ? Result<json>(task.args) : RenderValue(task.args, vars);
      if (!args.ok()) {
        error = args.status().message();
        result = {{"failed", true}, {"msg", error}};
        break;
      }
      if (task.delegate_local && !options_.local) {
        error = "delegate_to: localhost is not available to this run";
        result = {{"failed", true}, {"msg", error}};
        break;
      }
      Remote& target = task.delegate_local ? *options_.local : remote_;
      ModuleContext ctx{target, become_user, timeout_s * 1000,
                        task.files_dir.empty() ? playbook_.dir : task.files_dir, vars};
      outcome = spec->run(*args, ctx);
      if (outcome.unreachable) {
        r.status = TaskStatus::kUnreachable;
        r.msg = outcome.msg;
        r.duration_ms = SinceMs(start);
        Report(r);
        outcome_.status = RunStatus::kUnreachable;
        outcome_.failed_task = r.task + " (" + r.where + "): " + r.msg;
        result = {{"unreachable", true}, {"msg", outcome.msg}};
        return Step::kStop;
      }
      result = outcome.result.is_object() ? outcome.result : json::object();
      result["changed"] = outcome.changed;
      result["failed"] = outcome.failed;
      if (!outcome.msg.empty() && !result.contains("msg")) result["msg"] = outcome.msg;
      // changed_when / failed_when see the result under its registered name.
      json cond_vars = vars;
      if (!task.register_as.empty()) cond_vars[task.register_as] = result;
      if (!task.changed_when.empty()) {
        auto c = EvalCondition(task.changed_when, cond_vars);
        if (!c.ok()) {
          error = "changed_when: " + c.status().message();
          break;
        }
        result["changed"] = *c;
      }
      if (!task.failed_when.empty()) {
        auto f = EvalCondition(task.failed_when, cond_vars);
        if (!f.ok()) {
          error = "failed_when: " + f.status().message();
          break;
        }
        result["failed"] = *f;
        if (*f && !result.contains("msg")) result["msg"] = "failed_when: " + task.failed_when;
        if (!*f) result.erase("msg");
      }
      if (task.until.empty()) break;
      result["attempts"] = attempt;
      if (!task.register_as.empty()) cond_vars[task.register_as] = result;
      auto done = EvalCondition(task.until, cond_vars);
      if (!done.ok()) {
        error = "until: " + done.status().message();
        break;
      }
      if (*done) {
        result["failed"] = false;
        break;
      }
      if (attempt == attempts) {
        result["failed"] = true;
        result["msg"] =
            "until: " + task.until + " still false after " + std::to_string(attempts) + " attempts";
        break;
      }
      if (!Sleep(task.delay_s * 1000)) {
        Interrupted();
        return Step::kStop;
      }
    }
    r.duration_ms = SinceMs(start);
    r.changed = result.value("changed", false);
    r.exit_code =
        result.contains("rc") && result["rc"].is_number_integer() ? result["rc"].get<int>() : -1;
    r.stdout_tail = Tail(result, "stdout");
    r.stderr_tail = Tail(result, "stderr");
    if (!error.empty()) {
      result["failed"] = true;
      result["msg"] = error;
    }
    if (result.value("failed", false)) {
      std::string msg = result.contains("msg") && result["msg"].is_string()
                            ? result["msg"].get<std::string>()
                            : "failed";
      return TaskFailed(r, task, msg, result) ? Step::kContinue : Step::kStop;
    }
    // A module may skip itself (a service's state at image stage).
    r.status = result.value("skipped", false) ? TaskStatus::kSkipped
               : r.changed                    ? TaskStatus::kChanged
                                              : TaskStatus::kOk;
    if (result.contains("msg") && result["msg"].is_string()) r.msg = result["msg"];
    Report(r);
    if (result.value("rebooted", false)) {
      // The node's root lives in RAM: after a reboot it netboots, phones home
      // and is configured again from the start.
      outcome_.status = RunStatus::kRebooted;
      return Step::kStop;
    }
    return Step::kContinue;
  }

  const Playbook& playbook_;
  const std::string& hostname_;
  Remote& remote_;
  json host_vars_;
  json play_vars_;
  json registered_ = json::object();
  json play_defaults_ = json::object();  // the defaults of the play's roles so far
  std::vector<const Task*> scopes_;      // the blocks (and roles) the task runs in, outer first
  TaskResult last_failed_;               // for a rescue's ansible_failed_task
  // The last task's result and status (ok, changed, skipped, failed), which a
  // run_once task hands to the other nodes.
  json last_result_;
  std::optional<TaskStatus> last_status_;  // none yet
  std::string last_msg_;
  std::map<const Task*, int> once_seen_;  // run_once tasks reached so far, by task
  RunSink* sink_;
  const RunOptions& options_;
  NodeRunOutcome outcome_;

 public:
  const json& registered() const { return registered_; }
};

}  // namespace

RunOnceTable::Turn RunOnceTable::Take(const std::string& key, const std::atomic<bool>* cancel,
                                      Done* done) {
  std::unique_lock lock(mu_);
  for (;;) {
    auto it = tasks_.find(key);
    if (it == tasks_.end()) {
      tasks_.emplace(key, std::nullopt);
      return Turn::kRun;
    }
    if (it->second) {
      *done = *it->second;
      return Turn::kTaken;
    }
    if (cancel && cancel->load()) return Turn::kCancelled;
    // Bounded waits, so a cancel is seen while another node runs the task.
    cv_.wait_for(lock, std::chrono::milliseconds(100));
  }
}

void RunOnceTable::Finish(const std::string& key, std::optional<Done> done) {
  {
    std::lock_guard lock(mu_);
    if (done)
      tasks_[key] = std::move(done);
    else
      tasks_.erase(key);
  }
  cv_.notify_all();
}

std::string OutputTail(std::string_view output, size_t bytes) {
  return std::string(output.size() <= bytes ? output : output.substr(output.size() - bytes));
}

NodeRunOutcome RunPlaybook(const Playbook& playbook, const std::string& hostname, Remote& remote,
                           const nlohmann::json& vars, RunSink* sink, const RunOptions& options) {
  NodeRun run(playbook, hostname, remote, vars, sink, options);
  NodeRunOutcome outcome = run.Run();
  outcome.registered = run.registered();
  return outcome;
}

}  // namespace prov
