#include "store/timeline.h"

#include <doctest/doctest.h>

namespace prov {
namespace {

std::vector<EventRecord> Events(std::vector<std::pair<std::string, std::string>> kinds_details) {
  std::vector<EventRecord> out;
  int64_t t = 1000;
  for (auto& [kind, detail] : kinds_details) {
    out.push_back({0, t += 100, 1, "n0", kind, detail, "boot"});
    // As the boot path writes them: the stage in its own field too.
    if (kind == "boot") out.back().stage = ParseBootStage(detail.substr(0, detail.find(':')));
  }
  return out;
}

std::string Name(const std::optional<BootStage>& stage) {
  return stage ? std::string(ToString(*stage)) : "";
}

}  // namespace

TEST_CASE("node why: the stage where a boot stopped") {
  NodeRecord n;
  n.hostname = "n0";
  n.state = NodeState::kBooting;
  struct Case {
    const char* name;
    std::vector<std::pair<std::string, std::string>> events;
    std::string last, next;
    size_t steps;
  };
  const Case cases[] = {
      {"never started", {}, "", "dhcp", 0},
      {"stuck after DHCP", {{"boot", "dhcp: 10.99.0.100"}}, "dhcp", "ipxe-binary", 1},
      {"UEFI path to the kernel",
       {{"boot", "dhcp: 10.99.0.100"},
        {"boot", "ipxe-binary: ipxe.efi"},
        {"boot", "dhcp: 10.99.0.100"},
        {"boot", "script: from 10.99.0.100"},
        {"boot", "kernel: lab@1"}},
       "kernel",
       "initrd",
       5},
      {"iPXE ROM path",
       {{"boot", "dhcp: 10.99.0.100"},
        {"boot", "script: from x"},
        {"boot", "kernel: lab@1"},
        {"boot", "initrd: lab@1"}},
       "initrd",
       "network",
       4},
      {"a second attempt replaces the first",
       {{"boot", "dhcp: a"}, {"boot", "script: a"}, {"boot", "kernel: a"}, {"boot", "dhcp: b"}},
       "dhcp",
       "ipxe-binary",
       1},
      {"signed chain to the config",
       {{"boot", "dhcp: 10.99.0.100"},
        {"boot", "shim: shimx64.efi"},
        {"boot", "grub: grubx64.efi"},
        {"boot", "grub-config: 52:54:00:00:00:01.cfg"}},
       "grub-config",
       "kernel",
       4},
      {"shim refused grub",
       {{"boot", "dhcp: a"}, {"boot", "shim: shimx64.efi"}},
       "shim",
       "grub",
       2},
      {"signed chain's initrd asks DHCP: the network stage follows",
       {{"boot", "dhcp: a"},
        {"boot", "shim: s"},
        {"boot", "grub: g"},
        {"boot", "grub-config: c"},
        {"boot", "kernel: k"},
        {"boot", "initrd: i"}},
       "initrd",
       "network",
       6},
      {"repeated script requests count once",
       {{"boot", "dhcp: a"}, {"boot", "script: a"}, {"boot", "script: a"}},
       "script",
       "kernel",
       2},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    auto t = ComputeBootTimeline(n, Events(c.events));
    CHECK(Name(t.last_stage) == c.last);
    CHECK(Name(t.next_stage) == c.next);
    CHECK(t.steps.size() == c.steps);
  }
}

TEST_CASE("node why: errors and states are explained") {
  NodeRecord n;
  n.hostname = "n0";
  n.state = NodeState::kBooting;
  auto t =
      ComputeBootTimeline(n, Events({{"boot", "dhcp: a"},
                                     {"boot", "script: a"},
                                     {"boot-error", "script: image 'lab' has not been built"}}));
  CHECK(t.summary ==
        "n0 stopped after 'script': provisiond waits for iPXE to download the kernel; last error: "
        "script: image 'lab' has not been built");
  t = ComputeBootTimeline(n, Events({{"boot", "dhcp: a"},
                                     {"boot", "script: a"},
                                     {"boot", "kernel: a"},
                                     {"boot", "initrd: a"},
                                     {"boot", "overlay: 7 files"},
                                     {"refused", "phone-home from 10.99.0.5 with a wrong token"}}));
  CHECK(t.last_stage == BootStage::kOverlay);
  CHECK(t.summary ==
        "n0 stopped after 'overlay': provisiond waits for the booted system to phone home; last "
        "error: phone-home from 10.99.0.5 with a wrong token");
  n.state = NodeState::kDiscovered;
  n.hostname = "";
  n.mac = "52:54:00:00:00:01";
  CHECK(ComputeBootTimeline(n, {}).summary.find("is not enrolled") != std::string::npos);
}

}  // namespace prov
