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
    "name",    "when",        "register",      "changed_when", "failed_when",  "until",
    "retries", "delay",       "loop",          "with_items",   "loop_control", "notify",
    "become",  "become_user", "ignore_errors", "vars",         "timeout",      "tags",
    "args",    "no_log",      "listen",        "run_once",     "delegate_to"};

// What makes a task a block (block:, or an include of a literal task file).
const std::set<std::string> kBlockKeys = {"block", "rescue", "always", "include_tasks",
                                          "import_tasks"};

// A keyword written with its collection (ansible.builtin.import_tasks), as
// its short name; other keys as written.
std::string ShortKeyword(const std::string& key) {
  for (const char* prefix : {"ansible.builtin.", "ansible.legacy."})
    if (key.rfind(prefix, 0) == 0) return key.substr(std::string(prefix).size());
  return key;
}

// Includes and roles nest at most this deep (a file that includes itself).
constexpr int kMaxNesting = 16;

// Ansible keywords a playbook may reasonably use that this runner does not
// implement: named as unsupported rather than as unknown.
const std::set<std::string> kUnsupportedTaskKeywords = {"delegate_facts",
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
    "any_errors_fatal",    "serial",         "strategy",       "vars_prompt",
    "max_fail_percentage", "order",          "remote_user",    "connection",
    "environment",         "become_method",  "become_flags",   "collections",
    "module_defaults",     "run_once",       "throttle",       "force_handlers",
    "ignore_unreachable",  "check_mode",     "diff",           "fact_path",
    "gather_subset",       "gather_timeout", "port",           "debugger",
    "ignore_errors",       "when",           "import_playbook"};

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

// Splits a hosts pattern on ',' and ':' outside brackets ("n[1,3],gpu1").
std::vector<std::string> SplitPattern(const std::string& hosts) {
  std::vector<std::string> terms;
  std::string cur;
  int depth = 0;
  for (char c : hosts) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if ((c == ',' || c == ':') && depth <= 0) {
      terms.push_back(Trim(cur, " \t"));
      cur.clear();
    } else {
      cur += c;
    }
  }
  terms.push_back(Trim(cur, " \t"));
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

}  // namespace

