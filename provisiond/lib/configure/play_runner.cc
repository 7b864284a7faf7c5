#include "configure/play_runner.h"

#include <chrono>
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
// they are not rendered as templates first (Ansible does the same).
bool KeepsRawArgs(const std::string& module) {
  return module == "assert";
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
    std::set<std::string> notified;
    for (const Task& task : play.tasks) {
      if (Cancelled()) return Interrupted();
      if (!RunTask(play, task, notified)) return false;
    }
    for (const Task& handler : play.handlers) {
      if (!notified.count(handler.name)) continue;
      if (Cancelled()) return Interrupted();
      std::set<std::string> unused;
      if (!RunTask(play, handler, unused)) return false;
    }
    return true;
  }

  bool Fail(const Play& play, const std::string& msg) {
    TaskResult r;
    r.playbook = playbook_.file;
    r.play = play.name;
    r.task = "(play)";
    r.where = play.file + ":" + std::to_string(play.line);
    r.status = "failed";
    r.msg = msg;
    Report(r);
    outcome_.status = "failed";
    outcome_.failed_task = "play " + play.name + " (" + r.where + "): " + r.msg;
    return false;
  }

  bool Interrupted() {
    outcome_.status = "interrupted";
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
    if (r.status == "ok") ++outcome_.ok;
    if (r.status == "changed") ++outcome_.changed;
    if (r.status == "failed") ++outcome_.failed;
    if (r.status == "skipped") ++outcome_.skipped;
    if (sink_) sink_->OnTask(hostname_, r);
  }

  // The variables a task sees: host variables (with what was registered so
  // far), the play's vars, the task's own vars, the extra vars last.
  Result<json> TaskVars(const Task& task) {
    json vars = play_vars_;
    for (const auto& [k, v] : registered_.items()) vars[k] = v;
    for (const auto& [key, value] : task.vars.items()) {
      auto rendered = RenderValue(value, vars);
      if (!rendered.ok())
        return Status::Invalid("vars: " + key + ": " + rendered.status().message());
      vars[key] = *rendered;
    }
    for (const auto& [key, value] : options_.extra_vars.items()) vars[key] = value;
    return vars;
  }

  bool RunTask(const Play& play, const Task& task, std::set<std::string>& notified) {
    TaskResult base;
    base.playbook = playbook_.file;
    base.play = play.name;
    base.task = TaskTitle(task);
    base.module = task.module;
    base.where = task.where();
    base.no_log = task.no_log || play.no_log || UsesSecret(task);
    auto vars = TaskVars(task);
    if (!vars.ok()) return TaskFailed(base, task, vars.status().message(), json::object());

    if (!task.loop) {
      json result;
      Step step = RunOnce(play, task, *vars, base, result);
      if (step == Step::kStop) return false;
      return Finish(task, result, notified);
    }
    // A loop: the condition and the module run once per item; the registered
    // value holds every item's result, as in Ansible.
    Result<json> items = RenderValue(*task.loop, *vars);
    if (!items.ok()) return TaskFailed(base, task, "loop: " + items.status().message(), {});
    if (!items->is_array())
      return TaskFailed(base, task, "loop: expected a list, got " + items->dump(), {});
    json results = json::array();
    bool changed = false, failed = false;
    for (const json& item : *items) {
      json item_vars = *vars;
      item_vars[task.loop_var] = item;
      TaskResult r = base;
      r.item = item.is_string() ? item.get<std::string>() : item.dump();
      json result;
      Step step = RunOnce(play, task, item_vars, r, result);
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
    if (!task.register_as.empty()) registered_[task.register_as] = result;
    if (auto facts = result.find("ansible_facts"); facts != result.end() && facts->is_object())
      for (const auto& [k, v] : facts->items()) registered_[k] = v;
    if (result.value("changed", false))
      for (const auto& h : task.notify) notified.insert(h);
    return true;
  }

  bool TaskFailed(TaskResult r, const Task& task, const std::string& msg, const json& result) {
    r.status = "failed";
    r.msg = msg;
    Report(r);
    if (task.ignore_errors) {
      if (!task.register_as.empty()) {
        json failed = result.is_object() ? result : json::object();
        failed["failed"] = true;
        failed["msg"] = msg;
        registered_[task.register_as] = failed;
      }
      return true;
    }
    outcome_.status = "failed";
    outcome_.failed_task = r.task + " (" + r.where + "): " + r.msg;
    return false;
  }

  enum class Step { kContinue, kStop };

  // Runs the module once for one item (with until/retries), fills `result`
  // and reports the task. kStop: the node must stop here.
  Step RunOnce(const Play& play, const Task& task, json& vars, TaskResult r, json& result) {
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
        r.status = "skipped";
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
    bool become = task.become.value_or(play.become);
    std::string become_user;
    if (become) become_user = !task.become_user.empty() ? task.become_user : play.become_user;
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
      ModuleContext ctx{remote_, become_user, timeout_s * 1000, playbook_.dir, vars};
      outcome = spec->run(*args, ctx);
      if (outcome.unreachable) {
        r.status = "unreachable";
        r.msg = outcome.msg;
        r.duration_ms = SinceMs(start);
        Report(r);
        outcome_.status = "unreachable";
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
    r.status = r.changed ? "changed" : "ok";
    if (result.contains("msg") && result["msg"].is_string()) r.msg = result["msg"];
    Report(r);
    if (result.value("rebooted", false)) {
      // The node's root lives in RAM: after a reboot it netboots, phones home
      // and is configured again from the start.
      outcome_.status = "rebooted";
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
  RunSink* sink_;
  const RunOptions& options_;
  NodeRunOutcome outcome_;

 public:
  const json& registered() const { return registered_; }
};

}  // namespace

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
