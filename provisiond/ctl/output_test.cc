#include "output.h"

#include <doctest/doctest.h>
#include <stdlib.h>
#include <time.h>

namespace prov::ctl {

using json = nlohmann::json;

TEST_CASE("tables pad every column but the last to its widest cell") {
  Table t({"A", "LONGER"});
  t.AddRow({"wide cell", "x"});
  t.AddRow({"b", ""});
  CHECK(t.Render() ==
        "A          LONGER\n"
        "wide cell  x\n"
        "b\n");
}

TEST_CASE("times are local ISO 8601 with milliseconds and the offset") {
  setenv("TZ", "UTC", 1);
  tzset();
  CHECK(FormatTime(1795311857041) == "2026-11-22T01:44:17.041+00:00");
  CHECK(FormatTime(0) == "-");
  setenv("TZ", "EST5", 1);
  tzset();
  CHECK(FormatTime(1795311857041) == "2026-11-21T20:44:17.041-05:00");
  setenv("TZ", "UTC", 1);
  tzset();
}

TEST_CASE("ages say how long ago, or never") {
  struct Case {
    int64_t ms;
    const char* text;
  };
  const int64_t now = 1'000'000'000;
  const Case cases[] = {
      {0, "never"},
      {now - 5'000, "5s ago"},
      {now - 119'000, "119s ago"},
      {now - 180'000, "3m ago"},
      {now - 3 * 3600'000, "3h ago"},
      {now - 5 * 86400'000LL, "5d ago"},
      {now + 1'000, "0s ago"},  // a clock ahead of ours
  };
  for (const auto& c : cases) CHECK(FormatAge(c.ms, now) == c.text);
}

TEST_CASE("node table shows a dash for what is unknown and the reason at the end") {
  json nodes = json::parse(R"js([
    {"hostname": "node0", "mac": "52:54:00:00:00:10", "ip": "10.0.0.10", "state": "ready",
     "profile": "v0.2", "image": "debian-amd-npu", "last_seen": 999990000, "reason": ""},
    {"hostname": "", "mac": "52:54:00:00:00:11", "ip": "", "state": "failed",
     "profile": "", "image": "", "last_seen": 0, "reason": "no Arc A770 found"}
  ])js");
  CHECK(RenderNodeTable(nodes, 1'000'000'000) ==
        "HOSTNAME  MAC                IP         STATE   PROFILE  IMAGE           LAST-SEEN\n"
        "node0     52:54:00:00:00:10  10.0.0.10  ready   v0.2     debian-amd-npu  10s ago\n"
        "-         52:54:00:00:00:11  -          failed  -        -               never  no Arc "
        "A770 found\n");
}

TEST_CASE("node facts are flattened to dotted keys") {
  json node = {{"hostname", "node0"},
               {"state", "ready"},
               {"facts", json::parse(R"js({"cpu": {"model": "Ryzen", "cores": 16},
                                        "gpus": [{"pci": "8086:56a0"}],
                                        "nics": ["eth0", "eth1"]})js")}};
  std::string out = RenderNode(node, json::array(), 0);
  CHECK(out.find("  cpu.cores:   16\n") != std::string::npos);
  CHECK(out.find("  cpu.model:   Ryzen\n") != std::string::npos);
  CHECK(out.find("  gpus[0].pci: 8086:56a0\n") != std::string::npos);
  CHECK(out.find("  nics:        eth0, eth1\n") != std::string::npos);
  CHECK(out.find("events: none\n") != std::string::npos);
}

TEST_CASE("event lines: time, node, kind, detail and who") {
  setenv("TZ", "UTC", 1);
  tzset();
  json e = {{"id", 3},         {"time", 1795311857041}, {"node", "node0"},
            {"kind", "state"}, {"detail", "a -> b"},    {"who", "admin"}};
  CHECK(RenderEvent(e) ==
        "2026-11-22T01:44:17.041+00:00  node0       state            a -> b "
        "(admin)\n");
  e["node"] = "";
  e["who"] = "";
  CHECK(RenderEvent(e) == "2026-11-22T01:44:17.041+00:00  -           state            a -> b\n");
}

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

TEST_CASE("node why: header, one line per stage, errors, command line, summary last") {
  json why = json::parse(R"js({
    "node": "node0", "mac": "52:54:00:aa:00:00", "state": "booting", "image": "lab@abcd",
    "steps": [
      {"stage": "dhcp", "time": 1000, "after_ms": 0, "detail": "10.99.0.100"},
      {"stage": "ipxe-binary", "time": 1400, "after_ms": 400, "detail": "undionly.kpxe"},
      {"stage": "script", "time": 3100, "after_ms": 2100, "detail": "from 10.99.0.100"},
      {"stage": "kernel", "time": 75000, "after_ms": 74000, "detail": ""}],
    "errors": ["initrd: short read"],
    "last_stage": "kernel", "next_stage": "initrd",
    "summary": "node0 stopped after 'kernel': provisiond waits for iPXE to download the initrd",
    "kernel_cmdline": "initrd=initrd.img provision.token=***"})js");
  CHECK(RenderWhy(why) ==
        "node0 (52:54:00:aa:00:00) booting, image lab@abcd\n"
        "   +0.0s  dhcp         10.99.0.100\n"
        "   +0.4s  ipxe-binary  undionly.kpxe\n"
        "   +2.1s  script       from 10.99.0.100\n"
        "  +1m14s  kernel\n"
        "error: initrd: short read\n"
        "kernel command line: initrd=initrd.img provision.token=***\n"
        "node0 stopped after 'kernel': provisiond waits for iPXE to download the initrd\n");
  json never = {{"node", "node1"},
                {"mac", "52:54:00:aa:00:01"},
                {"state", "enrolled"},
                {"steps", json::array()},
                {"summary", "node1 has not asked to boot yet"}};
  CHECK(RenderWhy(never) ==
        "node1 (52:54:00:aa:00:01) enrolled, no image assigned\n"
        "node1 has not asked to boot yet\n");
}

TEST_CASE("preflight: ok or FAIL, name, detail; then what failed") {
  json reply = json::parse(R"js({"ok": false, "checks": [
    {"name": "interface", "ok": true, "fatal": false, "detail": "br0 has 10.99.0.1/24"},
    {"name": "dhcp range", "ok": false, "fatal": false, "detail": "10.99.0.2-10.99.0.3: too small"},
    {"name": "dnsmasq", "ok": false, "fatal": true, "detail": "/usr/sbin/dnsmasq is missing"}]})js");
  CHECK(RenderPreflight(reply) ==
        "ok    interface   br0 has 10.99.0.1/24\n"
        "FAIL  dhcp range  10.99.0.2-10.99.0.3: too small\n"
        "FAIL  dnsmasq     /usr/sbin/dnsmasq is missing\n"
        "2 of 3 checks failed; provisiond would not start with dnsmasq failing\n");
  reply["checks"].erase(1);
  reply["checks"].erase(1);
  reply["ok"] = true;
  CHECK(RenderPreflight(reply) ==
        "ok    interface  br0 has 10.99.0.1/24\n"
        "all 1 checks passed\n");
}

TEST_CASE("image table: sizes for people, root as yes or no") {
  setenv("TZ", "UTC", 1);
  tzset();
  json reply = json::parse(R"js({"images": [
    {"name": "lab", "version": "0123456789abcdef", "ref": "lab@0123456789abcdef",
     "kernel_size": 8388608, "initrd_size": 52428800, "root": false, "created": 1795311857041}]})js");
  CHECK(
      RenderImageTable(reply) ==
      "NAME  VERSION           CURRENT  KERNEL   INITRD    ROOT  CREATED\n"
      "lab   0123456789abcdef  -        8.0 MiB  50.0 MiB  no    2026-11-22T01:44:17.041+00:00\n");
  reply["images"][0]["current"] = true;
  CHECK(RenderImageTable(reply).find("\nlab   0123456789abcdef  yes      8.0 MiB") !=
        std::string::npos);
  CHECK(RenderImageTable(json::object()).find("no images (build one:") == 0);
}

TEST_CASE("image show: ref, current, sizes, root, then how it was built") {
  setenv("TZ", "UTC", 1);
  tzset();
  json image = json::parse(R"js({"name": "lab", "version": "0123456789abcdef",
    "ref": "lab@0123456789abcdef", "kernel_size": 8388608, "initrd_size": 52428800,
    "root": true, "created": 1795311857041, "building": false,
    "build": {"sha256": "0123456789abcdef0000", "manifest_sha256": "fedcba98",
              "suite": "bookworm", "mirror": "http://deb.debian.org/debian",
              "packages": ["openssh-server", "curl"], "kernel": "vmlinuz-6.1.0-18-amd64",
              "files": 23456, "bytes": 432013312, "build_seconds": 185.4,
              "created": 1795311857041}})js");
  CHECK(RenderImage(image, image) ==
        "image:   lab@0123456789abcdef\n"
        "current: yes (lab stands for this version)\n"
        "kernel:  8.0 MiB (vmlinuz-6.1.0-18-amd64)\n"
        "initrd:  50.0 MiB\n"
        "root:    yes (served over NFS)\n"
        "sha256:  0123456789abcdef0000\n"
        "created: 2026-11-22T01:44:17.041+00:00\n"
        "build:\n"
        "  suite:           bookworm\n"
        "  mirror:          http://deb.debian.org/debian\n"
        "  packages:        2: openssh-server, curl\n"
        "  root tree:       23456 files, 412.0 MiB\n"
        "  build time:      3m05s\n"
        "  manifest sha256: fedcba98\n");

  // Another version is current, and a build runs.
  json other = {{"name", "lab"}, {"version", "ffff"}, {"ref", "lab@ffff"}};
  image["building"] = true;
  const std::string text = RenderImage(image, other);
  CHECK(text.find("\ncurrent:  no (lab stands for lab@ffff)\n") != std::string::npos);
  CHECK(text.find("\nbuilding: a build of lab runs now") != std::string::npos);
  // The name stands for no version (its current one was removed).
  CHECK(RenderImage(image, json()).find("\ncurrent:  no\n") != std::string::npos);
  // The API's own "current" wins.
  image["current"] = true;
  CHECK(RenderImage(image, other).find("\ncurrent:  yes") != std::string::npos);
}

TEST_CASE("image show says an imported image was imported, and from where") {
  json image = json::parse(R"js({"name": "npu", "version": "aa", "ref": "npu@aa",
    "kernel_size": 10, "initrd_size": 20, "root": false,
    "build": {"sha256": "aa11", "source": {"kernel": "/k", "initrd": "/i"}}})js");
  const std::string text = RenderImage(image, image);
  CHECK(text.find("\nroot:    no (a kernel and an initrd only)\n") != std::string::npos);
  CHECK(text.find("\nkernel:  10 B\n") != std::string::npos);
  CHECK(text.find("\nbuild: none (imported from /k and /i)\n") == text.size() - 39);
  image.erase("build");
  CHECK(RenderImage(image, json()).find("build: none (imported)\n") != std::string::npos);
}

TEST_CASE("image verify: a line per check, the root arguments, the verdict") {
  json reply = json::parse(R"js({"image": "lab@01", "kernel": true, "initrd": true,
    "root": true, "nfs": "os-release read back over NFS",
    "root_args": "root=/dev/nfs nfsroot=10.0.0.1:/lab@01", "ok": true})js");
  CHECK(RenderImageVerify(reply) ==
        "ok    kernel  present\n"
        "ok    initrd  present\n"
        "ok    root    a root tree to serve\n"
        "ok    nfs     os-release read back over NFS\n"
        "kernel root arguments: root=/dev/nfs nfsroot=10.0.0.1:/lab@01\n"
        "lab@01 can be served\n");
  CHECK(ImageVerified(reply));

