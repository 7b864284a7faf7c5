// web_seed_states: fills a NEW provisiond database with a handful of nodes,
// one or more in every life-cycle state, for the browser test of the web
// page (tests/web/web_test.sh). The API only lets an operator set enrolled,
// maintenance and retired, so the other states are written here through
// prov::Store before the daemon starts, with the events a real boot leaves
// (kind "boot", detail "<stage>: ...") so /why has a timeline to show, and
// one configure run with its tasks (gpu05) so the node page has runs to show.
// The state changes that brought each node where it is are events as
// StoreTx::Transition writes them ("from -> to: detail"), spread over the last
// five hours, so the overview's chart of nodes by state has a history; gpu05
// also booted four hours ago through the signed chain (shim, grub), so its
// waterfall has a previous boot to compare with.
//
//   web_seed_states DB_PATH
//
// Refuses a path that exists: it never writes into a live inventory. Every
// enrolled node gets the 'command' power driver.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "store/store.h"

namespace {

struct Seed {
  std::string hostname;  // empty: discovered
  std::string mac;
  std::string ip;
  prov::NodeState state;
  std::string reason;
  std::string profile;
  std::string image;
  std::string stage;
  std::string facts;
  std::vector<std::string> stages;  // boot events, one per 1.5 s
  std::string error;                // a boot-error event after the stages
};

const char* kArcFacts = R"json({"cpu":{"model":"AMD Ryzen 9 7950X","cores":16},
 "memory_bytes":68719476736,"kernel":"6.1.0-28-amd64","os":"Debian GNU/Linux 12 (bookworm)",
 "pci":[{"slot":"0000:03:00.0","vendor_id":"8086","device_id":"56a0","class":"0300",
         "vendor":"Intel Corporation","device":"DG2 [Arc A770]","driver":"i915"},
        {"slot":"0000:04:00.0","vendor_id":"8086","device_id":"125c","class":"0200",
         "vendor":"Intel Corporation","device":"Ethernet Controller I226-V","driver":"igc"}],
 "nics":[{"name":"enp4s0","mac":"52:54:00:10:00:05"}],
 "disks":[{"name":"nvme0n1","model":"Samsung SSD 990 PRO 2TB","size_bytes":2000398934016,
           "by_id":"/dev/disk/by-id/nvme-Samsung_SSD_990_PRO_2TB_S7DN","transport":"nvme",
           "content":"ext4","system":false}],
 "storage":{"state":"ready","volumes":[{"name":"models","state":"mounted","mount":"/mnt/models",
            "device":"/dev/disk/by-id/nvme-Samsung_SSD_990_PRO_2TB_S7DN","uuid":"5f1c"}]}})json";

const char* kNvidiaFacts = R"json({"cpu":{"model":"Intel Xeon w5-2455X","cores":12},
 "memory_bytes":137438953472,"kernel":"6.1.0-28-amd64",
 "pci":[{"slot":"0000:17:00.0","vendor_id":"10de","device_id":"2684","class":"0300",
         "vendor":"NVIDIA Corporation","device":"AD102 [GeForce RTX 4090]","driver":"nvidia"},
        {"slot":"0000:18:00.0","vendor_id":"10de","device_id":"22ba","class":"0403",
         "vendor":"NVIDIA Corporation","device":"AD102 High Definition Audio","driver":""}]})json";

const std::vector<std::string> kToKernel = {"dhcp", "ipxe-binary", "script", "kernel"};
const std::vector<std::string> kFullBoot = {"dhcp",   "ipxe-binary", "script",  "kernel",
                                            "initrd", "network",     "overlay", "hello"};
// gpu05's previous boot: {stage, ms after its DHCP}.
const std::vector<std::pair<std::string, int64_t>> kSignedBoot = {
    {"dhcp", 0},      {"shim", 800},     {"grub", 1600},    {"grub-config", 2100}, {"kernel", 2900},
    {"initrd", 3500}, {"network", 6500}, {"overlay", 7700}, {"hello", 12200}};

constexpr int64_t kMinute = 60 * 1000;

