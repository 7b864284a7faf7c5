#include "configure/play_runner.h"

#include <doctest/doctest.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "base/temp_dir.h"
#include "playbook/playbook.h"
#include "playbook/remote.h"

namespace prov {
namespace {

using json = nlohmann::json;

// Records what the runner reports.
class Recorder : public RunSink {
 public:
  void OnTask(const std::string& node, const TaskResult& r) override {
    CHECK(node == "node1");
    results.push_back(r);
  }
  std::vector<TaskResult> results;
  std::string Statuses() const {
    std::string out;
    for (const auto& r : results) out += (out.empty() ? "" : " ") + std::string(ToString(r.status));
    return out;
  }
};

// Parses `text` (with DIR replaced by `dir`) and runs it on this machine.
NodeRunOutcome Run(const std::string& dir, std::string text, Recorder& rec,
                   json vars = json::object(), json extra_vars = json::object(),
                   std::vector<std::string> secret_vars = {},
                   std::vector<std::string> secret_values = {}) {
  for (size_t p; (p = text.find("DIR")) != std::string::npos;) text.replace(p, 3, dir);
  const std::string file = dir + "/play.yml";
  std::ofstream(file) << text;
  auto pb = LoadPlaybook(file);
  REQUIRE_MESSAGE(pb.ok(), pb.status().message());
  LocalRemote local("node1");
  vars["inventory_hostname"] = "node1";
  RunOptions options;
  options.sleep = [](int) { return true; };  // retries without waiting
  options.extra_vars = std::move(extra_vars);
  options.secret_vars = std::move(secret_vars);
  options.secret_values = std::move(secret_values);
  return RunPlaybook(*pb, "node1", local, vars, &rec, options);
}

std::string Read(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST_CASE("runner: changed then ok on a second run, register and when") {
  TempDir d;
  const std::string play = R"(
- hosts: all
  tasks:
    - name: a file
      copy:
        dest: DIR/a.txt
        content: "hello {{ inventory_hostname }}\n"
    - name: read it
      command: cat DIR/a.txt
      register: out
      changed_when: false
    - name: only when it says hello
      file:
        path: DIR/said-hello
        state: touch
      when: "'hello node1' in out.stdout"
    - name: never
      file:
        path: DIR/never
        state: touch
      when: out.rc != 0
)";
  Recorder first;
  auto out = Run(d.path(), play, first);
  CHECK(std::string(ToString(out.status)) == "ok");
  CHECK(first.Statuses() == "changed ok changed skipped");
  CHECK(Read(d.path() + "/a.txt") == "hello node1\n");
  CHECK(std::filesystem::exists(d.path() + "/said-hello"));
  CHECK_FALSE(std::filesystem::exists(d.path() + "/never"));
  CHECK(out.registered["out"]["stdout"] == "hello node1");

  Recorder second;
  out = Run(d.path(), play, second);
  CHECK(std::string(ToString(out.status)) == "ok");
  // touch always changes (as in Ansible); the copy does not.
  CHECK(std::string(ToString(second.results[0].status)) == "ok");
  CHECK(std::string(ToString(second.results[1].status)) == "ok");
}

TEST_CASE("runner: a failing task stops the node and names the task and file:line") {
  TempDir d;
  Recorder rec;
  auto out = Run(d.path(), R"(
- hosts: all
  tasks:
    - name: fails
      shell: echo oops >&2; exit 3
    - name: not reached
      file:
        path: DIR/x
        state: touch
)",
                 rec);
  CHECK(std::string(ToString(out.status)) == "failed");
  REQUIRE(rec.results.size() == 1);
  CHECK(std::string(ToString(rec.results[0].status)) == "failed");
  CHECK(rec.results[0].exit_code == 3);
  CHECK(rec.results[0].stderr_tail.find("oops") != std::string::npos);
  CHECK(rec.results[0].where == d.path() + "/play.yml:4");
  CHECK(out.failed_task.find("fails (" + d.path() + "/play.yml:4)") == 0);
  CHECK_FALSE(std::filesystem::exists(d.path() + "/x"));
}

TEST_CASE("runner: ignore_errors, failed_when, loop, until, notify and handlers") {
  TempDir d;
  const std::string play = R"(
- hosts: all
  vars:
    names: [a, b, c]
  tasks:
    - name: fails but ignored
      command: "false"
      ignore_errors: true
      register: ignored
    - name: exit 1 is fine here
      command: sh -c "exit 1"
      failed_when: result.rc > 1
      register: result
    - name: one file per item
      copy:
        dest: "DIR/{{ item }}.txt"
        content: "{{ item }}"
      loop: "{{ names }}"
      notify: restart it
    - name: counts up until 3
      shell: n=$(cat DIR/count 2>/dev/null || echo 0); echo $((n+1)) > DIR/count; cat DIR/count
      register: count
      until: count.stdout | int >= 3
      retries: 5
      delay: 1
  handlers:
    - name: restart it
      shell: echo restarted >> DIR/handler.log
)";
  Recorder rec;
  auto out = Run(d.path(), play, rec);
  CHECK(std::string(ToString(out.status)) == "ok");
  CHECK(rec.Statuses() == "failed changed changed changed changed changed changed");
  CHECK(out.registered["ignored"]["failed"] == true);
  CHECK(Read(d.path() + "/b.txt") == "b");
  CHECK(Read(d.path() + "/count") == "3\n");
  CHECK(out.registered["count"]["attempts"] == 3);
  CHECK(Read(d.path() + "/handler.log") == "restarted\n");

