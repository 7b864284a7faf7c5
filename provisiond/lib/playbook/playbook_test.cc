#include "playbook/playbook.h"

#include <doctest/doctest.h>

#include <unistd.h>
#include <algorithm>

#include <filesystem>

#include "base/file_util.h"
#include "base/temp_dir.h"

namespace prov {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// A playbooks directory with templates, for template src: checks. Removed
// when the test binary exits.
struct PlaybookDir {
  fs::path dir;
  PlaybookDir() {
    dir = fs::temp_directory_path() / ("provision-playbook-test-" + std::to_string(getpid()));
    fs::create_directories(dir / "templates");
    fs::create_directories(dir / "files");
    REQUIRE(
        WriteFileAtomic((dir / "templates" / "good.j2").string(), "Port={{ port | default(22) }}\n")
            .ok());
    REQUIRE(WriteFileAtomic((dir / "templates" / "bad.j2").string(), "line\nExec={{ a | bogus }}\n")
                .ok());
    REQUIRE(WriteFileAtomic((dir / "beside.j2").string(), "{% if x %}x{% endif %}\n").ok());
    REQUIRE(WriteFileAtomic((dir / "files" / "motd").string(), "hello\n").ok());
  }
  ~PlaybookDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string file() const { return (dir / "pb.yml").string(); }
};

const PlaybookDir& Dir() {
  static PlaybookDir d;
  return d;
}

std::string Errors(const std::string& text) {
  auto pb = ParsePlaybook(text, "pb.yml");
  REQUIRE_MESSAGE(!pb.ok(), "loaded without errors:\n" << text);
  return pb.status().message();
}

// A play with one task whose body (indented 6) is `task`.
std::string OneTask(const std::string& task) {
  return "- hosts: all\n  tasks:\n    - " + task;
}

}  // namespace

