#include "playbook/playbook.h"

#include <fnmatch.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <set>

#include "base/file_util.h"
#include "base/hostlist.h"
#include "base/strings.h"
#include "base/yaml_reader.h"
#include "playbook/jinja/jinja.h"
#include "playbook/jinja/regex.h"
#include "playbook/modules/modules.h"

namespace prov {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// The task keywords this runner implements (docs/playbooks.md); `args` holds
// module arguments, `tags` is accepted and ignored.
const std::set<std::string> kTaskKeywords = {
    "name",          "when", "register",   "changed_when", "failed_when", "until",  "retries",
    "delay",         "loop", "with_items", "loop_control", "notify",      "become", "become_user",
    "ignore_errors", "vars", "timeout",    "tags",         "args",        "no_log"};

// Ansible keywords a playbook may reasonably use that this runner does not
// implement: named as unsupported rather than as unknown.
const std::set<std::string> kUnsupportedTaskKeywords = {"block",
                                                        "rescue",
                                                        "always",
                                                        "delegate_to",
                                                        "delegate_facts",
                                                        "run_once",
                                                        "local_action",
                                                        "action",
                                                        "async",
                                                        "poll",
                                                        "environment",
                                                        "check_mode",
                                                        "diff",
                                                        "become_method",
                                                        "become_flags",
                                                        "become_exe",
                                                        "listen",
                                                        "connection",
                                                        "remote_user",
                                                        "throttle",
                                                        "any_errors_fatal",
                                                        "debugger",
                                                        "module_defaults",
                                                        "collections",
                                                        "ignore_unreachable",
                                                        "with_dict",
                                                        "with_list",
                                                        "with_fileglob",
                                                        "with_together",
                                                        "with_subelements",
                                                        "with_sequence",
                                                        "with_nested",
                                                        "with_first_found",
                                                        "with_lines",
                                                        "with_indexed_items",
                                                        "with_random_choice",
                                                        "with_flattened",
                                                        "with_inventory_hostnames",
                                                        "include_tasks",
                                                        "import_tasks",
                                                        "include_role",
                                                        "import_role",
                                                        "include",
                                                        "include_vars",
                                                        "import_playbook",
                                                        "meta",
                                                        "setup",
                                                        "gather_facts",
                                                        "port",
                                                        "vars_files",
                                                        "vars_prompt"};

const std::set<std::string> kUnsupportedPlayKeywords = {
    "any_errors_fatal",    "serial",         "strategy",     "roles",
    "pre_tasks",           "post_tasks",     "vars_files",   "vars_prompt",
    "max_fail_percentage", "order",          "remote_user",  "connection",
    "environment",         "become_method",  "become_flags", "collections",
    "module_defaults",     "run_once",       "throttle",     "force_handlers",
    "ignore_unreachable",  "check_mode",     "diff",         "fact_path",
    "gather_subset",       "gather_timeout", "port",         "debugger",
    "ignore_errors",       "when",           "tags",         "import_playbook"};

const jinja::Regex kIdentifier = jinja::FixedRegex("[A-Za-z_][A-Za-z0-9_]*");

// YAML 1.1 scalars, as PyYAML (and so Ansible) resolves them; matched whole
// (jinja::Matches) on the bounded engine, since a scalar may be long.
const jinja::Regex kYamlBool =
    jinja::FixedRegex("yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF");
const jinja::Regex kYamlNull = jinja::FixedRegex("~|null|Null|NULL|");
const jinja::Regex kYamlDecimal = jinja::FixedRegex("[-+]?(0|[1-9][0-9_]*)");
const jinja::Regex kYamlOctal = jinja::FixedRegex("[-+]?0[0-7_]+");
const jinja::Regex kYamlHex = jinja::FixedRegex("[-+]?0x[0-9a-fA-F_]+");
const jinja::Regex kYamlBinary = jinja::FixedRegex("[-+]?0b[01_]+");
const jinja::Regex kYamlFloat = jinja::FixedRegex(
    "[-+]?([0-9][0-9_]*)?\\.[0-9_]*([eE][-+][0-9]+)?|[-+]?\\.(inf|Inf|INF)|\\.(nan|NaN|NAN)");

json ScalarToJson(const YAML::Node& n) {
  const std::string& s = n.Scalar();
  if (n.Tag() != "?") return s;  // quoted or tagged: a string
  if (jinja::Matches(kYamlNull, s)) return nullptr;
  if (jinja::Matches(kYamlBool, s)) {
    const char c = s[0];
    return c == 'y' || c == 'Y' || c == 't' || c == 'T' || s == "on" || s == "On" || s == "ON";
  }
  auto integer = [&](int base, size_t skip) -> json {
    std::string digits;
    bool negative = false;
    size_t i = 0;
    if (s[0] == '-' || s[0] == '+') {
      negative = s[0] == '-';
      i = 1;
    }
    for (i += skip; i < s.size(); ++i)
      if (s[i] != '_') digits += s[i];
    try {
      size_t used = 0;
      long long v = std::stoll(digits, &used, base);
      if (used != digits.size()) return s;
      return negative ? -v : v;
    } catch (const std::exception&) {
      return s;  // too large for an integer: keep the text
    }
  };
  if (jinja::Matches(kYamlDecimal, s)) return integer(10, 0);
  if (jinja::Matches(kYamlOctal, s)) return integer(8, 1);  // unquoted 0644 is 420
  if (jinja::Matches(kYamlHex, s)) return integer(16, 2);
  if (jinja::Matches(kYamlBinary, s)) return integer(2, 2);
  if (jinja::Matches(kYamlFloat, s) && s != "." && s != "-." && s != "+.") {
    std::string t;
    for (char c : s)
      if (c != '_') t += c;
    if (t.find("inf") != std::string::npos || t.find("Inf") != std::string::npos ||
        t.find("INF") != std::string::npos)
      return t[0] == '-' ? -std::numeric_limits<double>::infinity()
                         : std::numeric_limits<double>::infinity();
    if (t.find("nan") != std::string::npos || t.find("NaN") != std::string::npos ||
        t.find("NAN") != std::string::npos)
      return s;  // JSON has no NaN
    return std::stod(t);
  }
  return s;
}

std::string Trimmed(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// Splits a hosts pattern on ',' and ':' outside brackets ("n[1,3],gpu1").
std::vector<std::string> SplitPattern(const std::string& hosts) {
  std::vector<std::string> terms;
  std::string cur;
  int depth = 0;
  for (char c : hosts) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if ((c == ',' || c == ':') && depth <= 0) {
      terms.push_back(Trimmed(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  terms.push_back(Trimmed(cur));
  return terms;
}

bool TermMatches(const std::string& term, const std::string& hostname) {
  if (term == "all" || term == "*") return true;
  if (term.find_first_of("*?") != std::string::npos)
    return fnmatch(term.c_str(), hostname.c_str(), 0) == 0;
  if (term.find('[') != std::string::npos) {
    auto names = ExpandHostlist(term);
    return names.ok() && std::find(names->begin(), names->end(), hostname) != names->end();
  }
  return term == hostname;
}

// "a 'bool'" for messages.
std::string Found(const YAML::Node& n) {
  if (n.IsScalar()) return "'" + n.Scalar() + "'";
  return ScalarText(n);
}

class PlaybookParser {
 public:
  PlaybookParser(const std::string& file, std::string dir) : errors_(file), dir_(std::move(dir)) {}

  Result<Playbook> Parse(const std::string& text) {
    Playbook pb;
    pb.file = errors_.file();
    pb.dir = dir_;
    YAML::Node root = ParseYaml(text, errors_);
    if (!errors_.empty()) return errors_.ToStatus();
    if (!root.IsDefined() || root.IsNull()) {
      errors_.AddFileLevel("the playbook is empty; expected a list of plays");
      return errors_.ToStatus();
    }
    if (!root.IsSequence()) {
      errors_.Add(root, "a playbook must be a list of plays, found " + ScalarText(root));
      return errors_.ToStatus();
    }
    for (const auto& item : root) {
      if (item.IsMap() && item["import_playbook"].IsDefined()) {
        errors_.Add(item, "'import_playbook' is not supported (name each playbook in the profile)");
        continue;
      }
      Play play;
      ParsePlay(item, play);
      pb.plays.push_back(std::move(play));
    }
    if (!errors_.empty()) return errors_.ToStatus();
    pb.reached_files.assign(reached_files_.begin(), reached_files_.end());
    pb.reached_dirs.assign(reached_dirs_.begin(), reached_dirs_.end());
    return pb;
  }

 private:
  struct NotifyRef {
    std::string name;
    YAML::Mark mark;
  };

  void ParsePlay(const YAML::Node& node, Play& play) {
    play.file = errors_.file();
    play.line = node.Mark().line + 1;
    MapReader m(node, errors_, "play");
    if (!m.valid()) return;
    RejectUnsupported(m, kUnsupportedPlayKeywords, "play");
    if (m.GetString("name", play.name)) CheckTemplate(m.Raw("name"), "name");
    YAML::Node hosts = m.Raw("hosts");
    if (!hosts.IsDefined() || hosts.IsNull()) {
      errors_.Add(node,
                  "play: missing required key 'hosts' (all, a hostname, a glob or a hostlist)");
    } else if (hosts.IsScalar()) {
      play.hosts = hosts.Scalar();
      CheckHosts(hosts, play.hosts);
    } else if (hosts.IsSequence()) {
      std::vector<std::string> parts;
      for (const auto& h : hosts) {
        if (!h.IsScalar()) {
          errors_.Add(h, "entries of 'hosts' must be strings, found " + ScalarText(h));
          continue;
        }
        CheckHosts(h, h.Scalar());
        parts.push_back(h.Scalar());
      }
      play.hosts = Join(parts, ",");
    } else {
      errors_.Add(hosts,
                  "'hosts' must be a pattern or a list of patterns, found " + ScalarText(hosts));
    }
    m.GetBool("become", play.become);
    m.GetString("become_user", play.become_user);
    m.GetBool("no_log", play.no_log);
    bool gather = false;
    m.GetBool("gather_facts", gather);  // accepted; provisiond_facts replaces setup
    play.vars = Vars(m.Raw("vars"));

    std::vector<NotifyRef> notified;
    std::set<std::string> handler_names;
    std::vector<YAML::Mark> task_marks, handler_marks;
    TaskList(m.Raw("tasks"), "tasks", play.tasks, notified, task_marks);
    TaskList(m.Raw("handlers"), "handlers", play.handlers, notified, handler_marks);
    for (size_t i = 0; i < play.handlers.size(); ++i) {
      const Task& h = play.handlers[i];
      if (h.name.empty())
        errors_.Add(handler_marks[i], "a handler needs a name (notify finds it by name)");
      else if (!handler_names.insert(h.name).second)
        errors_.Add(handler_marks[i], "two handlers named '" + h.name + "'");
    }
    for (const auto& ref : notified) {
      if (!handler_names.count(ref.name)) {
        std::vector<std::string> names(handler_names.begin(), handler_names.end());
        errors_.Add(ref.mark, "notify: no handler named '" + ref.name + "' in this play" +
                                  (names.empty() ? " (it has no handlers)"
                                                 : " (handlers: " + Join(names, ", ") + ")"));
      }
    }
    m.Finish();
  }

  void RejectUnsupported(MapReader& m, const std::set<std::string>& unsupported,
                         const std::string& what) {
    for (const auto& kv : m.node()) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "";
      if (!unsupported.count(key)) continue;
      m.Raw(key);  // reported here, not again as unknown
      errors_.Add(kv.first, what + " keyword '" + key +
                                "' is not supported by provisiond's runner (docs/playbooks.md)");
    }
  }

  void CheckHosts(const YAML::Node& at, const std::string& hosts) {
    for (const auto& term : SplitPattern(hosts)) {
      std::string t = term;
      if (!t.empty() && t[0] == '!') t = t.substr(1);
      if (t.empty()) {
        errors_.Add(at, "hosts '" + hosts + "' has an empty pattern");
      } else if (t[0] == '&' || t[0] == '~') {
        errors_.Add(at, "hosts '" + hosts +
                            "': intersections (&) and regular expressions (~) "
                            "are not supported");
      } else if (IsTemplated(t)) {
        errors_.Add(at, "hosts '" + hosts + "': templates are not supported in hosts");
      } else if (t.find('[') != std::string::npos && t.find_first_of("*?") == std::string::npos) {
        auto names = ExpandHostlist(t);
        if (!names.ok()) errors_.Add(at, names.status().message());
      }
    }
  }

  json Vars(const YAML::Node& n) {
    if (!n.IsDefined() || n.IsNull()) return json::object();
    if (!n.IsMap()) {
      errors_.Add(n, "'vars' must be a mapping of names to values, found " + ScalarText(n));
      return json::object();
    }
    for (const auto& kv : n) {
      const std::string key = kv.first.Scalar();
      if (!jinja::Matches(kIdentifier, key))
        errors_.Add(kv.first, "variable name '" + key +
                                  "' must be letters, digits and '_', not starting with a digit");
      CheckTemplates(kv.second, key);
    }
    return YamlToJson(n);
  }

  void TaskList(const YAML::Node& n, const std::string& key, std::vector<Task>& out,
                std::vector<NotifyRef>& notified, std::vector<YAML::Mark>& marks) {
    if (!n.IsDefined() || n.IsNull()) return;
    if (!n.IsSequence()) {
      errors_.Add(n, "'" + key + "' must be a list of tasks, found " + ScalarText(n));
      return;
    }
    for (const auto& item : n) {
      Task task;
      if (ParseTask(item, task, key == "handlers" ? "handler" : "task", notified)) {
        out.push_back(std::move(task));
        marks.push_back(item.Mark());
      }
    }
  }

  // A string or a list of strings (when, notify); bools become "True"/"False".
  bool StringOrList(const YAML::Node& n, const std::string& key, std::vector<std::string>& out,
                    std::vector<YAML::Node>* nodes = nullptr) {
    if (!n.IsDefined() || n.IsNull()) return false;
    auto one = [&](const YAML::Node& s) {
      if (!s.IsScalar()) {
        errors_.Add(s,
                    "'" + key + "' must be a string or a list of strings, found " + ScalarText(s));
        return;
      }
      out.push_back(s.Scalar());
      if (nodes) nodes->push_back(s);
    };
    if (n.IsSequence())
      for (const auto& s : n) one(s);
    else
      one(n);
    return true;
  }

  // changed_when / failed_when / until: a condition, a bool, or a list
  // (all must hold).
  std::string Condition(const YAML::Node& n, const std::string& key) {
    std::vector<std::string> parts;
    std::vector<YAML::Node> nodes;
    if (!StringOrList(n, key, parts, &nodes)) return "";
    for (size_t i = 0; i < parts.size(); ++i) CheckCondition(nodes[i], parts[i], key);
    if (parts.size() == 1) return parts[0];
    std::string all;
    for (const auto& p : parts) {
      std::string expr = p;
      if (IsTemplated(expr)) {
        // "{{ a }}" inside a combined condition: the bare expression.
        std::string t = Trimmed(expr);
        if (t.rfind("{{", 0) == 0 && t.size() >= 4 && t.compare(t.size() - 2, 2, "}}") == 0)
          expr = t.substr(2, t.size() - 4);
      }
      all += (all.empty() ? "(" : " and (") + expr + ")";
    }
    return all;
  }

  void CheckCondition(const YAML::Node& at, const std::string& cond, const std::string& key) {
    Status s = CheckConditionSyntax(cond);
    if (!s.ok()) errors_.Add(at, "invalid condition in '" + key + "': " + s.message());
  }

  void CheckTemplate(const YAML::Node& at, const std::string& key) {
    if (!at.IsScalar() || !IsTemplated(at.Scalar())) return;
    Status s = CheckTemplateSyntax(at.Scalar());
    if (!s.ok()) errors_.Add(at, "template error in '" + key + "': " + s.message());
  }

  // Every templated string inside `n`, keys named by their path.
  void CheckTemplates(const YAML::Node& n, const std::string& path) {
    if (n.IsScalar()) {
      CheckTemplate(n, path);
    } else if (n.IsSequence()) {
      size_t i = 0;
      for (const auto& e : n) CheckTemplates(e, path + "[" + std::to_string(i++) + "]");
    } else if (n.IsMap()) {
      for (const auto& kv : n)
        CheckTemplates(kv.second,
                       path.empty() ? kv.first.Scalar() : path + "." + kv.first.Scalar());
    }
  }

  bool ParseTask(const YAML::Node& node, Task& task, const std::string& what,
                 std::vector<NotifyRef>& notified) {
    task.file = errors_.file();
    task.line = node.Mark().line + 1;
    if (!node.IsMap()) {
      errors_.Add(node, "a " + what + " must be a mapping with a module and keywords, found " +
                            ScalarText(node));
      return false;
    }
    MapReader m(node, errors_, what);
    std::vector<YAML::Node> module_keys;
    bool reported_key = false;
    for (const auto& kv : node) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "";
      if (kTaskKeywords.count(key)) continue;
      if (FindModule(key)) {
        module_keys.push_back(kv.first);
        continue;
      }
      reported_key = true;
      if (kUnsupportedTaskKeywords.count(key)) {
        errors_.Add(kv.first,
                    what + " keyword '" + key + "' is not supported by provisiond's runner" +
                        (key.rfind("with_", 0) == 0 ? " (use loop)" : "") + " (docs/playbooks.md)");
      } else if (key.find('.') != std::string::npos || kv.second.IsMap()) {
        errors_.Add(kv.first, "unknown module '" + key + "'" + ModuleHint());
      } else {
        errors_.Add(kv.first,
                    "unknown module or " + what + " keyword '" + key + "'" + ModuleHint());
      }
    }
    if (module_keys.size() > 1) {
      errors_.Add(module_keys[1], "a " + what + " has exactly one module; this one has '" +
                                      module_keys[0].Scalar() + "' and '" +
                                      module_keys[1].Scalar() + "'");
    }
    if (module_keys.empty() && !reported_key)
      errors_.Add(node,
                  "a " + what + " needs a module (such as ansible.builtin.command)" + ModuleHint());

    if (m.GetString("name", task.name)) CheckTemplate(m.Raw("name"), "name");
    std::vector<YAML::Node> when_nodes;
    StringOrList(m.Raw("when"), "when", task.when, &when_nodes);
    for (size_t i = 0; i < task.when.size(); ++i)
      CheckCondition(when_nodes[i], task.when[i], "when");
    if (m.GetString("register", task.register_as) && !jinja::Matches(kIdentifier, task.register_as))
      errors_.Add(m.Raw("register"), "register: '" + task.register_as +
                                         "' is not a variable name (letters, digits and '_')");
    task.changed_when = Condition(m.Raw("changed_when"), "changed_when");
    task.failed_when = Condition(m.Raw("failed_when"), "failed_when");
    task.until = Condition(m.Raw("until"), "until");
    long n = 0;
    if (m.GetInt("retries", n, false, 0, 100000)) task.retries = static_cast<int>(n);
    if (m.GetInt("delay", n, false, 0, 86400)) task.delay_s = static_cast<int>(n);
    if (m.GetInt("timeout", n, false, 0, 7 * 86400)) task.timeout_s = static_cast<int>(n);
    if (m.Has("retries") && task.until.empty() && m.Raw("retries").IsScalar())
      errors_.Add(m.Raw("retries"),
                  "'retries' needs 'until' (the condition that ends the retries)");
    ParseLoop(m, task);
    std::vector<std::string> notify;
    std::vector<YAML::Node> notify_nodes;
    StringOrList(m.Raw("notify"), "notify", notify, &notify_nodes);
    for (size_t i = 0; i < notify.size(); ++i) {
      if (IsTemplated(notify[i]))
        errors_.Add(notify_nodes[i], "notify: handler names cannot be templates");
      else
        notified.push_back({notify[i], notify_nodes[i].Mark()});
    }
    task.notify = std::move(notify);
    bool b = false;
    if (m.GetBool("become", b)) task.become = b;
    m.GetString("become_user", task.become_user);
    m.GetBool("ignore_errors", task.ignore_errors);
    m.GetBool("no_log", task.no_log);
    task.vars = Vars(m.Raw("vars"));
    YAML::Node tags = m.Raw("tags");  // accepted, ignored: every task runs
    if (tags.IsDefined() && !tags.IsNull() && !tags.IsScalar() && !tags.IsSequence())
      errors_.Add(tags, "'tags' must be a string or a list, found " + ScalarText(tags));

    if (module_keys.empty()) return !reported_key;
    ParseModule(m, module_keys[0], task);
    return true;
  }

  static std::string ModuleHint() {
    std::vector<std::string> names;
    for (const auto& mod : AllModules()) names.push_back(mod.name);
    return " (modules: " + Join(names, ", ") + ")";
  }

  void ParseLoop(MapReader& m, Task& task) {
    YAML::Node loop = m.Raw("loop");
    YAML::Node items = m.Raw("with_items");
    if (loop.IsDefined() && items.IsDefined()) {
      errors_.Add(items, "a task takes 'loop' or 'with_items', not both");
      return;
    }
    const bool with_items = items.IsDefined();
    YAML::Node n = with_items ? items : loop;
    const std::string key = with_items ? "with_items" : "loop";
    if (n.IsDefined() && !n.IsNull()) {
      if (n.IsSequence()) {
        CheckTemplates(n, key);
        json list = YamlToJson(n);
        if (with_items) {  // with_items flattens one level
          json flat = json::array();
          for (const auto& e : list) {
            if (e.is_array())
              for (const auto& x : e) flat.push_back(x);
            else
              flat.push_back(e);
          }
          list = std::move(flat);
        }
        task.loop = std::move(list);
      } else if (n.IsScalar() && IsTemplated(n.Scalar())) {
        CheckTemplate(n, key);
        std::string expr = n.Scalar();
        std::string t = Trimmed(expr);
        if (with_items && t.rfind("{{", 0) == 0 && t.compare(t.size() - 2, 2, "}}") == 0 &&
            t.find("{{", 2) == std::string::npos)
          expr = "{{ (" + Trimmed(t.substr(2, t.size() - 4)) + ") | flatten(levels=1) }}";
        task.loop = expr;
      } else {
        errors_.Add(n, "'" + key + "' must be a list or a \"{{ expression }}\", found " + Found(n));
      }
    }
    YAML::Node control = m.Raw("loop_control");
    if (control.IsDefined() && !control.IsNull()) {
      MapReader c(control, errors_, "'loop_control'");
      if (c.valid()) {
        if (c.GetString("loop_var", task.loop_var) && !jinja::Matches(kIdentifier, task.loop_var))
          errors_.Add(c.Raw("loop_var"),
                      "loop_var: '" + task.loop_var + "' is not a variable name");
        c.Finish();
      }
      if (!task.loop) errors_.Add(control, "'loop_control' without 'loop'");
    }
  }

  void ParseModule(MapReader& m, const YAML::Node& key, Task& task) {
    const std::string written = key.Scalar();
    const ModuleSpec* spec = FindModule(written);
    task.module = spec->name;
    YAML::Node value = m.node()[written];
    json args = json::object();
    if (value.IsNull() || !value.IsDefined()) {
      // "ping:" or "command:" with args: below.
    } else if (value.IsMap()) {
      args = YamlToJson(value);
      CheckTemplates(value, "");
    } else if (value.IsScalar() && spec->free_form) {
      args["_raw_params"] = value.Scalar();
      CheckTemplate(value, written);
    } else {
      errors_.Add(value, "the arguments of module '" + written + "' must be a mapping" +
                             (value.IsScalar() ? " (key=value strings are not supported)" : "") +
                             ", found " + ScalarText(value));
      return;
    }
    YAML::Node extra = m.Raw("args");
    if (extra.IsDefined() && !extra.IsNull()) {
      if (!extra.IsMap()) {
        errors_.Add(extra, "'args' must be a mapping, found " + ScalarText(extra));
      } else {
        CheckTemplates(extra, "");
        for (const auto& kv : extra) {
          const std::string k = kv.first.Scalar();
          if (args.contains(k))
            errors_.Add(kv.first, "argument '" + k + "' is given in the module and in 'args'");
          else
            args[k] = YamlToJson(kv.second);
        }
      }
    }
    for (const auto& problem : ValidateModuleArgs(*spec, args))
      errors_.Add(ArgumentMark(problem, value, extra, key), problem);
    task.args = std::move(args);

    if (task.module == "assert") CheckAssert(value);
    if (task.module == "debug" && value.IsMap() && value["var"].IsDefined() &&
        value["var"].IsScalar()) {
      Status s = CheckExpressionSyntax(value["var"].Scalar());
      if (!s.ok()) errors_.Add(value["var"], "invalid expression in 'var': " + s.message());
    }
    if (task.module == "template") CheckLocalFile(value, "templates", true);
    if (task.module == "copy") CheckLocalFile(value, "files", false);
  }

  // Where a module argument problem points: the argument it names, else the
  // module key.
  YAML::Mark ArgumentMark(const std::string& problem, const YAML::Node& value,
                          const YAML::Node& extra, const YAML::Node& key) {
    for (const YAML::Node* map : {&value, &extra}) {
      if (!map->IsDefined() || !map->IsMap()) continue;
      for (const auto& kv : *map)
        if (problem.find("'" + kv.first.Scalar() + "'") != std::string::npos) {
          // "unknown argument 'x'" points at the key, a bad value at the value.
          return problem.rfind("unknown", 0) == 0 ? kv.first.Mark() : kv.second.Mark();
        }
    }
    return key.Mark();
  }

  void CheckAssert(const YAML::Node& value) {
    if (!value.IsMap()) return;
    std::vector<std::string> that;
    std::vector<YAML::Node> nodes;
    StringOrList(value["that"], "that", that, &nodes);
    for (size_t i = 0; i < that.size(); ++i) CheckCondition(nodes[i], that[i], "that");
  }

  // A literal src: of template or copy must exist (playbook dir/<subdir>/src,
  // then playbook dir/src, as Ansible and the module look); a template's
  // syntax is checked too.
  void CheckLocalFile(const YAML::Node& value, const std::string& subdir, bool is_template) {
    if (!value.IsMap()) return;
    YAML::Node src = value["src"];
    if (!src.IsDefined() || !src.IsScalar() || src.Scalar().empty()) return;
    if (IsTemplated(src.Scalar())) {
      reached_dirs_.insert(dir_ + "/" + subdir);
      return;
    }
    std::string path = FindPlaybookFile(dir_, subdir, src.Scalar());
    if (path.empty()) {
      errors_.Add(src, std::string(is_template ? "template" : "file") + " '" + src.Scalar() +
                           "' not found (looked at " + CandidatePaths(subdir, src.Scalar()) + ")");
      return;
    }
    reached_files_.insert(path);
    if (!is_template) return;
    auto text = ReadFile(path);
    if (!text.ok()) {
      errors_.Add(src, "template '" + src.Scalar() + "': " + text.status().message());
      return;
    }
    Status s = CheckTemplateSyntax(*text, path);
    if (!s.ok()) errors_.Add(src, "template '" + src.Scalar() + "' has an error: " + s.message());
  }

  std::string CandidatePaths(const std::string& subdir, const std::string& src) const {
    if (!src.empty() && src[0] == '/') return src;
    return dir_ + "/" + subdir + "/" + src + ", " + dir_ + "/" + src;
  }

  YamlErrors errors_;
  std::string dir_;
  std::set<std::string> reached_files_, reached_dirs_;
};

}  // namespace

nlohmann::json YamlToJson(const YAML::Node& n) {
  if (n.IsMap()) {
    json out = json::object();
    for (const auto& kv : n) out[kv.first.Scalar()] = YamlToJson(kv.second);
    return out;
  }
  if (n.IsSequence()) {
    json out = json::array();
    for (const auto& item : n) out.push_back(YamlToJson(item));
    return out;
  }
  if (!n.IsDefined() || n.IsNull()) return nullptr;
  return ScalarToJson(n);
}

std::string FindPlaybookFile(const std::string& dir, const std::string& subdir,
                             const std::string& src) {
  std::vector<std::string> candidates;
  if (!src.empty() && src[0] == '/') {
    candidates.push_back(src);
  } else {
    const std::string base = dir.empty() ? "." : dir;
    candidates.push_back(base + "/" + subdir + "/" + src);
    candidates.push_back(base + "/" + src);
  }
  std::error_code ec;
  for (const auto& c : candidates)
    if (fs::exists(c, ec)) return c;
  return "";
}

std::string Task::where() const {
  return file + ":" + std::to_string(line);
}

Result<Playbook> ParsePlaybook(const std::string& text, const std::string& file) {
  std::string dir = fs::path(file).parent_path().string();
  PlaybookParser parser(file, dir.empty() ? "." : dir);
  return parser.Parse(text);
}

Result<Playbook> LoadPlaybook(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok())
    return Status::NotFound("playbook " + path + " cannot be read: " + text.status().message());
  return ParsePlaybook(*text, path);
}

bool HostsMatch(const std::string& hosts, const std::string& hostname) {
  bool selected = false;
  for (const auto& term : SplitPattern(hosts)) {
    if (term.empty()) continue;
    if (term[0] == '!') {
      if (TermMatches(term.substr(1), hostname)) return false;
    } else if (TermMatches(term, hostname)) {
      selected = true;
    }
  }
  return selected;
}

}  // namespace prov
