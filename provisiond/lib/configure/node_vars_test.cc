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