TEST_CASE("playbook: a playbook loads with every keyword") {
  const char* text = R"(# comment
- name: Setup {{ role | default('x') }}
  hosts: node[01-02],lab*
  become: yes
  become_user: admin
  gather_facts: false
  vars:
    user: compute
    count: 3
    mode_octal: 0644
    mode_text: "0644"
    enabled: on
    ratio: 1.5
    nothing: ~
    list: [a, b]
  tasks:
    - name: Create {{ user }}
      ansible.builtin.user:
        name: "{{ user }}"
        shell: /bin/bash
      register: created
      notify: Restart it
      tags: [users]
    - name: Run
      command: ls -l /tmp
      args:
        chdir: /tmp
        creates: /tmp/x
      when:
        - created is changed
        - "{{ count > 1 }}"
      changed_when: false
      failed_when:
        - result.rc != 0
        - "'error' in result.stderr"
      register: result
      become: false
      ignore_errors: true
      timeout: 30
    - shell: "curl -sf http://127.0.0.1:{{ port }}/"
      until: result.rc == 0
      retries: 10
      delay: 2
      vars:
        port: 8000
    - ansible.posix.copy:
        dest: /etc/{{ item }}
        content: "x\n"
      loop: [a, b]
    - copy:
        dest: "/etc/{{ f }}"
        src: motd
      loop: "{{ list }}"
      loop_control:
        loop_var: f
      notify:
        - Restart it
    - debug:
        msg: "{{ item }}"
      with_items:
        - [1, 2]
        - 3
    - debug:
        var: list
      with_items: "{{ list }}"
    - ansible.builtin.template:
        src: good.j2
        dest: /etc/good
    - ansible.builtin.template:
        src: beside.j2
        dest: /etc/beside
  handlers:
    - name: Restart it
      systemd:
        name: it
        state: restarted
)";
  auto pb = ParsePlaybook(text, Dir().file());
  REQUIRE_MESSAGE(pb.ok(), pb.status().message());
  CHECK(pb->file == Dir().file());
  CHECK(pb->dir == Dir().dir.string());
  REQUIRE(pb->plays.size() == 1);
  const Play& play = pb->plays[0];
  CHECK(play.name == "Setup {{ role | default('x') }}");
  CHECK(play.hosts == "node[01-02],lab*");
  CHECK(play.become);
  CHECK(play.become_user == "admin");
  CHECK(play.line == 2);
  CHECK(play.vars["user"] == "compute");
  CHECK(play.vars["count"] == 3);
  CHECK(play.vars["mode_octal"] == 0644);  // YAML 1.1, as Ansible reads it
  CHECK(play.vars["mode_text"] == "0644");
  CHECK(play.vars["enabled"] == true);
  CHECK(play.vars["ratio"] == 1.5);
  CHECK(play.vars["nothing"].is_null());
  CHECK(play.vars["list"] == json::array({"a", "b"}));
  REQUIRE(play.tasks.size() == 9);

  const Task& user = play.tasks[0];
  CHECK(user.module == "user");
  CHECK(user.name == "Create {{ user }}");
  CHECK(user.args == json{{"name", "{{ user }}"}, {"shell", "/bin/bash"}});
  CHECK(user.register_as == "created");
  CHECK(user.notify == std::vector<std::string>{"Restart it"});
  CHECK(user.where() == Dir().file() + ":17");
  CHECK_FALSE(user.become.has_value());

  const Task& run = play.tasks[1];
  CHECK(run.module == "command");
  CHECK(run.args == json{{"_raw_params", "ls -l /tmp"}, {"chdir", "/tmp"}, {"creates", "/tmp/x"}});
  CHECK(run.when == std::vector<std::string>{"created is changed", "{{ count > 1 }}"});
  CHECK(run.changed_when == "false");
  CHECK(run.failed_when == "(result.rc != 0) and ('error' in result.stderr)");
  CHECK(run.become == false);
  CHECK(run.ignore_errors);
  CHECK(run.timeout_s == 30);

  const Task& retry = play.tasks[2];
  CHECK(retry.module == "shell");
  CHECK(retry.until == "result.rc == 0");
  CHECK(retry.retries == 10);
  CHECK(retry.delay_s == 2);
  CHECK(retry.vars == json{{"port", 8000}});
  CHECK(retry.name.empty());

  CHECK(play.tasks[3].module == "copy");
  CHECK(play.tasks[3].loop == json::array({"a", "b"}));
  CHECK(play.tasks[3].loop_var == "item");
  CHECK(play.tasks[4].loop == json("{{ list }}"));
  CHECK(play.tasks[4].loop_var == "f");
  CHECK(play.tasks[5].loop == json::array({1, 2, 3}));  // with_items flattens a level
  CHECK(play.tasks[6].loop == json("{{ (list) | flatten(levels=1) }}"));
  CHECK(play.tasks[7].module == "template");

  REQUIRE(play.handlers.size() == 1);
  CHECK(play.handlers[0].name == "Restart it");
  CHECK(play.handlers[0].module == "systemd");
}

