#include "configure/ansible_runner.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "base/file_util.h"
#include "base/process.h"
#include "configure/secrets.h"
#include "playbook/remote.h"

namespace prov {

extern const char kAnsibleCallbackPlugin[];  // ansible/provisiond.py, embedded

using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr const char* kEventPrefix = "@@provisiond ";

// Variables Ansible sets itself for every host (its magic vars, the facts
// it gathers, the connection vars provisiond sets below): theirs win, so
// ours are left out of the inventory.
bool IsMagicVar(const std::string& name) {
  return name == "inventory_hostname" || name == "inventory_hostname_short" || name == "groups" ||
         name == "hostvars" || name.rfind("ansible_", 0) == 0;
}

// The folder of provisiond's ssh control sockets: <work_dir>/cp when a
// socket path there fits in sun_path (108 bytes, with ssh's temporary
// suffix), else a folder of ours under /tmp; empty when neither is safe
// (then each run connects afresh).
std::string ControlDir(const AnsibleRunSettings& s) {
  // "/user@pv-<16 hex>"; ssh adds ".XXXXXXXXXXXXXXXX" while it binds.
  constexpr size_t kSocketName = 1 + 32 + 1 + 19 + 17;
  std::string dir = s.work_dir + "/cp";
  if (dir.size() + kSocketName < 104) return dir;
  dir = "/tmp/provisiond-cp-" + Sha256Hex(s.work_dir).substr(0, 12);
  return dir;
}

// Makes `dir` 0700 and checks it is ours and no one else's (a folder under
// /tmp may be someone else's).
bool OwnPrivateDir(const std::string& dir) {
  if (!MakeDirs(dir, 0700).ok()) return false;
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return false;
  return st.st_uid == geteuid() && (st.st_mode & 077) == 0;
}

// The name ssh knows a host's key by (HostKeyAlias): one per node and
// pinned key, so known_hosts matches the pin whatever the address, and a
// control socket (named by it) never serves a node whose pin changed.
std::string KeyAlias(const AnsibleHost& h) {
  return "pv-" + Sha256Hex(h.name + "\n" + h.host_key).substr(0, 16);
}

std::string Tail(const std::string& text, size_t bytes) {
  return text.size() > bytes ? text.substr(text.size() - bytes) : text;
}

}  // namespace