  // Second run: the copies are ok, so the handler is not notified again.
  std::filesystem::remove(d.path() + "/count");
  Recorder again;
  out = Run(d.path(), play, again);
  CHECK(std::string(ToString(out.status)) == "ok");
  CHECK(Read(d.path() + "/handler.log") == "restarted\n");
}

TEST_CASE("runner: until that never holds fails after its retries") {
  TempDir d;
  Recorder rec;
  auto out = Run(d.path(), R"(
- hosts: all
  tasks:
    - name: never ready
      command: echo no
      register: r
      until: r.stdout == 'yes'
      retries: 2
      delay: 1
)",
                 rec);
  CHECK(std::string(ToString(out.status)) == "failed");
  REQUIRE(rec.results.size() == 1);
  CHECK(rec.results[0].msg.find("after 3 attempts") != std::string::npos);
}

TEST_CASE("runner: plays for other hosts are skipped; play and extra vars are seen") {
  TempDir d;
  Recorder rec;
  auto out = Run(d.path(), R"(
- hosts: other*
  tasks:
    - file:
        path: DIR/other
        state: touch
- hosts: node1
  vars:
    greeting: "hi {{ who }}"
  tasks:
    - copy:
        dest: DIR/greeting
        content: "{{ greeting }}"
)",
                 rec, json{{"who", "there"}});
  CHECK(std::string(ToString(out.status)) == "ok");
  CHECK_FALSE(std::filesystem::exists(d.path() + "/other"));
  CHECK(Read(d.path() + "/greeting") == "hi there");
}

TEST_CASE("runner: extra vars win over play and task vars, host vars lose to them") {
  TempDir d;
  Recorder rec;
  auto out = Run(d.path(), R"(
- hosts: all
  vars:
    color: play
    size: play
    shape: play
  tasks:
    - copy:
        dest: DIR/seen
        content: "{{ color }} {{ size }} {{ shape }} {{ name }}"
      vars:
        size: task
)",
                 rec, json{{"shape", "host"}, {"name", "host"}},
                 json{{"color", "extra"}, {"size", "extra"}});
  CHECK(std::string(ToString(out.status)) == "ok");
  CHECK(Read(d.path() + "/seen") == "extra extra play host");
}