TEST_CASE("playbook: broken playbooks give file:line:col errors") {
  struct Case {
    const char* name;
    std::string text;
    std::string error;
  };
  const Case cases[] = {
      {"YAML syntax", "- hosts: all\n  tasks: [\n", "pb.yml:3:1: YAML syntax"},
      {"empty", "", "pb.yml: the playbook is empty"},
      {"not a list", "hosts: all\n", "pb.yml:1:1: a playbook must be a list of plays"},
      {"play not a mapping", "- just text\n", "pb.yml:1:3: play must be a mapping"},
      {"missing hosts", "- name: x\n  tasks: []\n",
       "pb.yml:1:3: play: missing required key 'hosts'"},
      {"unknown play key", "- hosts: all\n  taks: []\n", "pb.yml:2:3: unknown key 'taks' in play"},
      {"serial", "- hosts: all\n  serial: 2\n",
       "pb.yml:2:3: play keyword 'serial' is not supported"},
      {"any_errors_fatal", "- hosts: all\n  any_errors_fatal: true\n",
       "pb.yml:2:3: play keyword 'any_errors_fatal' is not supported"},
      {"unknown role", "- hosts: all\n  roles: [x]\n",
       "pb.yml:2:11: role 'x' not found (looked in ./roles)"},
      {"templated role", "- hosts: all\n  roles: [\"{{ r }}\"]\n",
       "templated role names are not supported natively"},
      {"import_playbook", "- import_playbook: other.yml\n",
       "pb.yml:1:3: 'import_playbook' is not supported"},
      {"bad hostlist", "- hosts: node[3-1]\n", "pb.yml:1:10: hostlist 'node[3-1]'"},
      {"templated hosts", "- hosts: \"{{ x }}\"\n", "templates are not supported in hosts"},
      {"hosts intersection", "- hosts: all:&web\n", "intersections (&)"},
      {"become not a bool", "- hosts: all\n  become: maybe\n",
       "pb.yml:2:11: 'become' must be true or false"},
      {"vars not a mapping", "- hosts: all\n  vars: [a]\n", "pb.yml:2:9: 'vars' must be a mapping"},
      {"bad var name", "- hosts: all\n  vars:\n    my-var: 1\n",
       "pb.yml:3:5: variable name 'my-var' must be letters"},
      {"tasks not a list", "- hosts: all\n  tasks: {a: 1}\n",
       "pb.yml:2:10: 'tasks' must be a list"},
      {"task not a mapping", OneTask("just text\n"), "pb.yml:3:7: a task must be a mapping"},
      {"unknown module", OneTask("name: x\n      ansible.builtin.frobnicate:\n        a: 1\n"),
       "pb.yml:4:7: unknown module 'ansible.builtin.frobnicate'"},
      {"unknown short module", OneTask("frobnicate: {a: 1}\n"),
       "pb.yml:3:7: unknown module 'frobnicate'"},
      {"unknown task keyword", OneTask("command: ls\n      colour: red\n"),
       "pb.yml:4:7: unknown module or task keyword 'colour'"},
      {"two modules", OneTask("command: ls\n      shell: ls\n"),
       "pb.yml:4:7: a task has exactly one module; this one has 'command' and 'shell'"},
      {"no module", OneTask("name: nothing to do\n"), "pb.yml:3:7: a task needs a module"},
      {"unknown argument", OneTask("copy:\n        dst: /x\n        content: y\n"),
       "pb.yml:4:9: unknown argument 'dst' for module copy"},
      {"unknown argument in args", OneTask("command: ls\n      args:\n        cwd: /tmp\n"),
       "pb.yml:5:9: unknown argument 'cwd' for module command"},
      {"missing required argument", OneTask("file:\n        state: directory\n"),
       "pb.yml:3:7: missing required argument 'path' for module file"},
      {"bad choice", OneTask("file:\n        path: /x\n        state: dir\n"),
       "pb.yml:5:16: argument 'state' of module file is 'dir', expected one of"},
      {"key=value with a missing file", OneTask("copy: src=a dest=b\n"),
       "pb.yml:3:13: file 'a' not found"},
      {"key=value that is not", OneTask("file: path=/x directory\n"),
       "pb.yml:3:13: the arguments of module 'file': 'directory' is not key=value"},
      {"key=value unknown argument", OneTask("file: path=/x colour=red\n"),
       "unknown argument 'colour' for module file"},
      {"command without a command", OneTask("command:\n"), "command needs a command"},
      {"argument twice",
       OneTask("command:\n        cmd: ls\n        chdir: /\n      args:\n"
               "        chdir: /tmp\n"),
       "pb.yml:7:9: argument 'chdir' is given in the module and in 'args'"},
      {"rescue without block", OneTask("rescue:\n        - command: ls\n"),
       "pb.yml:3:7: 'rescue' and 'always' need a 'block'"},
      {"bad task in a block", OneTask("block:\n        - copyy: {}\n"),
       "pb.yml:4:11: unknown module 'copyy'"},
      {"with_dict", OneTask("command: ls\n      with_dict: {a: 1}\n"),
       "pb.yml:4:7: task keyword 'with_dict' is not supported by provisiond's runner (use loop)"},
      {"include_tasks of a missing file", OneTask("include_tasks: x.yml\n"),
       "pb.yml:3:22: task file 'x.yml' not found"},
      {"templated include", OneTask("include_tasks: \"{{ os }}.yml\"\n"),
       "a templated file name is resolved only when it runs"},
      {"listen on a task", OneTask("command: ls\n      listen: x\n"), "'listen' is for handlers"},
      {"duplicate key", OneTask("command: ls\n      name: a\n      name: b\n"),
       "pb.yml:5:7: duplicate key 'name'"},
      {"bad when", OneTask("command: ls\n      when: x ==\n"),
       "pb.yml:4:13: invalid condition in 'when': unexpected end of expression at column 5"},
      {"bad when in a list",
       OneTask("command: ls\n      when:\n        - x\n        - y is frob\n"),
       "pb.yml:6:11: invalid condition in 'when': unknown test 'frob' at column 6"},
      {"bad when template", OneTask("command: ls\n      when: \"{{ x | nope }}\"\n"),
       "pb.yml:4:13: invalid condition in 'when': unknown filter 'nope'"},
      {"bad changed_when", OneTask("command: ls\n      changed_when: \"'a' in\"\n"),
       "pb.yml:4:21: invalid condition in 'changed_when'"},
      {"bad failed_when list",
       OneTask("command: ls\n      failed_when:\n        - ok\n"
               "        - rc = 1\n"),
       "pb.yml:6:11: invalid condition in 'failed_when'"},
      {"bad until", OneTask("command: ls\n      until: result.rc ==\n      retries: 2\n"),
       "pb.yml:4:14: invalid condition in 'until'"},
      {"retries without until", OneTask("command: ls\n      retries: 2\n"),
       "pb.yml:4:16: 'retries' needs 'until'"},
      {"bad retries", OneTask("command: ls\n      until: x\n      retries: many\n"),
       "pb.yml:5:16: 'retries' must be an integer"},
      {"bad template in an argument",
       OneTask("copy:\n        dest: \"{{ x | bogus }}\"\n"
               "        content: y\n"),
       "pb.yml:4:15: template error in 'dest': unknown filter 'bogus' at column 8"},
      {"bad template in a free-form command", OneTask("shell: echo {{ x }\n"),
       "pb.yml:3:14: template error in 'shell': '{{' is not closed"},
      {"bad template in a name", OneTask("name: \"{{ }}\"\n      command: ls\n"),
       "pb.yml:3:13: template error in 'name': empty expression"},
      {"bad template in vars", "- hosts: all\n  vars:\n    a: \"{% if %}\"\n",
       "pb.yml:3:8: template error in 'a'"},
      {"bad template in a nested argument",
       OneTask("apt:\n        name:\n          - ok\n"
               "          - \"{{ pkgs | join(' ' }}\"\n"),
       "pb.yml:6:13: template error in 'name[1]'"},
      {"bad assert", OneTask("assert:\n        that:\n          - x ==\n"),
       "pb.yml:5:13: invalid condition in 'that'"},
      {"bad debug var", OneTask("debug:\n        var: a b\n"),
       "pb.yml:4:14: invalid expression in 'var'"},
      {"register not a name", OneTask("command: ls\n      register: my-var\n"),
       "pb.yml:4:17: register: 'my-var' is not a variable name"},
      {"loop not a list", OneTask("command: ls\n      loop: foo\n"),
       "pb.yml:4:13: 'loop' must be a list or a \"{{ expression }}\", found 'foo'"},
      {"loop and with_items", OneTask("command: ls\n      loop: [1]\n      with_items: [2]\n"),
       "pb.yml:5:19: a task takes 'loop' or 'with_items', not both"},
      {"loop_control pause",
       OneTask("command: ls\n      loop: [1]\n      loop_control:\n"
               "        pause: 3\n"),
       "pb.yml:6:9: unknown key 'pause' in 'loop_control'"},
      {"delegate_to another node", OneTask("command: ls\n      delegate_to: node2\n"),
       "pb.yml:4:20: delegate_to 'node2': provisiond's runner delegates to localhost"},
      {"run_once not a bool", OneTask("command: ls\n      run_once: maybe\n"),
       "pb.yml:4:17: 'run_once' must be true or false"},
      {"loop_control without loop", OneTask("command: ls\n      loop_control: {loop_var: x}\n"),
       "pb.yml:4:21: 'loop_control' without 'loop'"},
      {"notify unknown handler", OneTask("command: ls\n      notify: Restart x\n"),
       "pb.yml:4:15: notify: no handler named 'Restart x' in this play (it has no handlers)"},
      {"notify unknown handler with handlers",
       "- hosts: all\n  tasks:\n    - command: ls\n      notify: [a, b]\n  handlers:\n"
       "    - name: a\n      command: ls\n",
       "pb.yml:4:19: notify: no handler named 'b' in this play (handlers: a)"},
      {"handler without name", "- hosts: all\n  handlers:\n    - command: ls\n",
       "pb.yml:3:7: a handler needs a name"},
      {"two handlers with one name",
       "- hosts: all\n  handlers:\n    - name: a\n      command: ls\n    - name: a\n      command: "
       "ls\n",
       "pb.yml:5:7: two handlers named 'a'"},
      {"unknown module in a handler",
       "- hosts: all\n  handlers:\n    - name: a\n      restart: x\n",
       "pb.yml:4:7: unknown module or handler keyword 'restart'"},
      {"timeout out of range", OneTask("command: ls\n      timeout: -1\n"),
       "pb.yml:4:16: 'timeout' must be between 0 and"},
      {"ignore_errors not a bool", OneTask("command: ls\n      ignore_errors: sometimes\n"),
       "pb.yml:4:22: 'ignore_errors' must be true or false"},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    std::string msg = Errors(c.text);
    CHECK_MESSAGE(msg.find(c.error) != std::string::npos, msg);
  }
}