std::optional<AnsibleEvent> ParseAnsibleEvent(const std::string& line) {
  if (line.rfind(kEventPrefix, 0) != 0) return std::nullopt;
  json j = json::parse(line.substr(strlen(kEventPrefix)), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  auto str = [&j](const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  AnsibleEvent e;
  std::string kind = str("event");
  if (kind == "play") {
    e.kind = AnsibleEvent::Kind::kPlay;
    e.task = str("play");
  } else if (kind == "task") {
    e.kind = AnsibleEvent::Kind::kTask;
    e.task = str("task");
  } else if (kind == "stats") {
    e.kind = AnsibleEvent::Kind::kStats;
    e.stats = j.value("hosts", json::object());
    if (!e.stats.is_object()) return std::nullopt;
  } else if (kind == "result") {
    e.kind = AnsibleEvent::Kind::kResult;
    e.host = str("host");
    if (e.host.empty()) return std::nullopt;
    TaskResult& r = e.result;
    // The runner is part of the name shown in `run show` and on the web page.
    r.playbook = fs::path(str("playbook")).filename().string() + " (ansible-playbook)";
    r.play = str("play");
    r.task = str("task");
    r.module = str("module");
    if (r.task.empty()) r.task = r.module;
    r.where = str("where");
    // Ansible's words, as the callback plugin writes them; another is no result.
    std::optional<TaskStatus> status = ParseTaskStatus(str("status"));
    if (!status) return std::nullopt;
    r.status = *status;
    r.changed = j.value("changed", false);
    if (auto rc = j.find("rc"); rc != j.end() && rc->is_number_integer()) r.exit_code = *rc;
    r.stdout_tail = OutputTail(str("stdout"));
    r.stderr_tail = OutputTail(str("stderr"));
    r.msg = OutputTail(str("msg"));
    if (auto d = j.find("duration_ms"); d != j.end() && d->is_number_integer()) r.duration_ms = *d;
    r.item = str("item");
    r.no_log = j.value("no_log", false);
    e.ignored = j.value("ignored", false);
  } else {
    return std::nullopt;
  }
  return e;
}

json AnsibleInventory(const std::vector<AnsibleHost>& hosts,
                      const std::string& python_interpreter) {
  json all_hosts = json::object();
  json children = json::object();
  for (const auto& h : hosts) {
    json vars = json::object();
    if (h.vars.is_object())
      for (const auto& [k, v] : h.vars.items())
        if (!IsMagicVar(k)) vars[k] = v;
    if (!h.chroot.empty()) {
      // Image stage: a root tree on this machine. Ansible's temporary files
      // go to the tree's /tmp, a tmpfs of the run's own (nothing in the image).
      vars["ansible_connection"] = "community.general.chroot";
      vars["ansible_host"] = h.chroot;
      vars["ansible_remote_tmp"] = "/tmp/.ansible-tmp";
      vars["ansible_python_interpreter"] = "/usr/bin/python3";
      all_hosts[h.name] = vars;
      continue;
    }
    vars["ansible_host"] = h.address;
    vars["ansible_port"] = h.port;
    vars["ansible_ssh_extra_args"] = "-o HostKeyAlias=" + KeyAlias(h);
    // Discovery costs every host a round trip per play: a node whose facts
    // say Debian's family has its python at Debian's path.
    if (python_interpreter.rfind("auto", 0) == 0 && h.vars.is_object() &&
        h.vars.contains("ansible_facts") && h.vars["ansible_facts"].is_object() &&
        h.vars["ansible_facts"].value("os_family", "") == "Debian")
      vars["ansible_python_interpreter"] = "/usr/bin/python3";
    all_hosts[h.name] = vars;
    if (h.vars.is_object() && h.vars.contains("groups") && h.vars["groups"].is_object())
      for (const auto& [group, members] : h.vars["groups"].items()) {
        if (group == "all" || group == "ungrouped") continue;
        children[group]["hosts"][h.name] = nullptr;
      }
  }
  json all = {{"hosts", all_hosts}};
  if (!children.empty()) all["children"] = children;
  return {{"all", all}};
}

std::string AnsibleKnownHosts(const std::vector<AnsibleHost>& hosts) {
  std::string out;
  for (const auto& h : hosts) {
    if (h.host_key.empty()) continue;
    // "type base64 [comment]": the comment is not needed.
    std::string key = h.host_key;
    if (auto sp = key.find(' '); sp != std::string::npos)
      if (auto sp2 = key.find(' ', sp + 1); sp2 != std::string::npos) key.resize(sp2);
    out += KeyAlias(h) + " " + key + "\n";
  }
  return out;
}

std::string AnsibleControlPathArg(const AnsibleRunSettings& settings) {
  // %r@%k: the login user and the host's key alias (never another user's
  // or another pin's connection).
  return "ControlPath=" + ControlDir(settings) + "/%r@%k";
}

std::vector<AnsibleSetting> AnsibleSettings(const AnsibleRunSettings& s, const std::string& run_dir,
                                            const std::string& playbook_dir, size_t forks,
                                            bool reuse_connections) {
  std::string roles = playbook_dir + "/roles";
  if (!s.tool.roles_path.empty()) roles += ":" + s.tool.roles_path;
  std::string ssh_args =
      "-o UserKnownHostsFile=" + run_dir + "/known_hosts" +
      " -o GlobalKnownHostsFile=/dev/null -o StrictHostKeyChecking=yes -o IdentitiesOnly=yes" +
      " -o BatchMode=yes -o PasswordAuthentication=no";
  if (reuse_connections)
    ssh_args += " -o ControlMaster=auto -o ControlPersist=60s -o " + AnsibleControlPathArg(s);
  else
    ssh_args += " -o ControlMaster=no";
  const std::string n = std::to_string(std::max<size_t>(1, std::min<size_t>(forks, 64)));
  return {
      {"defaults", "stdout_callback", "ANSIBLE_STDOUT_CALLBACK", "provisiond"},
      {"defaults", "callback_plugins", "ANSIBLE_CALLBACK_PLUGINS", run_dir + "/callback_plugins"},
      {"defaults", "callbacks_enabled", "ANSIBLE_CALLBACKS_ENABLED", ""},
      {"defaults", "remote_user", "ANSIBLE_REMOTE_USER", s.ssh_user},
      {"defaults", "private_key_file", "ANSIBLE_PRIVATE_KEY_FILE", s.key_path},
      {"defaults", "host_key_checking", "ANSIBLE_HOST_KEY_CHECKING", "True"},
      {"defaults", "retry_files_enabled", "ANSIBLE_RETRY_FILES_ENABLED", "False"},
      {"defaults", "interpreter_python", "ANSIBLE_PYTHON_INTERPRETER", s.tool.python_interpreter},
      {"defaults", "forks", "ANSIBLE_FORKS", n},
      {"defaults", "roles_path", "ANSIBLE_ROLES_PATH", roles},
      {"defaults", "local_tmp", "ANSIBLE_LOCAL_TEMP", run_dir + "/tmp"},
      {"defaults", "timeout", "ANSIBLE_TIMEOUT", std::to_string(s.connect_timeout_s)},
      {"defaults", "deprecation_warnings", "ANSIBLE_DEPRECATION_WARNINGS", "False"},
      {"defaults", "localhost_warning", "ANSIBLE_LOCALHOST_WARNING", "False"},
      {"defaults", "nocolor", "ANSIBLE_NOCOLOR", "True"},
      {"ssh_connection", "ssh_args", "ANSIBLE_SSH_ARGS", ssh_args},
      {"ssh_connection", "pipelining", "ANSIBLE_PIPELINING", "True"},
  };
}

std::string AnsibleConfig(const std::vector<AnsibleSetting>& settings) {
  // Ansible reads its ini file without interpolation: values are written as
  // they are ("%r" reaches ssh as "%r").
  std::string cfg, section;
  for (const auto& x : settings) {
    if (x.section != section) cfg += "[" + (section = x.section) + "]\n";
    cfg += x.key + " = " + x.value + "\n";
  }
  return cfg;
}

void StopAnsibleMasters(const AnsibleRunSettings& settings) {
  // A master renames itself ("ssh: <socket> [mux]"): it is asked to exit
  // through its socket, as ssh -O exit does.
  const std::string dir = ControlDir(settings);
  std::error_code ec;
  int stopped = 0;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_socket(ec)) continue;
    ProcessSpec spec;
    spec.argv = {"/usr/bin/ssh", "-F",   "/dev/null", "-o", "ControlPath=" + e.path().string(),
                 "-O",           "exit", "provisiond"};
    auto r = RunProcess(spec, 5000);
    if (r.ok() && r->exit_code == 0) ++stopped;
  }
  if (stopped) spdlog::info("stopped {} ssh control master(s) of ansible runs", stopped);
  // A folder of ours under /tmp goes with them.
  if (dir.rfind("/tmp/provisiond-cp-", 0) == 0 && OwnPrivateDir(dir)) fs::remove_all(dir, ec);
}