TEST_CASE("runner: an undefined variable fails the task with its name") {
  TempDir d;
  Recorder rec;
  auto out = Run(d.path(), R"(
- hosts: all
  tasks:
    - name: uses a missing var
      copy:
        dest: DIR/x
        content: "{{ nope }}"
)",
                 rec);
  CHECK(std::string(ToString(out.status)) == "failed");
  REQUIRE(rec.results.size() == 1);
  CHECK(rec.results[0].msg.find("nope") != std::string::npos);
}

}  // namespace
}  // namespace prov

namespace prov {

TEST_CASE("runner: no_log and secrets: a task's output is hidden, no value is ever recorded") {
  TempDir d;
  const std::string secret = "c2VjcmV0LW11bmdlLWtleS12YWx1ZQ==";
  const std::string play = R"(
- hosts: all
  tasks:
    - name: no_log by hand
      command: echo visible-only-without-no_log
      no_log: true
    - name: uses the secret var
      copy:
        dest: DIR/key
        content: "{{ munge_key_b64 }}"
        mode: "0600"
    - name: prints the file without naming the var
      command: cat DIR/key
    - name: fails with the value in its message
      command: "sh -c 'echo {{ munge_key_b64 }} >&2; exit 3'"
      ignore_errors: true
    - name: fails without naming it
      shell: "cat DIR/key; exit 4"
)";
  Recorder rec;
  NodeRunOutcome out = Run(d.path(), play, rec, json::object(), {{"munge_key_b64", secret}},
                           {"munge_key_b64"}, {secret});
  REQUIRE(rec.results.size() == 5);
  CHECK(Read(d.path() + "/key") == secret);  // the task got the value
  CHECK(rec.results[0].no_log);
  CHECK(rec.results[0].stdout_tail.empty());
  CHECK(rec.results[0].msg == "(output hidden: no_log)");
  CHECK(rec.results[1].no_log);  // implied: it names the secret var
  CHECK(std::string(ToString(rec.results[1].status)) == "changed");
  CHECK_FALSE(rec.results[2].no_log);  // does not name it: recorded, the value redacted
  CHECK(rec.results[2].stdout_tail == "********");
  CHECK(rec.results[3].no_log);
  CHECK(rec.results[3].exit_code == 3);
  CHECK(std::string(ToString(out.status)) == "failed");
  CHECK(rec.results[4].stdout_tail == "********");
  CHECK(out.failed_task.find(secret) == std::string::npos);
  for (const auto& r : rec.results)
    for (const std::string* f : {&r.task, &r.msg, &r.stdout_tail, &r.stderr_tail, &r.item})
      CHECK(f->find(secret) == std::string::npos);
}

TEST_CASE("runner: a play's no_log covers its tasks") {
  TempDir d;
  Recorder rec;
  Run(d.path(), "- hosts: all\n  no_log: true\n  tasks:\n    - command: echo hi\n", rec);
  REQUIRE(rec.results.size() == 1);
  CHECK(rec.results[0].stdout_tail.empty());
  CHECK(std::string(ToString(rec.results[0].status)) == "changed");
}