TEST_CASE("playbook: template and copy sources are found and checked at load") {
  const std::string file = Dir().file();
  const std::string dir = Dir().dir.string();
  auto load = [&](const std::string& task) { return ParsePlaybook(OneTask(task), file); };

  CHECK(load("template: {src: good.j2, dest: /x}\n").ok());
  CHECK(load("template: {src: templates/good.j2, dest: /x}\n").ok());
  CHECK(load("template: {src: beside.j2, dest: /x}\n").ok());
  CHECK(load("template: {src: \"{{ name }}.j2\", dest: /x}\n").ok());  // checked when it runs
  CHECK(load("copy: {src: motd, dest: /x}\n").ok());

  auto missing = load("template: {src: nope.j2, dest: /x}\n");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message() == file + ":3:23: template 'nope.j2' not found (looked at " +
                                          dir + "/templates/nope.j2, " + dir + "/nope.j2)");
  auto bad = load("template:\n        src: bad.j2\n        dest: /x\n");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() == file + ":4:14: template 'bad.j2' has an error: " + dir +
                                      "/templates/bad.j2:2:13: unknown filter 'bogus'");
  auto no_file = load("copy: {src: nofile, dest: /x}\n");
  REQUIRE_FALSE(no_file.ok());
  CHECK(no_file.status().message().find(":3:19: file 'nofile' not found") != std::string::npos);

  FileSet disk;
  auto find = [&](const char* src) {
    return ReadThenParse(disk,
                         [&](FileSet& f) { return FindPlaybookFile(f, dir, "templates", src); });
  };
  CHECK(find("good.j2") == dir + "/templates/good.j2");
  CHECK(find("beside.j2") == dir + "/beside.j2");
  CHECK(find("none.j2") == "");
}

