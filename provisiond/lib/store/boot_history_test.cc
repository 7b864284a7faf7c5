#include "store/boot_history.h"

#include <doctest/doctest.h>

#include <string>
#include <utility>

namespace prov {
namespace {

// {time in seconds, kind, detail}
std::vector<EventRecord> BootEvents(std::vector<std::tuple<int64_t, std::string, std::string>> in) {
  std::vector<EventRecord> out;
  int64_t id = 0;
  for (auto& [t, kind, detail] : in) {
    out.push_back({++id, t * 1000, 1, "n0", kind, detail, "boot"});
    if (kind == "boot") out.back().stage = ParseBootStage(detail.substr(0, detail.find(':')));
  }
  return out;
}

std::string Stages(const BootTimeline& t) {
  std::string s;
  for (const auto& step : t.steps) s += (s.empty() ? "" : " ") + std::string(ToString(step.stage));
  return s;
}

}  // namespace

TEST_CASE("history: boots: the latest attempts, newest first") {
  NodeRecord n;
  n.hostname = "n0";
  n.state = NodeState::kReady;
  auto events = BootEvents({
      {10, "enrolled", "mac 52:54:00:00:00:01"},
      {100, "boot", "dhcp: 10.0.0.5"},
      {101, "boot", "ipxe-binary: undionly.kpxe"},
      {103, "boot", "dhcp: 10.0.0.5"},  // iPXE's own DHCP: the same attempt
      {104, "boot", "script: from 10.0.0.5"},
      {110, "boot", "kernel: lab@1"},
      {120, "boot", "initrd: lab@1"},
      {125, "boot", "network: 10.0.0.5"},
      {130, "boot", "overlay: lab@1"},
      {140, "boot", "hello: facts"},
      {150, "state", "booted -> ready: configured"},
      {500, "boot", "dhcp: 10.0.0.5"},  // an attempt that stopped at its kernel
      {502, "boot", "ipxe-binary: undionly.kpxe"},
      {504, "boot", "script: from 10.0.0.5"},
      {505, "boot", "kernel: lab@1"},
      {506, "boot-error", "initrd: connection reset by peer"},
      {900, "boot", "dhcp: 10.0.0.5"},  // the latest, signed chain, slower kernel
      {901, "boot", "shim: shimx64.efi"},
      {902, "boot", "grub: grubx64.efi"},
      {903, "boot", "grub-config: 52:54:00:00:00:01.cfg"},
      {930, "boot", "kernel: lab@2"},
      {940, "boot", "initrd: lab@2"},
      {950, "boot", "network: 10.0.0.5"},
      {955, "boot", "overlay: lab@2"},
      {960, "boot", "hello: facts"},
  });
  auto boots = RecentBoots(n, events, 5);
  REQUIRE(boots.size() == 3);
  CHECK(Stages(boots[0]) == "dhcp shim grub grub-config kernel initrd network overlay hello");
  CHECK(boots[0].steps.front().time_ms == 900000);
  CHECK(boots[0].errors.empty());
  CHECK(Stages(boots[1]) == "dhcp ipxe-binary script kernel");
  CHECK(boots[1].last_stage == BootStage::kKernel);
  CHECK(boots[1].next_stage == BootStage::kInitrd);
  CHECK(boots[1].errors == std::vector<std::string>{"initrd: connection reset by peer"});
  // iPXE's own DHCP is a step of its attempt, as `node why` lists it.
  CHECK(Stages(boots[2]) == "dhcp ipxe-binary dhcp script kernel initrd network overlay hello");
  CHECK(boots[2].steps.front().time_ms == 100000);
  CHECK(boots[2].steps.back().time_ms == 140000);

  // The newest one is what `node why` shows.
  CHECK(Stages(ComputeBootTimeline(n, events)) == Stages(boots[0]));
  // Fewer asked, fewer given.
  auto two = RecentBoots(n, events, 2);
  REQUIRE(two.size() == 2);
  CHECK(Stages(two[1]) == Stages(boots[1]));
  CHECK(RecentBoots(n, events, 0).empty());
}

TEST_CASE("history: boots: nodes with no or one attempt") {
  NodeRecord n;
  n.hostname = "n0";
  CHECK(RecentBoots(n, {}, 2).empty());
  CHECK(RecentBoots(n, BootEvents({{1, "enrolled", "mac x"}, {2, "state", "a -> b"}}), 2).empty());
  auto one = RecentBoots(n, BootEvents({{1, "boot", "dhcp: a"}, {2, "boot", "script: a"}}), 2);
  REQUIRE(one.size() == 1);
  CHECK(Stages(one[0]) == "dhcp script");
}

TEST_CASE("history: boots: a stage seen twice in the same millisecond starts one attempt") {
  NodeRecord n;
  n.hostname = "n0";
  auto boots = RecentBoots(n,
                           BootEvents({{1, "boot", "dhcp: a"},
                                       {2, "boot", "kernel: a"},
                                       {5, "boot", "dhcp: b"},
                                       {5, "boot", "dhcp: b"},
                                       {6, "boot", "script: b"}}),
                           3);
  REQUIRE(boots.size() == 2);
  CHECK(Stages(boots[0]) == "dhcp script");
  CHECK(Stages(boots[1]) == "dhcp kernel");
}

}  // namespace prov