void WriteFile(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

TEST_CASE("runner: roles with dependencies, defaults, vars, handlers; includes; blocks") {
  TempDir d;
  const std::string dir = d.path();
  WriteFile(dir + "/roles/base/defaults/main.yml", "base_dir: " + dir + "/out\n");
  WriteFile(dir + "/roles/base/tasks/main.yml",
            "- name: the folder\n  file: path={{ base_dir }} state=directory\n");
  WriteFile(dir + "/roles/app/meta/main.yml", "dependencies:\n  - role: base\n");
  WriteFile(dir + "/roles/app/defaults/main.yml",
            "app_port: 80\napp_name: default-name\napp_label: \"{{ app_name }}-{{ app_port }}\"\n");
  WriteFile(dir + "/roles/app/vars/main.yml", "app_owner: role-vars\n");
  WriteFile(
      dir + "/roles/app/templates/app.conf.j2",
      "port={{ app_port }} name={{ app_name }} label={{ app_label }} owner={{ app_owner }}\n");
  WriteFile(dir + "/roles/app/tasks/main.yml", R"(
- name: the config
  template:
    src: app.conf.j2
    dest: "{{ base_dir }}/app.conf"
  notify: app changed
- include_tasks: extra.yml
- name: try
  block:
    - name: fails
      command: /bin/false
    - name: skipped by the failure
      file: path={{ base_dir }}/not-reached state=touch
  rescue:
    - name: rescued
      copy: content="rescued {{ ansible_failed_task.name }}\n" dest={{ base_dir }}/rescued
  always:
    - name: always
      file: path={{ base_dir }}/always state=touch
- name: a block for RedHat only
  when: false
  block:
    - name: never
      file: path={{ base_dir }}/redhat state=touch
)");
  WriteFile(dir + "/roles/app/tasks/extra.yml",
            "- name: from the include\n  lineinfile: path={{ base_dir }}/extra line=included "
            "create=yes\n  notify: topic-a\n");
  WriteFile(dir + "/roles/other/meta/main.yml", "dependencies: [base]\n");
  WriteFile(dir + "/roles/other/tasks/main.yml",
            "- name: other's own\n  file: path={{ base_dir }}/other state=touch\n");
  WriteFile(dir + "/roles/app/handlers/main.yml", R"(
- name: app changed
  shell: echo "{{ app_name }}" >> {{ base_dir }}/handler.log
- name: listener
  listen: topic-a
  shell: echo listened >> {{ base_dir }}/handler.log
)");
  Recorder rec;
  auto out = Run(dir, R"(
- hosts: all
  pre_tasks:
    - name: before the roles
      file: path=DIR/pre state=touch
  roles:
    - role: app
      app_name: from-params
    - other
  post_tasks:
    - name: after
      file: path=DIR/post state=touch
)",
                 rec);
  CHECK_MESSAGE(std::string(ToString(out.status)) == "ok", out.failed_task);
  CHECK(Read(dir + "/out/app.conf") ==
        "port=80 name=from-params label=from-params-80 owner=role-vars\n");
  CHECK(Read(dir + "/out/extra") == "included\n");
  CHECK(Read(dir + "/out/rescued") == "rescued fails\n");
  CHECK(std::filesystem::exists(dir + "/out/always"));
  CHECK(!std::filesystem::exists(dir + "/out/not-reached"));
  CHECK(!std::filesystem::exists(dir + "/out/redhat"));
  CHECK(std::filesystem::exists(dir + "/pre"));
  CHECK(std::filesystem::exists(dir + "/post"));
  CHECK(std::filesystem::exists(dir + "/out/other"));
  // The handlers ran once each, after the roles and tasks, with the role's
  // vars; `base` ran once, though both roles depend on it.
  CHECK(Read(dir + "/out/handler.log") == "from-params\nlistened\n");
  std::string titles;
  for (const auto& r : rec.results) titles += r.task + "=" + ToString(r.status) + ";";
  CHECK_MESSAGE(titles.find("fails=failed;") != std::string::npos, titles);
  CHECK_MESSAGE(titles.find("a block for RedHat only=skipped;") != std::string::npos, titles);
  size_t first = titles.find("the folder=");
  CHECK_MESSAGE(titles.find("the folder=", first + 1) == std::string::npos, titles);
}

TEST_CASE("runner: a failure in a rescue fails the node, after always") {
  TempDir d;
  Recorder rec;
  auto out = Run(d.path(), R"(
- hosts: all
  tasks:
    - block:
        - command: /bin/false
      rescue:
        - name: the rescue fails too
          command: /bin/false
      always:
        - name: cleanup
          file: path=DIR/cleaned state=touch
    - name: never reached
      file: path=DIR/after state=touch
)",
                 rec);
  CHECK(std::string(ToString(out.status)) == "failed");
  CHECK(out.failed_task.find("the rescue fails too") != std::string::npos);
  CHECK(std::filesystem::exists(d.path() + "/cleaned"));
  CHECK(!std::filesystem::exists(d.path() + "/after"));
}