// Read, then parse: the parser reads nothing itself. Given a set that holds
// the playbook and what it reaches (none of it on disk), it parses; what the
// set lacks is asked for, not read, and ReadThenParse's rounds read it.
TEST_CASE("playbook: parsed from a set of files alone, reading nothing") {
  const std::string dir = "/nonexistent/playbooks";
  auto files = FileSet::InMemory({
      {dir + "/site.yml",
       "- hosts: all\n  vars_files: [vars/common.yml]\n  roles: [web]\n  tasks:\n"
       "    - include_tasks: more.yml\n"
       "    - template: {src: motd.j2, dest: /etc/motd}\n"},
      {dir + "/vars/common.yml", "greeting: hello\n"},
      {dir + "/more.yml", "- debug: {msg: more}\n"},
      {dir + "/templates/motd.j2", "{{ greeting }}\n"},
      {dir + "/roles/web/tasks/main.yml", "- copy: {src: index.html, dest: /srv/index.html}\n"},
      {dir + "/roles/web/files/index.html", "<p>hi</p>\n"},
      {dir + "/roles/web/defaults/main.yml", "port: 80\n"},
  });
  auto pb = ParsePlaybook(files, dir + "/site.yml");
  REQUIRE_MESSAGE(pb.ok(), pb.status().message());
  CHECK(files.rounds() == 0);
  REQUIRE(pb->plays.size() == 1);
  CHECK(pb->plays[0].vars["greeting"] == "hello");
  CHECK(pb->plays[0].tasks.size() == 3);  // the role's block, the include's block, the template
  CHECK(std::count(pb->reached_files.begin(), pb->reached_files.end(),
                   dir + "/templates/motd.j2") == 1);

  // A set missing a file the playbook names: the parse fails on it, as a
  // missing file, and nothing is read from disk.
  auto partial = FileSet::InMemory({{dir + "/site.yml",
                                     "- hosts: all\n  tasks:\n"
                                     "    - include_tasks: more.yml\n"}});
  auto refused = ParsePlaybook(partial, dir + "/site.yml");
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("task file 'more.yml' not found") != std::string::npos);
  CHECK_FALSE(partial.ReadWanted());

  // On disk, each round reads what the last parse named: the playbook, then
  // its include, then the include's include.
  TempDir tmp;
  REQUIRE(
      WriteFileAtomic(tmp.path() + "/a.yml", "- hosts: all\n  tasks:\n    - include_tasks: b.yml\n")
          .ok());
  REQUIRE(WriteFileAtomic(tmp.path() + "/b.yml", "- include_tasks: c.yml\n").ok());
  REQUIRE(WriteFileAtomic(tmp.path() + "/c.yml", "- debug: {msg: c}\n").ok());
  FileSet disk;
  auto loaded =
      ReadThenParse(disk, [&](FileSet& f) { return ParsePlaybook(f, tmp.path() + "/a.yml"); });
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().message());
  CHECK(disk.rounds() == 3);
  CHECK_FALSE(disk.ReadWanted());
}