Result<json> ParseKeyValues(const std::string& text) {
  json out = json::object();
  size_t i = 0;
  const size_t n = text.size();
  while (i < n) {
    while (i < n && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n')) ++i;
    if (i >= n) break;
    // One word: up to whitespace outside quotes and {{ }}/{% %}.
    std::string word;
    char quote = 0;
    int braces = 0;
    for (; i < n; ++i) {
      char c = text[i];
      if (quote) {
        if (c == '\\' && i + 1 < n) {
          char e = text[++i];
          switch (e) {
            case 'n':
              word += '\n';
              break;
            case 't':
              word += '\t';
              break;
            case 'r':
              word += '\r';
              break;
            default:
              word += e;
          }
          continue;
        }
        if (c == quote) {
          quote = 0;
          continue;
        }
        word += c;
        continue;
      }
      if (c == '{' && i + 1 < n && (text[i + 1] == '{' || text[i + 1] == '%')) ++braces;
      if ((c == '}' || c == '%') && i + 1 < n && text[i + 1] == '}' && braces > 0) --braces;
      if ((c == '"' || c == '\'') && braces == 0) {
        quote = c;
        continue;
      }
      if ((c == ' ' || c == '\t' || c == '\n') && braces == 0) break;
      word += c;
    }
    if (quote) return Status::Invalid("unbalanced quotes in '" + text + "'");
    size_t eq = word.find('=');
    if (eq == std::string::npos || eq == 0)
      return Status::Invalid("'" + word +
                             "' is not key=value (a module without free-form "
                             "arguments takes key=value pairs or a mapping)");
    std::string key = word.substr(0, eq);
    if (!jinja::Matches(kIdentifier, key))
      return Status::Invalid("'" + key + "' is not an argument name");
    if (out.contains(key)) return Status::Invalid("argument '" + key + "' is given twice");
    out[key] = word.substr(eq + 1);
  }
  return out;
}

namespace {

class PlaybookParser {
 public:
  PlaybookParser(FileSet& files, const std::string& file, std::string dir, std::string roles_path)
      : files_(files), errors_(file), dir_(std::move(dir)), roles_path_(std::move(roles_path)) {}

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
    m.GetBool("gather_facts", gather);  // accepted; the phone-home facts replace setup
    YAML::Node tags = m.Raw("tags");    // accepted, ignored: every task runs
    if (tags.IsDefined() && !tags.IsNull() && !tags.IsScalar() && !tags.IsSequence())
      errors_.Add(tags, "'tags' must be a string or a list, found " + ScalarText(tags));
    play.vars = Vars(m.Raw("vars"));
    VarsFiles(m.Raw("vars_files"), play.vars);

    std::vector<NotifyRef> notified;
    std::set<std::string> handler_names;
    std::vector<YAML::Mark> task_marks, handler_marks;
    TaskList(m.Raw("pre_tasks"), "pre_tasks", play.pre_tasks, notified, task_marks);
    role_runs_.clear();
    role_handlers_.clear();
    notified_elsewhere_.clear();
    Roles(m.Raw("roles"), play.tasks, notified);
    TaskList(m.Raw("tasks"), "tasks", play.tasks, notified, task_marks);
    TaskList(m.Raw("post_tasks"), "post_tasks", play.post_tasks, notified, task_marks);
    TaskList(m.Raw("handlers"), "handlers", play.handlers, notified, handler_marks);
    for (size_t i = 0; i < play.handlers.size(); ++i) {
      const Task& h = play.handlers[i];
      if (h.name.empty() && h.listen.empty())
        errors_.Add(handler_marks[i], "a handler needs a name (notify finds it by name)");
      else if (!h.name.empty() && !handler_names.insert(h.name).second)
        errors_.Add(handler_marks[i], "two handlers named '" + h.name + "'");
    }
    // Roles' handlers run after the play's own, as Ansible orders them.
    for (auto& h : role_handlers_)
      if (h.name.empty() || handler_names.insert(h.name).second)
        play.handlers.push_back(std::move(h));
    role_handlers_.clear();
    for (const auto& h : play.handlers)
      for (const auto& topic : h.listen) handler_names.insert(topic);
    std::vector<std::string> names(handler_names.begin(), handler_names.end());
    const std::string known =
        names.empty() ? " (it has no handlers)" : " (handlers: " + Join(names, ", ") + ")";
    for (const auto& ref : notified)
      if (!handler_names.count(ref.name))
        errors_.Add(ref.mark, "notify: no handler named '" + ref.name + "' in this play" + known);
    for (const auto& ref : notified_elsewhere_)
      if (!handler_names.count(ref.name))
        errors_.AddPlaced(ref.where + ": notify: no handler named '" + ref.name + "' in this play" +
                          known);
    m.Finish();
  }

  // vars_files: files of variables beside the playbook, read in order over
  // the play's vars (a later file wins). An entry that is a list is read as
  // its first file that exists, as Ansible does.
  void VarsFiles(const YAML::Node& n, json& vars) {
    if (!n.IsDefined() || n.IsNull()) return;
    if (!n.IsSequence() && !n.IsScalar()) {
      errors_.Add(n, "'vars_files' must be a list of files, found " + ScalarText(n));
      return;
    }
    std::vector<YAML::Node> entries;
    if (n.IsScalar())
      entries.push_back(n);
    else
      for (const auto& e : n) entries.push_back(e);
    for (const auto& e : entries) {
      std::vector<std::string> names;
      if (e.IsScalar()) {
        names.push_back(e.Scalar());
      } else if (e.IsSequence()) {
        for (const auto& x : e)
          if (x.IsScalar()) names.push_back(x.Scalar());
      }
      if (names.empty()) {
        errors_.Add(e, "a 'vars_files' entry must be a file name or a list of them");
        continue;
      }
      bool templated = false;
      for (const auto& name : names)
        if (!templated && IsTemplated(name)) {
          templated = true;
          errors_.Add(e, "vars_files '" + name +
                             "': a templated file name is resolved only when it runs, which "
                             "provisiond's runner does not do (ansible-playbook runs it)");
        }
      if (templated) continue;
      std::string found;
      for (const auto& name : names) {
        std::string path = name[0] == '/' ? name : dir_ + "/" + name;
        if (files_.Text(path)) {  // read now: it is parsed next
          found = fs::path(path).lexically_normal().string();
          break;
        }
        if (e.IsScalar()) errors_.Add(e, "vars_files: '" + name + "' not found (" + path + ")");
      }
      if (found.empty()) {
        if (e.IsSequence()) errors_.Add(e, "vars_files: none of these files exists");
        continue;
      }
      InFile(e, found, [&](const YAML::Node& root) {
        if (!root.IsMap()) {
          errors_.Add(root, "a vars file must be a mapping of names to values");
          return;
        }
        json more = Vars(root);
        for (auto& [k, v] : more.items()) vars[k] = v;
      });
    }
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
                std::vector<NotifyRef>& notified, std::vector<YAML::Mark>& marks,
                std::string what = "") {
    if (!n.IsDefined() || n.IsNull()) return;
    if (!n.IsSequence()) {
      errors_.Add(n, "'" + key + "' must be a list of tasks, found " + ScalarText(n));
      return;
    }
    if (what.empty()) what = key == "handlers" ? "handler" : "task";
    for (const auto& item : n) {
      Task task;
      if (ParseTask(item, task, what, notified)) {
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
        std::string t = Trim(expr, " \t");
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
    task.files_dir = files_dir_;
    for (const auto& kv : node)
      if (kv.first.IsScalar() && kBlockKeys.count(ShortKeyword(kv.first.Scalar())))
        return ParseBlock(node, m, task, what, notified);
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
    StringOrList(m.Raw("listen"), "listen", task.listen);
    if (!task.listen.empty() && what != "handler")
      errors_.Add(m.Raw("listen"), "'listen' is for handlers");
    InheritedKeywords(m, task);
    m.GetBool("run_once", task.run_once);
    std::string delegate;
    if (m.GetString("delegate_to", delegate)) {
      if (delegate == "localhost" || delegate == "127.0.0.1" || delegate == "::1")
        task.delegate_local = true;
      else
        errors_.Add(m.Raw("delegate_to"),
                    "delegate_to '" + delegate +
                        "': provisiond's runner delegates to localhost (the control node) only");
    }
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
        std::string t = Trim(expr, " \t");
        if (with_items && t.rfind("{{", 0) == 0 && t.compare(t.size() - 2, 2, "}}") == 0 &&
            t.find("{{", 2) == std::string::npos)
          expr = "{{ (" + Trim(t.substr(2, t.size() - 4), " \t") + ") | flatten(levels=1) }}";
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
        if (c.GetString("index_var", task.index_var) &&
            !jinja::Matches(kIdentifier, task.index_var))
          errors_.Add(c.Raw("index_var"),
                      "index_var: '" + task.index_var + "' is not a variable name");
        if (c.GetString("label", task.loop_label)) CheckTemplate(c.Raw("label"), "label");
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
    } else if (value.IsScalar() && value.Tag() == "?") {
      // key=value arguments, as Ansible's parse_kv reads them.
      auto kv = ParseKeyValues(value.Scalar());
      if (!kv.ok()) {
        errors_.Add(value, "the arguments of module '" + written + "': " + kv.status().message());
        return;
      }
      args = std::move(*kv);
      for (const auto& [k, v] : args.items())
        if (v.is_string() && IsTemplated(v.get<std::string>())) {
          Status st = CheckTemplateSyntax(v.get<std::string>());
          if (!st.ok()) errors_.Add(value, "template error in '" + k + "': " + st.message());
        }
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

    // What the module's rules ask to check now (modules.h, ModuleRules).
    const ModuleRules& rules = spec->rules;
    for (const auto& arg : rules.condition_args) CheckConditionArg(value, arg);
    for (const auto& arg : rules.expression_args) {
      if (!value.IsMap() || !value[arg].IsDefined() || !value[arg].IsScalar()) continue;
      Status s = CheckExpressionSyntax(value[arg].Scalar());
      if (!s.ok()) errors_.Add(value[arg], "invalid expression in '" + arg + "': " + s.message());
    }
    if (!rules.local_dir.empty())
      CheckLocalFile(value, task.args, rules.local_dir, rules.local_is_template);
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

  // An argument of conditions (assert's `that`): each must parse.
  void CheckConditionArg(const YAML::Node& value, const std::string& arg) {
    if (!value.IsMap()) return;
    std::vector<std::string> conditions;
    std::vector<YAML::Node> nodes;
    StringOrList(value[arg], arg, conditions, &nodes);
    for (size_t i = 0; i < conditions.size(); ++i) CheckCondition(nodes[i], conditions[i], arg);
  }

  // A literal src: of template or copy must exist (playbook dir/<subdir>/src,
  // then playbook dir/src, as Ansible and the module look); a template's
  // syntax is checked too.
  void CheckLocalFile(const YAML::Node& value, const json& args, const std::string& subdir,
                      bool is_template) {
    auto it = args.find("src");
    if (it == args.end() || !it->is_string() || it->get<std::string>().empty()) return;
    const std::string text = it->get<std::string>();
    YAML::Node src = value.IsMap() && value["src"].IsDefined() ? value["src"] : value;
    const std::string base = files_dir_.empty() ? dir_ : files_dir_;
    if (IsTemplated(text)) {
      reached_dirs_.insert(base + "/" + subdir);
      return;
    }
    std::string path = FindPlaybookFile(files_, base, subdir, text);
    if (path.empty()) {
      errors_.Add(src, std::string(is_template ? "template" : "file") + " '" + text +
                           "' not found (looked at " + CandidatePaths(base, subdir, text) + ")");
      return;
    }
    reached_files_.insert(path);
    if (!is_template) return;
    std::string error;
    const std::string* content = files_.Text(path, &error);
    if (!content) {
      errors_.Add(src, "template '" + text + "': " + error);
      return;
    }
    Status s = CheckTemplateSyntax(*content, path);
    if (!s.ok()) errors_.Add(src, "template '" + text + "' has an error: " + s.message());
  }

  static std::string CandidatePaths(const std::string& base, const std::string& subdir,
                                    const std::string& src) {
    if (!src.empty() && src[0] == '/') return src;
    return base + "/" + subdir + "/" + src + ", " + base + "/" + src;
  }

  // --- blocks, includes and roles --------------------------------------------

  // The keywords a task and a block share (a block's apply to its tasks).
  void InheritedKeywords(MapReader& m, Task& task) {
    bool b = false;
    if (m.GetBool("become", b)) task.become = b;
    m.GetString("become_user", task.become_user);
    m.GetBool("ignore_errors", task.ignore_errors);
    m.GetBool("no_log", task.no_log);
    task.vars = Vars(m.Raw("vars"));
  }

  // A task with block:/rescue:/always:, or include_tasks/import_tasks of a
  // literal file: a block whose tasks run in place.
  bool ParseBlock(const YAML::Node& node, MapReader& m, Task& task, const std::string& what,
                  std::vector<NotifyRef>& notified) {
    task.is_block = true;
    if (m.GetString("name", task.name)) CheckTemplate(m.Raw("name"), "name");
    std::vector<YAML::Node> when_nodes;
    StringOrList(m.Raw("when"), "when", task.when, &when_nodes);
    for (size_t i = 0; i < task.when.size(); ++i)
      CheckCondition(when_nodes[i], task.when[i], "when");
    InheritedKeywords(m, task);
    m.Raw("tags");
    std::string include;
    YAML::Node include_at;
    for (const char* short_key : {"include_tasks", "import_tasks"}) {
      std::string key = short_key;
      for (const auto& kv : node)
        if (kv.first.IsScalar() && ShortKeyword(kv.first.Scalar()) == short_key)
          key = kv.first.Scalar();
      YAML::Node n = m.Raw(key);
      if (!n.IsDefined()) continue;
      if (!include.empty() || m.Has("block"))
        errors_.Add(n, "'" + key + "' cannot be combined with another include or a block");
      include_at = n;
      if (n.IsMap() && n["file"].IsScalar()) {
        include = n["file"].Scalar();
      } else if (n.IsScalar()) {
        include = n.Scalar();
      } else {
        errors_.Add(n, "'" + key + "' needs a file name");
        return false;
      }
      if (IsTemplated(include)) {
        errors_.Add(n, key + " '" + include +
                           "': a templated file name is resolved only when it runs, which "
                           "provisiond's runner does not do (ansible-playbook runs it)");
        return false;
      }
    }
    if (!include.empty()) {
      if (m.Has("rescue") || m.Has("always"))
        errors_.Add(node, "an include takes no rescue or always");
      YAML::Node apply = m.Raw("apply");
      if (apply.IsDefined()) errors_.Add(apply, "'apply' is not supported by provisiond's runner");
      IncludeFile(include_at, include, task.block);
      if (task.name.empty()) task.name = "include " + include;
      m.Finish();
      return true;
    }
    YAML::Node block = m.Raw("block");
    if (!block.IsDefined() || !block.IsSequence()) {
      errors_.Add(node, "'rescue' and 'always' need a 'block' (a list of tasks)");
      return false;
    }
    std::vector<YAML::Mark> marks;
    TaskList(block, "block", task.block, notified, marks, what);
    TaskList(m.Raw("rescue"), "rescue", task.rescue, notified, marks, what);
    TaskList(m.Raw("always"), "always", task.always, notified, marks, what);
    m.Finish();
    return true;
  }

  // The tasks of `file` (relative to the folder of the file being read, a
  // role's tasks/ folder, or the playbook's), parsed as a task list with
  // their own file:line in messages.
  void IncludeFile(const YAML::Node& at, const std::string& file, std::vector<Task>& out) {
    std::vector<std::string> candidates;
    if (!file.empty() && file[0] == '/') {
      candidates.push_back(file);
    } else {
      candidates.push_back(fs::path(errors_.file()).parent_path().string() + "/" + file);
      if (!files_dir_.empty()) candidates.push_back(files_dir_ + "/tasks/" + file);
      candidates.push_back(dir_ + "/" + file);
    }
    std::string path;
    for (const auto& c : candidates)
      if (files_.Text(c)) {  // read now: it is parsed next
        path = fs::path(c).lexically_normal().string();
        break;
      }
    if (path.empty()) {
      errors_.Add(at,
                  "task file '" + file + "' not found (looked at " + Join(candidates, ", ") + ")");
      return;
    }
    ParseTaskFile(at, path, "tasks", out);
  }

  // Parses a file of tasks (an include, a role's tasks or handlers) into
  // `out`; its errors carry its own name.
  void ParseTaskFile(const YAML::Node& at, const std::string& path, const std::string& key,
                     std::vector<Task>& out) {
    if (depth_ >= kMaxNesting) {
      errors_.Add(at, "includes and roles nest deeper than " + std::to_string(kMaxNesting) +
                          " (does " + path + " include itself?)");
      return;
    }
    // The notify references of this file point into it: checked by the
    // play with marks that would name the wrong file, so they are checked
    // by name only, with this file's mark kept in the message.
    std::vector<NotifyRef> local;
    ++depth_;
    InFile(at, path, [&](const YAML::Node& root) {
      std::vector<YAML::Mark> marks;
      TaskList(root, key, out, local, marks, key == "handlers" ? "handler" : "task");
    });
    --depth_;
    for (const auto& ref : local)
      notified_elsewhere_.push_back({ref.name, path + ":" + std::to_string(ref.mark.line + 1) +
                                                   ":" + std::to_string(ref.mark.column + 1)});
  }

  // roles: each entry a role name or {role: NAME, vars..., when...}.
  void Roles(const YAML::Node& n, std::vector<Task>& out, std::vector<NotifyRef>& notified) {
    if (!n.IsDefined() || n.IsNull()) return;
    if (!n.IsSequence()) {
      errors_.Add(n, "'roles' must be a list of roles, found " + ScalarText(n));
      return;
    }
    for (const auto& entry : n) {
      Task role;
      if (RoleEntry(entry, role, notified)) out.push_back(std::move(role));
    }
  }

  // One roles: or dependencies: entry, as a block: the role's dependencies,
  // then its tasks, with its vars (vars/main.yml, then the entry's params)
  // and defaults (defaults/main.yml).
  bool RoleEntry(const YAML::Node& entry, Task& role, std::vector<NotifyRef>& notified) {
    std::string name;
    json params = json::object();
    std::vector<std::string> when;
    if (entry.IsScalar()) {
      name = entry.Scalar();
    } else if (entry.IsMap()) {
      for (const auto& kv : entry) {
        const std::string key = kv.first.Scalar();
        if (key == "role" || key == "name") {
          if (kv.second.IsScalar()) name = kv.second.Scalar();
        } else if (key == "when") {
          StringOrList(kv.second, "when", when);
          for (const auto& c : when) CheckCondition(kv.second, c, "when");
        } else if (key == "tags") {
          continue;
        } else if (key == "vars") {
          json v = Vars(kv.second);
          for (const auto& [k, val] : v.items()) params[k] = val;
        } else if (key == "become" || key == "become_user" || key == "delegate_to" ||
                   key == "tasks_from" || key == "vars_from" || key == "defaults_from" ||
                   key == "handlers_from" || key == "public" || key == "allow_duplicates" ||
                   key == "collections" || key == "environment") {
          errors_.Add(kv.first,
                      "role keyword '" + key +
                          "' is not supported by provisiond's runner (docs/playbooks.md)");
        } else {
          if (!jinja::Matches(kIdentifier, key))
            errors_.Add(kv.first, "role parameter '" + key + "' is not a variable name");
          CheckTemplates(kv.second, key);
          params[key] = YamlToJson(kv.second);
        }
      }
    } else {
      errors_.Add(entry, "a role is a name or a mapping with 'role', found " + ScalarText(entry));
      return false;
    }
    if (name.empty()) {
      errors_.Add(entry, "a role entry needs 'role' (the role's name)");
      return false;
    }
    if (IsTemplated(name)) {
      errors_.Add(entry, "role '" + name + "': templated role names are not supported natively");
      return false;
    }
    std::string dir = FindRole(name);
    if (dir.empty()) {
      errors_.Add(entry,
                  "role '" + name + "' not found (looked in " + Join(RolesPath(), ", ") + ")");
      return false;
    }
    // A role runs once per play for the same parameters, as in Ansible.
    if (!role_runs_.insert(name + "\n" + params.dump()).second) return false;
    if (depth_ >= kMaxNesting) {
      errors_.Add(entry, "roles nest deeper than " + std::to_string(kMaxNesting) + " (does role '" +
                             name + "' depend on itself?)");
      return false;
    }
    role.is_block = true;
    role.name = "role " + name;
    role.file = errors_.file();
    role.line = entry.Mark().line + 1;
    role.when = when;
    role.files_dir = dir;
    role.defaults = RoleVarsFile(entry, dir + "/defaults/main");
    role.vars = RoleVarsFile(entry, dir + "/vars/main");
    for (const auto& [k, v] : params.items()) role.vars[k] = v;
    const std::string saved_files_dir = files_dir_;
    files_dir_ = dir;
    ++depth_;
    // meta/main.yml dependencies run first.
    std::string meta = FirstExisting(dir + "/meta/main");
    if (!meta.empty()) {
      InFile(entry, meta, [&](const YAML::Node& root) {
        YAML::Node deps = root.IsMap() ? root["dependencies"] : YAML::Node();
        if (!deps.IsDefined() || deps.IsNull()) return;
        if (!deps.IsSequence()) {
          errors_.Add(deps, "'dependencies' must be a list of roles");
          return;
        }
        for (const auto& d : deps) {
          Task dep;
          if (RoleEntry(d, dep, notified)) role.block.push_back(std::move(dep));
        }
      });
    }
    std::string tasks = FirstExisting(dir + "/tasks/main");
    if (!tasks.empty()) ParseTaskFile(entry, tasks, "tasks", role.block);
    std::string handlers = FirstExisting(dir + "/handlers/main");
    if (!handlers.empty()) {
      std::vector<Task> hs;
      ParseTaskFile(entry, handlers, "handlers", hs);
      for (auto& h : hs) {
        h.defaults = role.defaults;
        for (const auto& [k, v] : role.vars.items()) h.vars.emplace(k, v);
        role_handlers_.push_back(std::move(h));
      }
    }
    --depth_;
    files_dir_ = saved_files_dir;
    // The role's templates/ and files/ are what its tasks may reach.
    for (const char* sub : {"/templates", "/files"}) reached_dirs_.insert(dir + sub);
    return true;
  }

  // The folders roles are looked up in: roles/ beside the playbook, then the
  // configured roles path.
  std::vector<std::string> RolesPath() const {
    std::vector<std::string> out = {dir_ + "/roles"};
    const std::string& extra = roles_path_;
    size_t start = 0;
    while (start <= extra.size() && !extra.empty()) {
      size_t colon = extra.find(':', start);
      std::string part =
          extra.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
      if (!part.empty()) out.push_back(part);
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
    return out;
  }

  std::string FindRole(const std::string& name) {
    if (name.find('/') != std::string::npos || name.find("..") != std::string::npos) return "";
    for (const auto& d : RolesPath())
      if (files_.IsDirectory(d + "/" + name)) return d + "/" + name;
    return "";
  }

  // <base>.yml, <base>.yaml or <base> (Ansible's order); "" when none.
  std::string FirstExisting(const std::string& base) {
    for (const char* ext : {".yml", ".yaml", ""})
      if (files_.Text(base + ext)) return base + ext;  // read now: it is parsed next
    return "";
  }

  // A role's vars or defaults file: a mapping of variables, {} when absent.
  json RoleVarsFile(const YAML::Node& at, const std::string& base) {
    std::string path = FirstExisting(base);
    json out = json::object();
    if (!path.empty()) InFile(at, path, [&](const YAML::Node& root) { out = Vars(root); });
    return out;
  }

  // Reads and parses `path` (a file the playbook reaches: an include, a
  // role's file) and hands its document to `body`, unless it is empty or
  // does not parse; errors meanwhile name that file. One that cannot be
  // read is an error at `at`.
  template <class Body>
  void InFile(const YAML::Node& at, const std::string& path, Body&& body) {
    std::string error;
    const std::string* text = files_.Text(path, &error);
    if (!text) {
      errors_.Add(at, error);
      return;
    }
    reached_files_.insert(path);
    YamlErrors mine(path);
    std::swap(errors_, mine);
    YAML::Node root = ParseYaml(*text, errors_);
    if (errors_.empty() && root.IsDefined() && !root.IsNull()) body(root);
    std::swap(errors_, mine);
    for (const auto& e : mine.list()) errors_.AddPlaced(e);
  }

  FileSet& files_;  // everything parsing reads comes from here
  YamlErrors errors_;
  std::string dir_;
  std::string roles_path_;
  std::set<std::string> reached_files_, reached_dirs_;
  std::string files_dir_;  // the role being read; empty: the playbook itself
  int depth_ = 0;
  std::set<std::string> role_runs_;  // roles of this play: name + params
  std::vector<Task> role_handlers_;  // handlers of this play's roles
  struct PlacedRef {
    std::string name;
    std::string where;
  };
  std::vector<PlacedRef> notified_elsewhere_;  // notify in included files
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

std::string FindPlaybookFile(FileSet& files, const std::string& dir, const std::string& subdir,
                             const std::string& src) {
  std::vector<std::string> candidates;
  if (!src.empty() && src[0] == '/') {
    candidates.push_back(src);
  } else {
    const std::string base = dir.empty() ? "." : dir;
    candidates.push_back(base + "/" + subdir + "/" + src);
    candidates.push_back(base + "/" + src);
  }
  for (const auto& c : candidates)
    if (files.Exists(c)) return c;
  return "";
}

std::string Task::where() const {
  return file + ":" + std::to_string(line);
}

Result<Playbook> ParsePlaybook(FileSet& files, const std::string& file,
                               const std::string& roles_path) {
  std::string error;
  const std::string* text = files.Text(file, &error);
  if (!text) return Status::NotFound("playbook " + file + " cannot be read: " + error);
  std::string dir = fs::path(file).parent_path().string();
  PlaybookParser parser(files, file, dir.empty() ? "." : dir, roles_path);
  return parser.Parse(*text);
}

Result<Playbook> ParsePlaybook(const std::string& text, const std::string& file,
                               const std::string& roles_path) {
  FileSet files;
  files.AddFile(file, text);
  return ReadThenParse(files, [&](FileSet& f) { return ParsePlaybook(f, file, roles_path); });
}

Result<Playbook> LoadPlaybook(const std::string& path, const std::string& roles_path) {
  FileSet files;
  return ReadThenParse(files, [&](FileSet& f) { return ParsePlaybook(f, path, roles_path); });
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