// Several nodes at once, each with its own thread, as the configurator runs
// them; every result is kept by node.
class NodeRecorder : public RunSink {
 public:
  void OnTask(const std::string& node, const TaskResult& r) override {
    std::lock_guard lock(mu);
    by_node[node].push_back(r);
  }
  std::mutex mu;
  std::map<std::string, std::vector<TaskResult>> by_node;
};

// A node's Remote that counts the scripts it ran.
class CountingRemote : public Remote {
 public:
  explicit CountingRemote(std::string name) : local_(name) {}
  const std::string& node() const override { return local_.node(); }
  Result<RemoteResult> Run(const std::string& script, const std::string& input,
                           const std::string& become_user, int timeout_ms) override {
    ++runs;
    return local_.Run(script, input, become_user, timeout_ms);
  }
  std::atomic<int> runs{0};

 private:
  LocalRemote local_;
};

std::map<std::string, NodeRunOutcome> RunNodes(const std::string& dir, std::string text,
                                               const std::vector<std::string>& nodes,
                                               NodeRecorder& rec) {
  for (size_t p; (p = text.find("DIR")) != std::string::npos;) text.replace(p, 3, dir);
  const std::string file = dir + "/play.yml";
  std::ofstream(file) << text;
  auto pb = LoadPlaybook(file);
  REQUIRE_MESSAGE(pb.ok(), pb.status().message());
  RunOptions options;
  options.sleep = [](int) { return true; };
  options.once = std::make_shared<RunOnceTable>();
  std::map<std::string, NodeRunOutcome> outs;
  std::mutex mu;
  std::vector<std::thread> threads;
  for (const auto& name : nodes)
    threads.emplace_back([&, name] {
      LocalRemote remote(name);
      json vars = {{"inventory_hostname", name}};
      auto out = RunPlaybook(*pb, name, remote, vars, &rec, options);
      std::lock_guard lock(mu);
      outs[name] = out;
    });
  for (auto& t : threads) t.join();
  return outs;
}

TEST_CASE("runner: run_once runs on one node of the run; the others take its result") {
  TempDir d;
  NodeRecorder rec;
  auto outs = RunNodes(d.path(), R"(
- hosts: all
  tasks:
    - name: make the cluster's token once
      shell: echo "token-from-{{ inventory_hostname }}" | tee -a DIR/once.log
      register: token
      run_once: true
    - name: every node keeps it
      copy:
        dest: DIR/{{ inventory_hostname }}.txt
        content: "{{ token.stdout }}"
)",
                       {"n1", "n2", "n3"}, rec);
  std::string log = Read(d.path() + "/once.log");
  CHECK(std::count(log.begin(), log.end(), '\n') == 1);
  const std::string ran = log.substr(std::string("token-from-").size(),
                                     log.size() - 1 - std::string("token-from-").size());
  for (const std::string n : {"n1", "n2", "n3"}) {
    CHECK(std::string(ToString(outs[n].status)) == "ok");
    CHECK(Read(d.path() + "/" + n + ".txt") == "token-from-" + ran);
    const TaskResult& first = rec.by_node[n].at(0);
    if (n == ran) {
      CHECK(std::string(ToString(first.status)) == "changed");
    } else {
      CHECK(std::string(ToString(first.status)) == "ok");
      CHECK_MESSAGE(first.msg.find("run_once: ran on " + ran) == 0, first.msg);
    }
  }
}

TEST_CASE("runner: a run_once task that fails fails every node of the run") {
  TempDir d;
  NodeRecorder rec;
  auto outs = RunNodes(d.path(), R"(
- hosts: all
  tasks:
    - name: once, and it fails
      command: /bin/false
      run_once: true
    - name: never reached
      file: path=DIR/{{ inventory_hostname }} state=touch
)",
                       {"n1", "n2"}, rec);
  for (const std::string n : {"n1", "n2"}) {
    CHECK(std::string(ToString(outs[n].status)) == "failed");
    CHECK(!std::filesystem::exists(d.path() + "/" + n));
  }
}