TEST_CASE("playbook: vars_files over the play's vars, the first existing of a list") {
  const std::string file = Dir().file();
  const std::string dir = Dir().dir.string();
  REQUIRE(WriteFileAtomic(dir + "/common.yml", "port: 22\nname: common\n").ok());
  REQUIRE(WriteFileAtomic(dir + "/debian.yml", "name: debian\n").ok());
  REQUIRE(WriteFileAtomic(dir + "/broken.yml", "name: [unclosed\n").ok());
  auto pb = ParsePlaybook(
      "- hosts: all\n  vars: {name: play, keep: 1}\n  vars_files:\n    - common.yml\n"
      "    - [missing.yml, debian.yml]\n  tasks: []\n",
      file);
  REQUIRE_MESSAGE(pb.ok(), pb.status().message());
  CHECK(pb->plays[0].vars == json{{"name", "debian"}, {"keep", 1}, {"port", 22}});
  CHECK(std::find(pb->reached_files.begin(), pb->reached_files.end(), dir + "/debian.yml") !=
        pb->reached_files.end());

  auto errors = [&](const std::string& entry) {
    auto bad = ParsePlaybook("- hosts: all\n  vars_files:\n    - " + entry + "\n", file);
    REQUIRE_FALSE(bad.ok());
    return bad.status().message();
  };
  CHECK(errors("none.yml").find(":3:7: vars_files: 'none.yml' not found") != std::string::npos);
  CHECK(errors("[a.yml, b.yml]").find(":3:7: vars_files: none of these files exists") !=
        std::string::npos);
  CHECK(errors("\"{{ os }}.yml\"").find("a templated file name is resolved only when it runs") !=
        std::string::npos);
  const std::string broken = errors("broken.yml");
  CHECK_MESSAGE(broken.find(dir + "/broken.yml:2:1: YAML syntax") == 0, broken);
}

TEST_CASE("playbook: every error is reported, not just the first") {
  auto pb = ParsePlaybook(
      "- hosts: all\n"
      "  serial: 1\n"
      "  tasks:\n"
      "    - bogus_module: {}\n"
      "    - copy: {dest: /x, content: y, colour: red}\n"
      "      when: a ==\n"
      "- hosts: all\n"
      "  tasks:\n"
      "    - command: ls\n"
      "      notify: nobody\n",
      "pb.yml");
  REQUIRE_FALSE(pb.ok());
  const std::string& m = pb.status().message();
  CHECK(m.find("pb.yml:2:3: play keyword 'serial'") != std::string::npos);
  CHECK(m.find("pb.yml:4:7: unknown module 'bogus_module'") != std::string::npos);
  CHECK(m.find("pb.yml:5:36: unknown argument 'colour' for module copy") != std::string::npos);
  CHECK(m.find("pb.yml:6:13: invalid condition in 'when'") != std::string::npos);
  CHECK(m.find("pb.yml:10:15: notify: no handler named 'nobody'") != std::string::npos);
  CHECK(std::count(m.begin(), m.end(), '\n') == 4);
}