// The state changes of a node, {time, "from -> to: detail"}: `now`, the
// start and the hello of its current boot.
std::vector<std::pair<int64_t, std::string>> Changes(const Seed& seed, int64_t now, int64_t start,
                                                     int64_t hello) {
  using S = prov::NodeState;
  std::vector<std::pair<int64_t, std::string>> out;
  // A boot that ended ready, `at` ms after it began.
  auto ready_at = [&](int64_t at, const std::string& from) {
    out.push_back({at, from + " -> booting: dhcp from " + seed.mac});
    out.push_back({at + 12200, "booting -> booted: hello"});
    out.push_back({at + 14000, "booted -> configuring: profile " + seed.profile});
    out.push_back({at + 3 * kMinute, "configuring -> ready: configured"});
  };
  switch (seed.state) {
    case S::kReady:
      ready_at(now - 240 * kMinute, "enrolled");
      out.push_back({start, "ready -> booting: dhcp from " + seed.mac});
      out.push_back({hello, "booting -> booted: hello"});
      out.push_back({hello + 2000, "booted -> configuring: profile " + seed.profile});
      out.push_back({start + 6 * kMinute, "configuring -> ready: configured"});
      break;
    case S::kMaintenance:
      ready_at(now - 180 * kMinute, "enrolled");
      out.push_back({now - 60 * kMinute, "ready -> maintenance: " + seed.reason});
      break;
    case S::kRetired:
      out.push_back({now - 120 * kMinute, "enrolled -> retired: retired by operator"});
      break;
    case S::kFailed:
      out.push_back({start, "enrolled -> booting: dhcp from " + seed.mac});
      out.push_back({start + 20000, "booting -> failed: " + seed.reason});
      break;
    case S::kBooting:
    case S::kBooted:
    case S::kConfiguring:
      out.push_back({start, "enrolled -> booting: dhcp from " + seed.mac});
      if (seed.state == S::kBooting) break;
      out.push_back({hello, "booting -> booted: hello"});
      if (seed.state == S::kBooted) break;
      out.push_back({hello + 2000, "booted -> configuring: profile " + seed.profile});
      break;
    default:
      break;
  }
  return out;
}

std::vector<Seed> Seeds() {
  using S = prov::NodeState;
  return {
      {"", "52:54:00:10:00:00", "", S::kDiscovered, "", "", "", "dhcp", "{}", {"dhcp"}, ""},
      {"gpu01", "52:54:00:10:00:01", "10.20.0.11", S::kEnrolled, "", "v0.1", "", "", "{}", {}, ""},
      {"gpu02", "52:54:00:10:00:02", "10.20.0.12", S::kBooting, "", "v0.1", "lab", "kernel", "{}",
       kToKernel, ""},
      {"gpu03", "52:54:00:10:00:03", "10.20.0.13", S::kBooted, "", "v0.1", "lab", "hello",
       kNvidiaFacts, kFullBoot, ""},
      {"gpu04", "52:54:00:10:00:04", "10.20.0.14", S::kConfiguring, "", "v0.2", "lab", "hello",
       kNvidiaFacts, kFullBoot, ""},
      {"gpu05", "52:54:00:10:00:05", "10.20.0.15", S::kReady, "", "v0.2", "lab", "hello", kArcFacts,
       kFullBoot, ""},
      {"gpu06", "52:54:00:10:00:06", "10.20.0.16", S::kFailed,
       "initrd download timed out after 60 s", "v0.2", "lab", "kernel", "{}", kToKernel,
       "initrd: connection reset by peer"},
      {"gpu07", "52:54:00:10:00:07", "10.20.0.17", S::kMaintenance, "fan swap", "v0.1", "lab",
       "hello", kNvidiaFacts, kFullBoot, ""},
      {"gpu08", "52:54:00:10:00:08", "10.20.0.18", S::kRetired, "", "", "", "", "{}", {}, ""},
  };
}