TEST_CASE("runner: delegate_to localhost runs on the control node with the node's vars") {
  TempDir d;
  const std::string text = R"(
- hosts: all
  tasks:
    - name: on the control node
      copy:
        dest: DIR/from-{{ inventory_hostname }}
        content: "{{ inventory_hostname }}"
      delegate_to: localhost
    - name: on the node
      command: "true"
)";
  std::string t = text;
  for (size_t p; (p = t.find("DIR")) != std::string::npos;) t.replace(p, 3, d.path());
  std::ofstream(d.path() + "/play.yml") << t;
  auto pb = LoadPlaybook(d.path() + "/play.yml");
  REQUIRE_MESSAGE(pb.ok(), pb.status().message());
  CountingRemote node("node1"), control("localhost");
  Recorder rec;
  RunOptions options;
  options.local = &control;
  auto out = RunPlaybook(*pb, "node1", node, {{"inventory_hostname", "node1"}}, &rec, options);
  CHECK(std::string(ToString(out.status)) == "ok");
  CHECK(Read(d.path() + "/from-node1") == "node1");
  CHECK(control.runs > 0);
  CHECK(node.runs == 1);  // the command only

  // Without a control node to run on, the task says so.
  Recorder rec2;
  options.local = nullptr;
  out = RunPlaybook(*pb, "node1", node, {{"inventory_hostname", "node1"}}, &rec2, options);
  CHECK(std::string(ToString(out.status)) == "failed");
  CHECK(out.failed_task.find("delegate_to: localhost is not available") != std::string::npos);

  // Any other host is left to ansible-playbook.
  std::ofstream(d.path() + "/other.yml")
      << "- hosts: all\n  tasks:\n    - command: 'true'\n      delegate_to: node2\n";
  auto other = LoadPlaybook(d.path() + "/other.yml");
  REQUIRE_FALSE(other.ok());
  CHECK(other.status().message().find("delegates to localhost (the control node) only") !=
        std::string::npos);
}

TEST_CASE("runner: loop_control's index_var and label") {
  TempDir d;
  Recorder rec;
  auto out = Run(d.path(), R"(
- hosts: all
  tasks:
    - name: numbered
      copy:
        dest: "DIR/{{ idx }}-{{ item.name }}"
        content: "{{ item.secret }}"
      loop:
        - {name: a, secret: s1}
        - {name: b, secret: s2}
      loop_control:
        index_var: idx
        label: "{{ item.name }}"
)",
                 rec);
  CHECK(std::string(ToString(out.status)) == "ok");
  CHECK(Read(d.path() + "/0-a") == "s1");
  CHECK(Read(d.path() + "/1-b") == "s2");
  REQUIRE(rec.results.size() == 2);
  CHECK(rec.results[0].item == "a");
  CHECK(rec.results[1].item == "b");
}

TEST_CASE("runner: set_fact in a loop adds up item by item and lasts into the next play") {
  TempDir d;
  Recorder rec;
  auto out = Run(d.path(), R"(
- hosts: all
  tasks:
    - name: add up
      set_fact:
        acc: "{{ acc | default('') }} {{ item }}="
      loop: [a, b, c]
- hosts: all
  tasks:
    - name: in the next play
      copy:
        dest: DIR/acc.txt
        content: "{{ acc | trim }}\n"
)",
                 rec);
  CHECK(std::string(ToString(out.status)) == "ok");
  CHECK(Read(d.path() + "/acc.txt") == "a= b= c=\n");
}