TEST_CASE("playbook: YAML values are read as Ansible reads them") {
  auto pb = ParsePlaybook(
      "- hosts: all\n"
      "  vars:\n"
      "    a: yes\n    b: 'yes'\n    c: 0x1f\n    d: 1e3\n    e: 1.0e+3\n    f: -12\n"
      "    g: 012\n    h: \"012\"\n    i: 1_000\n    j: ''\n    k:\n    l: Off\n"
      "    m: 99999999999999999999999\n    n: .5\n",
      "pb.yml");
  REQUIRE_MESSAGE(pb.ok(), pb.status().message());
  const json& v = pb->plays[0].vars;
  CHECK(v["a"] == true);
  CHECK(v["b"] == "yes");
  CHECK(v["c"] == 31);
  CHECK(v["d"] == "1e3");  // YAML 1.1 floats need a dot
  CHECK(v["e"] == 1000.0);
  CHECK(v["f"] == -12);
  CHECK(v["g"] == 10);
  CHECK(v["h"] == "012");
  CHECK(v["i"] == 1000);
  CHECK(v["j"] == "");
  CHECK(v["k"].is_null());
  CHECK(v["l"] == false);
  CHECK(v["m"] == "99999999999999999999999");
  CHECK(v["n"] == 0.5);
}

TEST_CASE("playbook: long YAML scalars load (std::regex overflowed the stack on them)") {
  // Found by fuzzing: a 60 kB number sent std::regex's recursion past the
  // stack. The scalar patterns now run on the bounded engine (jinja/regex.h).
  const std::string digits(60000, '1');
  auto pb = ParsePlaybook("- hosts: all\n  vars:\n    x: " + digits + "\n    y: 0x" +
                              std::string(60000, 'f') + "\n  tasks: []\n",
                          "pb.yml");
  REQUIRE_MESSAGE(pb.ok(), pb.status().message());
  CHECK(pb->plays[0].vars["x"] == digits);  // too large for an integer: the text
}

TEST_CASE("playbook: hosts patterns") {
  struct Case {
    const char* hosts;
    const char* host;
    bool match;
  };
  const Case cases[] = {
      {"all", "node1", true},
      {"*", "node1", true},
      {"node1", "node1", true},
      {"node1", "node10", false},
      {"node*", "node10", true},
      {"gpu?", "gpu1", true},
      {"gpu?", "gpu10", false},
      {"node[01-04]", "node03", true},
      {"node[01-04]", "node3", false},
      {"node[01-04]", "node05", false},
      {"node[1,3]", "node3", true},
      {"node[1,3]", "node2", false},
      {"a,b,c", "b", true},
      {"a, b", "b", true},
      {"a:b", "b", true},
      {"a,node[1-2]", "node2", true},
      {"all,!node1", "node1", false},
      {"all,!node1", "node2", true},
      {"node*:!node[3-4]", "node3", false},
      {"node*:!node[3-4]", "node5", true},
      {"!node1", "node2", false},
      {"", "node1", false},
  };
  for (const auto& c : cases) {
    INFO(c.hosts, " ", c.host);
    CHECK(HostsMatch(c.hosts, c.host) == c.match);
  }
}

TEST_CASE("playbook: every shipped playbook loads") {
  const fs::path dir = fs::path(PROVISION_SOURCE_DIR) / "playbooks";
  int loaded = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".yml" && entry.path().extension() != ".yaml") continue;
    auto pb = LoadPlaybook(entry.path().string());
    CHECK_MESSAGE(pb.ok(), pb.status().message());
    if (pb.ok()) {
      CHECK(!pb->plays.empty());
      ++loaded;
    }
  }
  CHECK(loaded >= 5);
  auto missing = LoadPlaybook(dir.string() + "/no-such.yml");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == Code::kNotFound);
}

}  // namespace prov
