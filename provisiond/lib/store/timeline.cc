#include "store/timeline.h"

#include <algorithm>

namespace prov {
namespace {

int StageIndex(const std::string& stage) {
  const auto& order = BootStageOrder();
  auto it = std::find(order.begin(), order.end(), stage);
  return it == order.end() ? -1 : static_cast<int>(it - order.begin());
}

// "kernel: lab@1234" -> "kernel"
std::string StageOf(const EventRecord& e) {
  return e.detail.substr(0, e.detail.find(':'));
}

const char* Expectation(const std::string& next, bool signed_chain = false) {
  if (next == "dhcp")
    return "a DHCP request from its MAC (is it powered on and set to boot from the network?)";
  if (next == "ipxe-binary" || next == "shim")
    return "its firmware to fetch its boot loader over TFTP (shim for UEFI, iPXE for BIOS) or "
           "start QEMU's iPXE ROM; a firmware that refuses the loader (Secure Boot on and an "
           "unsigned loader such as iPXE) stops here";
  if (next == "grub")
    return "shim to fetch grub (grubx64.efi) over TFTP; shim refuses a grub it cannot verify";
  if (next == "grub-config")
    return "grub to read the node's config (grub/nodes/<mac>.cfg) over TFTP";
  if (next == "script")
    return "iPXE to ask provisiond for its boot script (a UEFI firmware with Secure Boot on "
           "refuses the unsigned iPXE it fetched: the signed chain boots it, the default "
           "unless the node, its profile or dhcp.uefi_loader chose ipxe; node set NODE "
           "--uefi-loader grub)";
  if (next == "kernel")
    return signed_chain ? "grub to load the kernel over TFTP (with Secure Boot on, shim refuses "
                          "a kernel that is not signed by a key it trusts)"
                        : "iPXE to download the kernel";
  if (next == "initrd")
    return signed_chain ? "grub to load the initrd over TFTP" : "iPXE to download the initrd";
  if (next == "network") return "the initrd to bring up the network (DHCP)";
  if (next == "overlay") return "the initrd to mount its root over NFS and fetch its overlay";
  if (next == "hello") return "the booted system to phone home";
  return "the next stage";
}

}  // namespace

const std::vector<std::string>& BootStageOrder() {
  // Both loaders' stages: iPXE's (ipxe-binary, script over HTTP) and the
  // signed chain's (shim, grub, grub-config over TFTP). A boot passes one
  // set of them.
  static const std::vector<std::string> order = {"dhcp",        "ipxe-binary", "shim",   "grub",
                                                 "grub-config", "script",      "kernel", "initrd",
                                                 "network",     "overlay",     "hello"};
  return order;
}

BootTimeline ComputeBootTimeline(const NodeRecord& node, const std::vector<EventRecord>& events) {
  BootTimeline t;
  int last_index = -1;
  for (const auto& e : events) {
    if (e.kind == "boot-error" || e.kind == "refused") {
      t.errors.push_back(e.detail);
      continue;
    }
    if (e.kind != "boot") continue;
    std::string stage = StageOf(e);
    int index = StageIndex(stage);
    if (index < 0) continue;
    // Going back to an earlier stage starts a new attempt, except the second
    // DHCP that iPXE does after its binary was loaded.
    bool ipxe_dhcp = stage == "dhcp" && t.last_stage == "ipxe-binary";
    bool repeat = index == last_index;
    if (index < last_index && !ipxe_dhcp) {
      t.steps.clear();
      t.errors.clear();
    }
    if (!repeat || t.steps.empty()) {
      std::string detail =
          e.detail.size() > stage.size() + 2 ? e.detail.substr(stage.size() + 2) : "";
      t.steps.push_back({stage, e.time_ms, detail});
    }
    t.last_stage = stage;
    last_index = std::max(index, ipxe_dhcp ? last_index : index);
    if (ipxe_dhcp) last_index = StageIndex("ipxe-binary");
  }
  const auto& order = BootStageOrder();
  int at = StageIndex(t.last_stage);
  if (t.last_stage == "dhcp" && t.steps.size() > 1) at = StageIndex("ipxe-binary");
  // The next stage on this boot's path: the signed chain's stages are not
  // iPXE's, and the other way round.
  bool signed_chain = false;
  bool ipxe = false;
  for (const auto& step : t.steps) {
    signed_chain |= step.stage == "shim" || step.stage == "grub" || step.stage == "grub-config";
    ipxe |= step.stage == "ipxe-binary" || step.stage == "script";
  }
  t.next_stage.clear();
  for (size_t i = static_cast<size_t>(at + 1); i < order.size(); ++i) {
    const std::string& s = order[i];
    if (signed_chain && (s == "ipxe-binary" || s == "script")) continue;
    if (ipxe && (s == "shim" || s == "grub" || s == "grub-config")) continue;
    if (!signed_chain && !ipxe && s == "shim") continue;  // "ipxe-binary" says both
    t.next_stage = s;
    break;
  }
  const std::string name = node.name();
  if (node.state == NodeState::kDiscovered) {
    t.summary =
        name +
        " is not enrolled: it gets a script that waits (enroll it with provisionctl node add)";
  } else if (node.state == NodeState::kRetired || node.state == NodeState::kMaintenance) {
    t.summary =
        name + " is " + std::string(ToString(node.state)) + ": it is sent to its next boot device";
  } else if (t.steps.empty()) {
    t.summary = name + " has not asked to boot yet: provisiond waits for " + Expectation("dhcp");
  } else if (t.next_stage.empty() || StageIndex(t.last_stage) >= StageIndex("hello")) {
    t.summary = name + " booted and phoned home";
  } else {
    t.summary = name + " stopped after '" + t.last_stage + "': provisiond waits for " +
                Expectation(t.next_stage, signed_chain);
    if (!t.errors.empty()) t.summary += "; last error: " + t.errors.back();
  }
  return t;
}

}  // namespace prov