// A playbook's services at image stage (provisiond_stage: image) and at node
// stage, against a stand-in systemctl on PATH that logs each verb and keeps
// one unit's state in files.
TEST_CASE("runner: image stage enables services but starts none; reboot fails there") {
  TempDir d;
  const std::string dir = d.path();
  const std::string systemctl = R"SH(
[ "$1" = --quiet ] && shift
verb=$1; shift
echo "$verb" >>"$u.log"
case "$verb" in
  show) case "$*" in *ActiveState*) if [ -e "$u.active" ]; then echo ActiveState=active; else echo ActiveState=inactive; fi ;; esac ;;
  is-enabled) [ -e "$u.enabled" ] ;;
  enable) touch "$u.enabled" ;;
  start|restart) touch "$u.active" ;;
  stop) rm -f "$u.active" ;;
esac
)SH";
  WriteFile(dir + "/bin/systemctl", "#!/bin/sh\nu=" + dir + "/unit" + systemctl);
  std::filesystem::permissions(dir + "/bin/systemctl", std::filesystem::perms::owner_all);
  const std::string old_path = getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin";
  setenv("PATH", (dir + "/bin:" + old_path).c_str(), 1);
  struct RestorePath {
    std::string path;
    ~RestorePath() { setenv("PATH", path.c_str(), 1); }
  } restore{old_path};
  // The reboot runs only at image stage, where it must fail before doing
  // anything.
  const std::string play = R"(
- hosts: all
  tasks:
    - name: web enabled and started
      systemd: {name: web.service, state: started, enabled: true}
      notify: restart web
    - name: web started
      systemd: {name: web.service, state: started}
  post_tasks:
    - name: reboot into the new kernel
      reboot:
      when: provisiond_stage | default('node') == 'image'
  handlers:
    - name: restart web
      systemd: {name: web.service, state: restarted}
)";
  auto verbs = [&] {
    std::string log = Read(dir + "/unit.log");
    std::vector<std::string> out;
    for (size_t start = 0, end; (end = log.find('\n', start)) != std::string::npos; start = end + 1)
      if (std::string v = log.substr(start, end - start); v != "show" && v != "is-enabled")
        out.push_back(v);
    std::filesystem::remove(dir + "/unit.log");
    return out;
  };

  Recorder image;
  NodeRunOutcome out = Run(dir, play, image, json{{"provisiond_stage", "image"}});
  CHECK(image.Statuses() == "changed skipped skipped failed");
  CHECK(verbs() == std::vector<std::string>{"enable"});
  CHECK(std::filesystem::exists(dir + "/unit.enabled"));
  CHECK_FALSE(std::filesystem::exists(dir + "/unit.active"));
  REQUIRE(image.results.size() == 4);
  CHECK(image.results[0].msg ==
        "state: started not applied at image stage (no daemon of the image runs on the control "
        "node; an enabled unit starts when the node boots)");
  CHECK(image.results[1].msg.find("state: started not applied at image stage") == 0);
  CHECK(image.results[2].task == "restart web");  // the handler
  CHECK(image.results[2].msg.find("state: restarted not applied at image stage") == 0);
  CHECK(std::string(ToString(out.status)) == "failed");
  CHECK(out.skipped == 2);
  CHECK(out.failed_task.find("reboot into the new kernel (" + dir + "/play.yml:") == 0);
  CHECK(out.failed_task.find("reboot cannot run at image stage") != std::string::npos);
  CHECK(out.failed_task.find("when: provisiond_stage != 'image'") != std::string::npos);

  // At node stage (said, or unsaid) the same tasks start and restart.
  std::filesystem::remove(dir + "/unit.enabled");
  for (const json& vars : {json{{"provisiond_stage", "node"}}, json::object()}) {
    Recorder node;
    out = Run(dir, play, node, vars);
    INFO(vars.dump());
    CHECK(std::string(ToString(out.status)) == "ok");
    CHECK(node.Statuses() == "changed ok changed skipped");
    CHECK(verbs() == std::vector<std::string>{"enable", "start", "restart"});
    std::filesystem::remove(dir + "/unit.enabled");
    std::filesystem::remove(dir + "/unit.active");
  }
}

}  // namespace prov
