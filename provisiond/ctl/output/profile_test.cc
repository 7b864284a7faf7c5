#include "profile.h"

#include <doctest/doctest.h>

namespace prov::ctl {

using json = nlohmann::json;

const char* kPlan = R"js({
  "version": "v0.2", "sha256": "3a5095c593af51f33958ef31646dbe55ae7f771c361eda953fa9f6b6bf7cbad8",
  "current_version": "v0.1",
  "current_sha256": "2fb71a726936ad5e5e2c6b275191a6e41d6adbfe65abcf32fa2c3a713c124382",
  "changes": true,
  "nodes": [
    {"node": "node0", "action": "assign", "reboot": true, "to_image": "b",
     "reasons": ["profile v0.1 -> v0.2", "image a -> b: reboot", "then 2 playbook(s)"]
},
    {"node": "node10", "action": "release", "reasons": ["not covered by v0.2: leaves profile v0.1"]},
    {"node": "node3", "action": "missing", "reasons": ["covered by v0.2 but not enrolled"]}
  ]
})js";

TEST_CASE("a plan shows the applied version against this one, then a line per node") {
  CHECK(RenderPlan(json::parse(kPlan)) ==
        "applied now: v0.1 (sha256 2fb71a726936); this plan: v0.2 (sha256 3a5095c593af)\n"
        "node0   assign   profile v0.1 -> v0.2; image a -> b: reboot; then 2 playbook(s)\n"
        "node10  release  not covered by v0.2: leaves profile v0.1\n"
        "node3   missing  covered by v0.2 but not enrolled\n"
        "1 to assign, 1 to release, 1 missing\n");
}

TEST_CASE("a plan names each file that changed against the applied snapshot") {
  json plan = json::parse(kPlan);
  plan["current_version"] = "v0.2";
  plan["files_against"] = plan["current_sha256"];
  plan["files"] =
      json::array({{{"path", "playbooks/templates/slurm.conf.j2"}, {"change", "changed"}},
                   {{"path", "playbooks/extra.yml"}, {"change", "added"}}});
  plan["nodes"] = json::array();
  CHECK(RenderPlan(plan) ==
        "applied now: v0.2 (sha256 2fb71a726936); it has changed since: v0.2 (sha256 "
        "3a5095c593af)\n"
        "files against the applied snapshot 2fb71a726936:\n"
        "  changed  playbooks/templates/slurm.conf.j2\n"
        "  added    playbooks/extra.yml\n"
        "no node is covered by v0.2; applying it records it only\n");
}

TEST_CASE("a plan without changes says so and nothing else") {
  json plan = json::parse(kPlan);
  plan["changes"] = false;
  CHECK(RenderPlan(plan) == "profile v0.2 is applied and up to date: nothing changes\n");
  CHECK(RenderApplied(plan) == "profile v0.2 is applied and up to date: nothing changes\n");
  plan["configure"] = {
      {"started", json::array()},
      {"not_started",
       {{{"node", "node0"}, {"why", "node0 is ready with profile v0.2 already"}},
        {{"node", "node10"}, {"why", "node10 is booting: it is configured when it phones home"}}}}};
  CHECK(RenderApplied(plan) ==
        "profile v0.2 is applied and up to date: nothing changes\n"
        "  node0   configure: already done\n"
        "  node10  configure: not now (node10 is booting: it is configured when it phones home)\n");
}

TEST_CASE("an applied plan says which nodes need a reboot and which are configured now") {
  json plan = json::parse(kPlan);
  plan["nodes"].push_back(
      {{"node", "node1"}, {"action", "assign"}, {"reboot", true}, {"to_image", "b"}});
  plan["nodes"].push_back({{"node", "node2"}, {"action", "assign"}, {"reboot", false}});
  plan["configure"] = {{"started", {"node2"}},
                       {"not_started", {{{"node", "node0"}, {"why", "node0 is enrolled"}}}}};
  CHECK(RenderApplied(plan) ==
        "node0   assign: done   boot: needs a reboot into b (provisionctl node power cycle node0)"
        "   configure: when it phones home\n"
        "node10  release: done\n"
        "node3   missing: not enrolled\n"
        "node1   assign: done   boot: needs a reboot into b (provisionctl node power cycle node1)"
        "   configure: when it phones home\n"
        "node2   assign: done   boot: no change   configure: started\n"
        "applied v0.2 (sha256 3a5095c593af): 3 assigned, 1 released, 1 missing\n"
        "next: 2 node(s) boot the new image when restarted: provisionctl node power cycle "
        "'node[0-1]'\n"
        "note: provisiond records the assignment and serves the new image at each node's next "
        "boot; it does not restart nodes by itself. Nodes that are up are configured now (their "
        "playbooks, then health checks), the others when they phone home\n");
}

TEST_CASE("profile table marks an applied profile that changed since") {
  json reply = json::parse(R"js({"profiles": [
      {"version": "v0.1", "applied": true, "applied_sha256_matches": false,
       "sha256": "2fb71a726936ad5e", "image": "ubuntu-arc", "nodes": "node[0-1]",
       "description": "Arc"}],
    "errors": ["p.yaml:1:1: first\np.yaml:2:1: second"]})js");
  CHECK(RenderProfileTable(reply) ==
        "VERSION  APPLIED  SHA256        IMAGE       NODES      DESCRIPTION\n"
        "v0.1     yes*     2fb71a726936  ubuntu-arc  node[0-1]  Arc\n"
        "* changed since it was applied: 'provisionctl profile plan <version>' shows what "
        "applying it again does\n"
        "not loaded: p.yaml:1:1: first\n"
        "            p.yaml:2:1: second\n");
}

TEST_CASE("profile renderers take missing fields as unknown rather than failing") {
  CHECK_NOTHROW(RenderProfile(json::object()));
  CHECK_NOTHROW(RenderPlan(json::object()));
  CHECK_NOTHROW(RenderApplied(json::object()));
  CHECK_NOTHROW(RenderProfileTable(json::array()));
}

}  // namespace prov::ctl