// gpu05's configure run as the configurator stores one: the NPU runtime
// installed, then the profile's health check failed (its latest result).
prov::Status SeedRun(prov::StoreTx& tx, int64_t base) {
  auto node = tx.FindNode("gpu05");
  if (!node.ok()) return node.status();
  prov::RunRecord run;
  run.node_id = node->id;
  run.node = node->name();
  run.kind = "configure";
  run.what = "v0.2";
  run.status = prov::RunStatus::kFailed;
  run.started_ms = base + 5 * 60 * 1000;
  run.finished_ms = run.started_ms + 41300;
  run.changed = 1;
  run.failed = 1;
  run.message = "health check npu-visible: exit code 1";
  run.who = "provisiond";
  prov::Status s = tx.InsertRun(run);
  if (!s.ok()) return s;
  prov::RunTaskRecord install;
  install.run_id = run.id;
  install.playbook = "amd-npu.yml (ansible-playbook)";
  install.play = "NPU";
  install.task = "install the NPU runtime";
  install.module = "apt";
  install.location = "amd-npu.yml:12";
  install.status = prov::TaskStatus::kChanged;
  install.changed = true;
  install.exit_code = 0;
  install.stdout_tail = "Setting up xrt-npu (2.18)";
  install.duration_ms = 41250;
  s = tx.AppendRunTask(install);
  if (!s.ok()) return s;
  prov::RunTaskRecord check;
  check.run_id = run.id;
  check.playbook = "health";
  check.play = "health checks";
  check.task = "npu-visible";
  check.module = "health";
  check.location = "profiles/v0.2/profile.yaml";
  check.status = prov::TaskStatus::kFailed;
  check.exit_code = 1;
  check.msg = "exit code 1";
  check.duration_ms = 12;
  return tx.AppendRunTask(check);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " DB_PATH\n";
    return 2;
  }
  const std::string path = argv[1];
  std::error_code ec;
  if (std::filesystem::exists(path, ec) || ec) {
    std::cerr << "web_seed_states: " << path
              << " exists; this tool only seeds a new database that no daemon has open\n";
    return 1;
  }
  auto store = prov::Store::Open(path);
  if (!store.ok()) {
    std::cerr << "web_seed_states: " << store.status().message() << "\n";
    return 1;
  }
  const int64_t now = prov::NowMs();
  const int64_t base = now - 10 * kMinute;
  const auto seeds = Seeds();
  prov::Status s = (*store)->Transact([&](prov::StoreTx& tx) -> prov::Status {
    // Every node's events, appended in time order afterwards as a running
    // provisiond appends them (event ids follow time).
    std::vector<prov::EventRecord> events;
    for (size_t i = 0; i < seeds.size(); ++i) {
      const Seed& seed = seeds[i];
      prov::NodeRecord node;
      node.hostname = seed.hostname;
      node.mac = seed.mac;
      node.ip = seed.ip;
      node.state = seed.state;
      node.reason = seed.reason;
      node.profile_version = seed.profile;
      node.image_version = seed.image;
      node.stage = prov::ParseBootStage(seed.stage);
      node.facts = seed.facts;
      // Enrolled nodes can be power cycled through the config's power.command
      // (web_test.sh points it at a script that logs its arguments).
      if (!seed.hostname.empty() && seed.state != prov::NodeState::kRetired)
        node.power = R"({"driver":"command"})";
      const int64_t start = base + static_cast<int64_t>(i) * 30000;
      node.last_seen_ms = seed.stages.empty() ? 0 : start + 1500 * (seed.stages.size() - 1);
      auto inserted = tx.InsertNode(node);
      if (!inserted.ok()) return inserted.status();
      auto event = [&](int64_t t, const std::string& kind, const std::string& detail) {
        events.push_back({0, t, inserted->id, inserted->name(), kind, detail, "seed"});
        // A boot event's stage, as the boot path writes it beside the text.
        if (kind == "boot")
          events.back().stage = prov::ParseBootStage(detail.substr(0, detail.find(':')));
      };
      // Enrolled (or discovered) five hours ago, four minutes apart.
      event(now - 300 * kMinute + static_cast<int64_t>(i) * 4 * kMinute,
            seed.hostname.empty() ? "discovered" : "enrolled",
            "mac " + seed.mac + (seed.ip.empty() ? "" : ", ip " + seed.ip));
      if (seed.hostname == "gpu05")
        for (const auto& [stage, after] : kSignedBoot)
          event(now - 240 * kMinute + after, "boot", stage + ": seen from " + seed.mac);
      for (size_t k = 0; k < seed.stages.size(); ++k)
        event(start + 1500 * static_cast<int64_t>(k), "boot",
              seed.stages[k] + ": seen from " + seed.mac);
      if (!seed.error.empty())
        event(start + 1500 * static_cast<int64_t>(seed.stages.size()), "boot-error", seed.error);
      const int64_t hello =
          seed.stages.empty() ? start : start + 1500 * static_cast<int64_t>(seed.stages.size() - 1);
      for (const auto& [t, detail] : Changes(seed, now, start, hello)) event(t, "state", detail);
    }
    std::stable_sort(events.begin(), events.end(),
                     [](const auto& a, const auto& b) { return a.time_ms < b.time_ms; });
    for (auto& e : events)
      if (prov::Status a = tx.AppendEvent(e); !a.ok()) return a;
    return SeedRun(tx, base);
  });
  if (!s.ok()) {
    std::cerr << "web_seed_states: " << s.message() << "\n";
    return 1;
  }
  std::printf("seeded %zu nodes into %s\n", seeds.size(), path.c_str());
  return 0;
}