  reply["ok"] = false;
  reply["nfs"] = "mount failed:\nno such export";
  CHECK(RenderImageVerify(reply).find("FAIL  nfs     mount failed:\n"
                                      "              no such export\n") != std::string::npos);
  CHECK(RenderImageVerify(reply).find("lab@01 failed verification\n") != std::string::npos);
  CHECK_FALSE(ImageVerified(reply));

  // No root: root and nfs do not apply, and the image is fine.
  json bare = {{"image", "npu@02"},          {"kernel", true}, {"initrd", true}, {"root", false},
               {"nfs", "no root to export"}, {"ok", true}};
  CHECK(RenderImageVerify(bare) ==
        "ok    kernel  present\n"
        "ok    initrd  present\n"
        "-     root    none (a kernel and an initrd)\n"
        "-     nfs     no root to export\n"
        "npu@02 can be served\n");
  // A missing kernel fails, whatever "ok" says.
  reply = bare;
  reply["kernel"] = false;
  CHECK(RenderImageVerify(reply).find("FAIL  kernel  missing or empty\n") == 0);
  CHECK_FALSE(ImageVerified(reply));
}

TEST_CASE("image build events: the image, the text, progress lines with the time") {
  auto e = ParseImageBuildEvent(
      {{"kind", "image-build"}, {"time", 5}, {"detail", "lab: mmdebstrap: I: extracting"}});
  REQUIRE(e);
  CHECK(e->kind == "image-build");
  CHECK(e->image == "lab");
  CHECK(e->text == "mmdebstrap: I: extracting");
  CHECK(e->time_ms == 5);
  CHECK_FALSE(ParseImageBuildEvent({{"kind", "image"}, {"detail", "lab: imported lab@1"}}));
  CHECK_FALSE(ParseImageBuildEvent(json::object()));
  e = ParseImageBuildEvent({{"kind", "image-build-failed"}, {"detail", "lab"}});
  REQUIRE(e);
  CHECK(e->image == "lab");
  CHECK(e->text == "");

  CHECK(RenderBuildProgress("mmdebstrap: I: downloading", 12'345) ==
        "[ 12.3s] mmdebstrap: I: downloading\n");
  CHECK(RenderBuildProgress("built", 185'400) == "[185.4s] built\n");
  CHECK(RenderBuildProgress("a\nb\n", -5) ==
        "[  0.0s] a\n"
        "         b\n");
  CHECK(FormatDuration(12'345) == "12.3s");
  CHECK(FormatDuration(185'400) == "3m05s");
}

TEST_CASE("sizes, offsets and power specs") {
  CHECK(FormatSize(0) == "0 B");
  CHECK(FormatSize(1023) == "1023 B");
  CHECK(FormatSize(1536) == "1.5 KiB");
  CHECK(FormatSize(int64_t{3} << 30) == "3.0 GiB");
  CHECK(FormatOffset(0) == "+0.0s");
  CHECK(FormatOffset(2149) == "+2.1s");
  CHECK(FormatOffset(59'940) == "+59.9s");
  CHECK(FormatOffset(59'960) == "+1m00s");
  CHECK(FormatOffset(3'599'000) == "+59m59s");
  CHECK(FormatOffset(3'725'000) == "+1h02m");
  CHECK(FormatPowerSpec(json::object()) == "");
  CHECK(FormatPowerSpec(json()) == "");
  CHECK(FormatPowerSpec({{"driver", "wol"}}) == "wol");
  CHECK(FormatPowerSpec({{"driver", "ipmi"}, {"address", "10.0.0.5"}}) == "ipmi,address=10.0.0.5");
  json node = {{"hostname", "node0"}, {"power", {{"driver", "command"}}}};
  CHECK(RenderNode(node, json::array(), 0).find("\npower:     command\n") != std::string::npos);
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

TEST_CASE("renderers take missing fields as unknown rather than failing") {
  CHECK_NOTHROW(RenderStatus(json::object(), "http://x"));
  CHECK_NOTHROW(RenderNodeTable(json::array({json::object()}), 0));
  CHECK_NOTHROW(RenderNode(json::object(), json::array({json::object()}), 0));
  CHECK_NOTHROW(RenderProfile(json::object()));
  CHECK_NOTHROW(RenderPlan(json::object()));
  CHECK_NOTHROW(RenderApplied(json::object()));
  CHECK_NOTHROW(RenderProfileTable(json::array()));
  CHECK_NOTHROW(RenderWhy(json::object()));
  CHECK_NOTHROW(RenderWhy(json::parse(R"js({"steps": [{}], "errors": [1]})js")));
  CHECK_NOTHROW(RenderPreflight(json::object()));
  CHECK_NOTHROW(RenderPreflight(json::parse(R"js({"checks": [{}]})js")));
  CHECK_NOTHROW(RenderImageTable(json::parse(R"js({"images": [{}]})js")));
  CHECK_NOTHROW(RenderImage(json::object(), json()));
  CHECK_NOTHROW(RenderImage(json::array(), json::array()));
  CHECK_NOTHROW(RenderImage(json::parse(R"js({"build": {"suite": 1, "packages": [{}],
      "build_seconds": "x"}})js"),
                            json::object()));
  CHECK_NOTHROW(RenderImageVerify(json::object()));
  CHECK_NOTHROW(ParseImageBuildEvent(json::array()));
}

}  // namespace prov::ctl
