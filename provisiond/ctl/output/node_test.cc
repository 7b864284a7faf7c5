#include "node.h"

#include <doctest/doctest.h>
#include <stdlib.h>
#include <time.h>

#include "format.h"

namespace prov::ctl {

using json = nlohmann::json;

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

TEST_CASE("node show: disks as a table, the storage outcome, a wipe allowed") {
  json node = {{"hostname", "n1"},
               {"storage_wipe", {"/dev/disk/by-id/virtio-data-1"}},
               {"facts",
                {{"kernel", "6.1"},
                 {"disks",
                  {{{"name", "vdb"},
                    {"by_id", "/dev/disk/by-id/virtio-scratch-1"},
                    {"transport", "virtio"},
                    {"size_bytes", 1073741824},
                    {"content", "md"}},
                   {{"name", "sda"}, {"transport", "sata"}, {"content", "gpt"}, {"system", true}}}},
                 {"storage",
                  {{"state", "failed"},
                   {"volumes",
                    {{{"name", "scratch"},
                      {"state", "mounted"},
                      {"mount", "/mnt/scratch"},
                      {"device", "/dev/md/scratch"},
                      {"uuid", "u-1"}},
                     {{"name", "data"},
                      {"state", "failed"},
                      {"reason", "volume data: disk X holds gpt"}}}}}}}}};
  std::string out = RenderNode(node, json::array(), 0);
  CHECK(out.find("disks:\n  DISK  BY-ID             TRANSPORT  SIZE     MODEL  HOLDS\n"
                 "  vdb   virtio-scratch-1  virtio     1.0 GiB  -      md\n"
                 "  sda   -                 sata       0 B      -      gpt (the system)\n") !=
        std::string::npos);
  CHECK(out.find("storage: failed\n  scratch: mounted at /mnt/scratch on /dev/md/scratch (UUID "
                 "u-1)\n  data: failed; volume data: disk X holds gpt\n") != std::string::npos);
  CHECK(out.find("storage wipe allowed at its next boot: /dev/disk/by-id/virtio-data-1") !=
        std::string::npos);
  CHECK(out.find("kernel:") != std::string::npos);
  CHECK(out.find("disks[0]") == std::string::npos);  // not flattened as well
  node["installed"] = true;
  CHECK(RenderNode(node, json::array(), 0).find("image:") != std::string::npos);
  CHECK(RenderNode(node, json::array(), 0).find("none: it boots its own OS (adopted)") !=
        std::string::npos);
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
  // A failed node: its reason, and the power actions that led there.
  json failed = {{"node", "node2"},
                 {"state", "failed"},
                 {"steps", json::array()},
                 {"reason", "no answer over SSH for 121 s after 3 power cycle(s)"},
                 {"power",
                  {{{"time", 0},
                    {"detail", "cycle (recovery: try 3 of 3 in 3600 s): webhook: switched off"},
                    {"who", "heartbeat"}}}}};
  const std::string why_failed = RenderWhy(failed);
  CHECK(why_failed.find("\nreason: no answer over SSH for 121 s after 3 power cycle(s)\n") !=
        std::string::npos);
  CHECK(why_failed.find("cycle (recovery: try 3 of 3 in 3600 s): webhook: switched off "
                        "(heartbeat)\n") != std::string::npos);
  CHECK(why_failed.find("power: ") != std::string::npos);
}

TEST_CASE("node why quotes the console of a node that is not ready") {
  const int64_t t = 1764050000123;
  const std::string hms = FormatTime(t).substr(11, 12);
  json why = {{"node", "n0"},
              {"state", "booting"},
              {"steps", json::array()},
              {"summary", "n0 stopped after 'initrd'"},
              {"console",
               {{{"id", 9},
                 {"boot", 2},
                 {"time", t},
                 {"source", "initrd"},
                 {"text", "provision: mount-nfs: retrying in 5s"}}}},
              {"console_error",
               {{"id", 7},
                {"boot", 2},
                {"time", t},
                {"source", "initrd"},
                {"text", "provision: ERROR mount-nfs (try 1/3): access denied"}}}};
  CHECK(RenderWhy(why) ==
        "n0 booting, no image assigned\n"
        "its console, boot 2, last lines:\n"
        "  " +
            hms +
            "  initrd      provision: ERROR mount-nfs (try 1/3): access denied"
            "  <- the failing line\n"
            "  ...\n"
            "  " +
            hms +
            "  initrd      provision: mount-nfs: retrying in 5s\n"
            "n0 stopped after 'initrd'\n");
  why["state"] = "ready";
  CHECK(RenderWhy(why).find("its console") == std::string::npos);
  CHECK(RenderConsoleLine(json::object()).find("  ") != std::string::npos);
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

TEST_CASE("node renderers take missing fields as unknown rather than failing") {
  CHECK_NOTHROW(RenderNodeTable(json::array({json::object()}), 0));
  CHECK_NOTHROW(RenderNode(json::object(), json::array({json::object()}), 0));
  CHECK_NOTHROW(RenderWhy(json::object()));
  CHECK_NOTHROW(RenderWhy(json::parse(R"js({"steps": [{}], "errors": [1]})js")));
}

}  // namespace prov::ctl
