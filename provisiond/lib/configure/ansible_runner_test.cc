#include "configure/ansible_runner.h"

#include <doctest/doctest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "base/file_util.h"
#include "base/temp_dir.h"

namespace prov {
namespace {

using json = nlohmann::json;

class AnsibleSink : public RunSink {
 public:
  void OnTask(const std::string& node, const TaskResult& r) override {
    results.push_back(node + ":" + r.task + "=" + ToString(r.status) +
                      (r.msg.empty() ? "" : "(" + r.msg + ")"));
    stdouts.push_back(r.stdout_tail);
  }
  std::vector<std::string> results;
  std::vector<std::string> stdouts;
};

AnsibleHost Host(const std::string& name, const std::string& ip, RunSink* sink) {
  AnsibleHost h;
  h.name = name;
  h.address = ip;
  h.port = 2222;
  h.host_key = "ssh-ed25519 AAAAkey" + name + " root@" + name;
  h.vars = {{"inventory_hostname", name},
            {"groups", {{"all", {name}}, {"ungrouped", json::array()}, {"lab", {name}}}},
            {"hostvars", json::object()},
            {"ansible_host", ip},
            {"provisiond_facts", {{"cpu", {{"threads", 8}}}}}};
  h.sink = sink;
  return h;
}

// A stand-in for ansible-playbook: a script that prints `lines` and exits
// with `code`.
std::string FakeAnsible(const std::string& dir, const std::string& lines, int code) {
  std::string path = dir + "/ansible-playbook";
  std::ofstream(path) << "#!/bin/sh\ncat <<'EOF'\n" << lines << "EOF\nexit " << code << "\n";
  chmod(path.c_str(), 0755);
  return path;
}

TEST_CASE("ansible: the callback's lines are read back; others are not events") {
  auto e = ParseAnsibleEvent(
      R"(@@provisiond {"event":"result","host":"n1","play":"p","playbook":"/x/site.yml","task":"t","module":"ansible.builtin.command","where":"/x/site.yml:4","status":"failed","changed":false,"rc":2,"stdout":"out","stderr":"err","msg":"boom","duration_ms":12,"ignored":true})");
  REQUIRE(e);
  CHECK(e->kind == AnsibleEvent::Kind::kResult);
  CHECK(e->host == "n1");
  CHECK(e->result.playbook == "site.yml (ansible-playbook)");
  CHECK(std::string(ToString(e->result.status)) == "failed");
  CHECK(e->result.exit_code == 2);
  CHECK(e->result.where == "/x/site.yml:4");
  CHECK(e->result.duration_ms == 12);
  CHECK(e->ignored);
  CHECK(!ParseAnsibleEvent("PLAY [all] ****"));
  CHECK(!ParseAnsibleEvent("@@provisiond {not json"));
  CHECK(!ParseAnsibleEvent(R"(@@provisiond {"event":"result","host":"n1","status":"weird"})"));
  auto stats = ParseAnsibleEvent(R"(@@provisiond {"event":"stats","hosts":{"n1":{"failed":1}}})");
  REQUIRE(stats);
  CHECK(stats->kind == AnsibleEvent::Kind::kStats);
}

TEST_CASE("ansible: inventory, known_hosts and config") {
  std::vector<AnsibleHost> hosts = {Host("n1", "10.0.0.1", nullptr),
                                    Host("n2", "10.0.0.2", nullptr)};
  json inv = AnsibleInventory(hosts);
  CHECK(inv["all"]["hosts"]["n1"]["ansible_host"] == "10.0.0.1");
  CHECK(inv["all"]["hosts"]["n1"]["ansible_port"] == 2222);
  CHECK(inv["all"]["hosts"]["n1"]["provisiond_facts"]["cpu"]["threads"] == 8);
  // Ansible's own magic vars are left to Ansible.
  CHECK(!inv["all"]["hosts"]["n1"].contains("groups"));
  CHECK(!inv["all"]["hosts"]["n1"].contains("inventory_hostname"));
  CHECK(inv["all"]["children"]["lab"]["hosts"].contains("n2"));
  // Each key under the host's alias, which the inventory gives ssh.
  std::string known = AnsibleKnownHosts(hosts);
  std::string alias = inv["all"]["hosts"]["n1"]["ansible_ssh_extra_args"];
  REQUIRE(alias.rfind("-o HostKeyAlias=pv-", 0) == 0);
  CHECK(known.rfind(alias.substr(16) + " ssh-ed25519 AAAAkeyn1\n", 0) == 0);
  CHECK(known.find(" ssh-ed25519 AAAAkeyn2\n") != std::string::npos);
  // Another pinned key is another alias.
  AnsibleHost other = hosts[0];
  other.host_key = "ssh-ed25519 AAAAother";
  CHECK(AnsibleInventory({other})["all"]["hosts"]["n1"]["ansible_ssh_extra_args"] != alias);
  // Discovery is skipped where the facts tell: Debian's family has python3 at
  // /usr/bin; a configured interpreter is Ansible's to apply.
  CHECK(!inv["all"]["hosts"]["n1"].contains("ansible_python_interpreter"));
  other.vars["ansible_facts"] = {{"os_family", "Debian"}};
  other.vars["ansible_os_family"] = "Debian";
  json debian = AnsibleInventory({other})["all"]["hosts"]["n1"];
  CHECK(debian["ansible_python_interpreter"] == "/usr/bin/python3");
  CHECK(!debian.contains("ansible_facts"));
  CHECK(!debian.contains("ansible_os_family"));
  CHECK(!AnsibleInventory({other}, "/opt/py/bin/python3")["all"]["hosts"]["n1"].contains(
      "ansible_python_interpreter"));
  TempDir work;
  AnsibleRunSettings s;
  s.work_dir = work.path();
  s.key_path = "/k/id_ed25519";
  auto settings = AnsibleSettings(s, "/r/run.1", "/p", 2, true);
  std::string cfg = AnsibleConfig(settings);
  CHECK(cfg.find("StrictHostKeyChecking=yes") != std::string::npos);
  CHECK(cfg.find("UserKnownHostsFile=/r/run.1/known_hosts") != std::string::npos);
  CHECK(cfg.find("GlobalKnownHostsFile=/dev/null") != std::string::npos);
  CHECK(cfg.find("private_key_file = /k/id_ed25519") != std::string::npos);
  CHECK(cfg.find("roles_path = /p/roles") != std::string::npos);
  CHECK(cfg.find("forks = 2") != std::string::npos);
  // One control socket per login user and host key alias ('%' as written:
  // Ansible reads its ini file without interpolation).
  CHECK(cfg.find("ControlPath=" + work.path() + "/cp/%r@%k") != std::string::npos);
  CHECK(cfg.rfind("[defaults]\nstdout_callback = provisiond\n", 0) == 0);
  CHECK(cfg.find("[ssh_connection]\nssh_args = ") != std::string::npos);
  // Each setting is in the environment too, where it wins over any other.
  for (const auto& x : settings) {
    INFO(x.key);
    CHECK(x.env.rfind("ANSIBLE_", 0) == 0);
  }
  CHECK(AnsibleConfig(AnsibleSettings(s, "/r", "/p", 1, false)).find("ControlMaster=no") !=
        std::string::npos);
}

TEST_CASE("ansible: an image-stage host is a root tree for the chroot connection") {
  AnsibleHost image;
  image.name = "lab.baked";
  image.chroot = "/var/lib/provisiond/images/lab.baked/.build-1/root";
  image.vars = {{"provisiond_stage", "image"}};
  json h = AnsibleInventory({image})["all"]["hosts"]["lab.baked"];
  CHECK(h["ansible_connection"] == "community.general.chroot");
  CHECK(h["ansible_host"] == image.chroot);
  // Ansible's temporary files in the tree's /tmp (a tmpfs of the run's).
  CHECK(h["ansible_remote_tmp"] == "/tmp/.ansible-tmp");
  CHECK(h["provisiond_stage"] == "image");
  CHECK(!h.contains("ansible_port"));
  CHECK(!h.contains("ansible_ssh_extra_args"));
}

TEST_CASE("ansible: results per host; a host's failure is its own; secrets redacted") {
  TempDir dir;
  AnsibleSink sink;
  std::vector<AnsibleHost> hosts = {Host("n1", "10.0.0.1", &sink), Host("n2", "10.0.0.2", &sink)};
  AnsibleRunSettings s;
  s.work_dir = dir.path() + "/work";
  s.tool.program = FakeAnsible(dir.path(), R"(PLAY [all]
@@provisiond {"event":"result","host":"n1","task":"a","status":"changed","changed":true,"stdout":"the secret s3cr3t-value"}
@@provisiond {"event":"result","host":"n2","task":"a","status":"failed","msg":"bad"}
@@provisiond {"event":"result","host":"n2","task":"b","status":"failed","msg":"ignored one","ignored":true}
@@provisiond {"event":"result","host":"other","task":"a","status":"ok"}
@@provisiond {"event":"stats","hosts":{"n1":{"ok":1,"changed":1,"failed":0,"unreachable":0},"n2":{"failed":1}}}
)",
                               2);
  auto out = RunAnsiblePlaybook(dir.path() + "/site.yml", hosts, {{"k", "s3cr3t-value"}},
                                {"s3cr3t-value"}, s, nullptr);
  CHECK(std::string(ToString(out["n1"].status)) == "ok");
  CHECK(std::string(ToString(out["n2"].status)) == "failed");
  CHECK(out["n2"].failed_task.find("a (): bad") == 0);
  REQUIRE(sink.results.size() == 3);  // "other" is not a host of this run
  CHECK(sink.results[0] == "n1:a=changed");
  CHECK(sink.results[1] == "n2:a=failed(bad)");
  CHECK(sink.stdouts[0] == "the secret ********");
  // The run's private folder (extra vars with the secret) is gone.
  CHECK(std::filesystem::is_empty(s.work_dir + "/runs"));
  CHECK(((std::filesystem::status(s.work_dir).permissions() & std::filesystem::perms::others_all) ==
         std::filesystem::perms::none));
}

TEST_CASE(
    "ansible: an ansible-playbook that dies mid-way fails the hosts it left without a recap") {
  TempDir dir;
  AnsibleSink sink;
  std::vector<AnsibleHost> hosts = {Host("n1", "10.0.0.1", &sink)};
  AnsibleRunSettings s;
  s.work_dir = dir.path() + "/work";
  s.tool.program = FakeAnsible(
      dir.path(), R"(@@provisiond {"event":"result","host":"n1","task":"a","status":"ok"}
Traceback (most recent call last):
MemoryError
)",
      137);
  auto out = RunAnsiblePlaybook(dir.path() + "/site.yml", hosts, json::object(), {}, s, nullptr);
  CHECK(std::string(ToString(out["n1"].status)) == "failed");
  CHECK(out["n1"].failed_task.find("ansible-playbook exited with code 137") == 0);
  CHECK(out["n1"].failed_task.find("MemoryError") != std::string::npos);
  CHECK(sink.results.size() == 1);
}

TEST_CASE("ansible: a missing ansible-playbook fails every host, saying so") {
  TempDir dir;
  std::vector<AnsibleHost> hosts = {Host("n1", "10.0.0.1", nullptr)};
  AnsibleRunSettings s;
  s.work_dir = dir.path() + "/work";
  s.tool.program = dir.path() + "/no-such-program";
  auto out = RunAnsiblePlaybook(dir.path() + "/site.yml", hosts, json::object(), {}, s, nullptr);
  CHECK(std::string(ToString(out["n1"].status)) == "failed");
  CHECK(out["n1"].failed_task.find("ansible-playbook is not installed") != std::string::npos);
}

}  // namespace
}  // namespace prov