std::map<std::string, NodeRunOutcome> RunAnsiblePlaybook(
    const std::string& playbook_path, const std::vector<AnsibleHost>& hosts, const json& extra_vars,
    const std::vector<std::string>& secret_values, const AnsibleRunSettings& settings,
    const std::atomic<bool>* cancel) {
  std::map<std::string, NodeRunOutcome> out;
  std::map<std::string, const AnsibleHost*> by_name;
  for (const auto& h : hosts) {
    out[h.name].node = h.name;
    by_name[h.name] = &h;
  }
  auto fail_all = [&](const std::string& why) {
    for (auto& [name, o] : out) {
      o.status = RunStatus::kFailed;
      o.failed_task = RedactSecrets(why, secret_values);
    }
    return out;
  };
  std::error_code exists_ec;
  if (!fs::exists(settings.tool.program, exists_ec))
    return fail_all("ansible-playbook is not installed (" + settings.tool.program +
                    " is missing; apt-get install ansible): this playbook runs on it");
  // The run's private folder: it holds the extra vars (secrets among them).
  std::string runs = settings.work_dir + "/runs";
  if (!OwnPrivateDir(settings.work_dir) || !OwnPrivateDir(runs))
    return fail_all("ansible: cannot make the private folder " + runs);
  std::string run_dir = runs + "/run.XXXXXX";
  if (!mkdtemp(run_dir.data())) return fail_all("ansible: mkdtemp under " + runs + " failed");
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{run_dir};
  std::string playbook_dir = fs::path(playbook_path).parent_path().string();
  const auto config = AnsibleSettings(settings, run_dir, playbook_dir, hosts.size(),
                                      OwnPrivateDir(ControlDir(settings)));
  for (const auto& [file, content] : std::vector<std::pair<std::string, std::string>>{
           {"inventory.yml", AnsibleInventory(hosts, settings.tool.python_interpreter).dump(2)},
           {"known_hosts", AnsibleKnownHosts(hosts)},
           {"extra.json", extra_vars.is_object() ? extra_vars.dump() : "{}"},
           {"ansible.cfg", AnsibleConfig(config)},
           {"callback_plugins/provisiond.py", kAnsibleCallbackPlugin}}) {
    std::string path = run_dir + "/" + file;
    Status s = MakeDirs(fs::path(path).parent_path().string(), 0700);
    if (s.ok()) s = WriteFileAtomic(path, content, 0600);
    if (!s.ok()) return fail_all("ansible: " + s.message());
  }
  ProcessSpec spec;
  if (!settings.image_root.empty()) spec.argv = ImageStageCommand(settings.image_root);
  spec.argv.insert(spec.argv.end(), {settings.tool.program, "-i", run_dir + "/inventory.yml", "-e",
                                     "@" + run_dir + "/extra.json", playbook_path});
  // The environment wins over ansible.cfg: every setting is also set
  // there, so nothing in provisiond's own environment changes what a run
  // checks or records. The file keeps other config files out and shows
  // what the run used.
  spec.env = {"ANSIBLE_CONFIG=" + run_dir + "/ansible.cfg", "ANSIBLE_FORCE_COLOR=0",
              "PYTHONUNBUFFERED=1"};
  for (const auto& x : config) spec.env.push_back(x.env + "=" + x.value);
  json stats;
  bool have_stats = false;
  std::string other;  // Ansible's own lines: errors and warnings
  auto on_line = [&](const std::string& line) {
    auto e = ParseAnsibleEvent(line);
    if (!e) {
      other += line + "\n";
      if (other.size() > 2 * kOutputTailBytes) other = Tail(other, kOutputTailBytes);
      return;
    }
    if (e->kind == AnsibleEvent::Kind::kStats) {
      stats = e->stats;
      have_stats = true;
      return;
    }
    if (e->kind != AnsibleEvent::Kind::kResult) return;
    auto host = by_name.find(e->host);
    if (host == by_name.end()) return;  // not a host of this run: nothing of ours
    TaskResult& r = e->result;
    for (std::string* text : {&r.stdout_tail, &r.stderr_tail, &r.msg, &r.item})
      *text = RedactSecrets(*text, secret_values);
    NodeRunOutcome& o = out[e->host];
    if (r.status == TaskStatus::kOk) ++o.ok;
    if (r.status == TaskStatus::kChanged) ++o.changed;
    if (r.status == TaskStatus::kSkipped) ++o.skipped;
    if (r.status == TaskStatus::kFailed || r.status == TaskStatus::kUnreachable) {
      ++o.failed;
      if (!e->ignored) o.failed_task = r.task + " (" + r.where + "): " + r.msg;
    }
    if (host->second->sink) host->second->sink->OnTask(e->host, r);
  };
  spdlog::info("ansible-playbook {} on {} host(s)", playbook_path, hosts.size());
  auto result = RunProcess(spec, settings.timeout_s * 1000, on_line, cancel);
  if (!result.ok()) return fail_all("ansible-playbook: " + result.status().message());
  const bool cancelled = cancel && *cancel;
  for (auto& [name, o] : out) {
    if (cancelled) {
      o.status = RunStatus::kInterrupted;
      continue;
    }
    if (!have_stats) {
      o.status = RunStatus::kFailed;
      std::string why =
          result->timed_out
              ? "ansible-playbook did not finish in " + std::to_string(settings.timeout_s) + " s"
              : "ansible-playbook exited with " +
                    (result->signal ? "signal " + std::to_string(result->signal)
                                    : "code " + std::to_string(result->exit_code));
      std::string tail = Tail(other, 1024);
      while (!tail.empty() && tail.back() == '\n') tail.pop_back();
      o.failed_task = RedactSecrets(why + (tail.empty() ? "" : ": " + tail), secret_values);
      continue;
    }
    const json s = stats.value(name, json::object());  // absent: no play selected it
    if (s.value("unreachable", 0) > 0) {
      o.status = RunStatus::kUnreachable;
    } else if (s.value("failed", 0) > 0) {
      o.status = RunStatus::kFailed;
      if (o.failed_task.empty()) o.failed_task = "a task failed";
    } else {
      o.status = RunStatus::kOk;
      o.failed_task.clear();
    }
  }
  return out;
}

}  // namespace prov
