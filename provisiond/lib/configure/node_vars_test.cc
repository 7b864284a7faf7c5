#include "configure/node_vars.h"

#include <doctest/doctest.h>

namespace prov {
namespace {

NodeRecord Node(int64_t id, const std::string& name, const std::string& facts) {
  NodeRecord n;
  n.id = id;
  n.hostname = name;
  n.mac = "52:54:00:00:00:0" + std::to_string(id);
  n.ip = "10.99.0." + std::to_string(10 + id);
  n.profile_version = "lab";
  n.facts = facts;
  return n;
}

}  // namespace

TEST_CASE("node vars: the inventory a node's playbooks see") {
  NodeVarsBuilder vars("ssh-ed25519 AAAA control");
  std::vector<NodeRecord> group = {Node(1, "n1", R"({"cpu": {"threads": 8}})"),
                                   Node(2, "n2", R"({"cpu": {"threads": 16}})")};
  auto v = vars.For(group[0], group);
  CHECK(v["inventory_hostname"] == "n1");
  CHECK(v["ansible_host"] == "10.99.0.11");
  CHECK(v["groups"]["all"] == nlohmann::json::array({"n1", "n2"}));
  CHECK(v["groups"]["lab"] == v["groups"]["all"]);
  CHECK(v["hostvars"]["n2"]["provisiond_facts"]["cpu"]["threads"] == 16);
  CHECK(v["hostvars"]["n2"]["ansible_host"] == "10.99.0.12");
  CHECK(v["provisiond_facts"]["cpu"]["threads"] == 8);
  CHECK(v["provisiond_control_key"] == "ssh-ed25519 AAAA control");
}

TEST_CASE("node vars: a node outside its group is added; bad facts read as none") {
  NodeVarsBuilder vars("key");
  NodeRecord lone = Node(3, "n3.cluster.lan", "not json");
  auto v = vars.For(lone, {});
  CHECK(v["groups"]["all"] == nlohmann::json::array({"n3.cluster.lan"}));
  CHECK(v["inventory_hostname_short"] == "n3");
  CHECK(v["provisiond_facts"] == nlohmann::json::object());
  CHECK(vars.For(Node(4, "n4", "[1, 2]"), {})["provisiond_facts"] == nlohmann::json::object());
}

TEST_CASE("node vars: N nodes of a group parse N facts, not N squared; a change is seen") {
  NodeVarsBuilder vars("key");
  std::vector<NodeRecord> group;
  for (int i = 1; i <= 50; ++i)
    group.push_back(
        Node(i, "n" + std::to_string(i), R"({"memory_mib": )" + std::to_string(i) + "}"));
  for (const auto& n : group) vars.For(n, group);
  CHECK(vars.parses() == 50);
  // A node booted again with other facts: parsed once more, and seen.
  group[4].facts = R"({"memory_mib": 4096})";
  auto v = vars.For(group[0], group);
  CHECK(vars.parses() == 51);
  CHECK(v["hostvars"]["n5"]["provisiond_facts"]["memory_mib"] == 4096);
}

}  // namespace prov

namespace prov {

TEST_CASE("node vars: setup's facts from what the node reported") {
  NodeVarsBuilder vars("key");
  NodeRecord n = Node(1, "gpu0.cluster.lan", R"J({
      "os": "Debian GNU/Linux 12 (bookworm)",
      "os_release": {"id": "debian", "version_id": "12", "version_codename": "bookworm"},
      "arch": "x86_64", "kernel": "6.1.0-26-amd64", "memory_bytes": 68719476736,
      "cpu": {"threads": 32, "cores": 16, "sockets": 1},
      "firmware": {"uefi": true},
      "nics": [{"name": "enp1s0", "mac": "52:54:00:00:00:01"}]})J");
  auto v = vars.For(n, {n});
  CHECK(v["ansible_distribution"] == "Debian");
  CHECK(v["ansible_os_family"] == "Debian");
  CHECK(v["ansible_distribution_version"] == "12");
  CHECK(v["ansible_distribution_major_version"] == "12");
  CHECK(v["ansible_distribution_release"] == "bookworm");
  CHECK(v["ansible_architecture"] == "x86_64");
  CHECK(v["ansible_hostname"] == "gpu0");
  CHECK(v["ansible_fqdn"] == "gpu0.cluster.lan");
  CHECK(v["ansible_memtotal_mb"] == 65536);
  CHECK(v["ansible_processor_vcpus"] == 32);
  CHECK(v["ansible_processor_cores"] == 16);
  CHECK(v["ansible_pkg_mgr"] == "apt");
  CHECK(v["ansible_default_ipv4"]["address"] == "10.99.0.11");
  CHECK(v["ansible_default_ipv4"]["interface"] == "enp1s0");
  CHECK(v["ansible_facts"]["os_family"] == "Debian");
  CHECK(v["hostvars"]["gpu0.cluster.lan"]["ansible_default_ipv4"]["address"] == "10.99.0.11");

  // Derivatives by ID_LIKE; older agents' pretty name alone.
  n.facts = R"({"os_release": {"id": "pika", "id_like": "ubuntu debian", "version_id": "24.04"}})";
  auto f = AnsibleFacts(n, nlohmann::json::parse(n.facts));
  CHECK(f["os_family"] == "Debian");
  CHECK(f["distribution_major_version"] == "24");
  f = AnsibleFacts(n, {{"os", "Rocky Linux 9.4 (Blue Onyx)"}});
  CHECK(f["distribution"] == "Rocky");
  CHECK(f["os_family"] == "RedHat");
  CHECK(f["distribution_version"] == "9.4");
  CHECK(f["distribution_release"] == "Blue Onyx");
  // Nothing reported: nothing made up.
  f = AnsibleFacts(n, nlohmann::json::object());
  CHECK_FALSE(f.contains("distribution"));
  CHECK_FALSE(f.contains("memtotal_mb"));
  CHECK(f["hostname"] == "gpu0");
}

}  // namespace prov
