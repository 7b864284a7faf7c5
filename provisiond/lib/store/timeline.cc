#include "store/timeline.h"

#include <algorithm>

namespace prov {
namespace {

int StageIndex(BootStage stage) {
  return static_cast<int>(stage);
}

const char* Expectation(BootStage next, bool signed_chain = false) {
  switch (next) {
    case BootStage::kDhcp:
      return "a DHCP request from its MAC (is it powered on and set to boot from the network?)";
    case BootStage::kIpxeBinary:
    case BootStage::kShim:
      return "its firmware to fetch its boot loader over TFTP (shim for UEFI, iPXE for BIOS) or "
             "start QEMU's iPXE ROM; a firmware that refuses the loader (Secure Boot on and an "
             "unsigned loader such as iPXE) stops here";
    case BootStage::kGrub:
      return "shim to fetch grub (grubx64.efi) over TFTP; shim refuses a grub it cannot verify";
    case BootStage::kGrubConfig:
      return "grub to read the node's config (grub/nodes/<mac>.cfg) over TFTP";
    case BootStage::kScript:
      return "iPXE to ask provisiond for its boot script (a UEFI firmware with Secure Boot on "
             "refuses the unsigned iPXE it fetched: the signed chain boots it, the default "
             "unless the node, its profile or dhcp.uefi_loader chose ipxe; node set NODE "
             "--uefi-loader grub)";
    case BootStage::kKernel:
      return signed_chain ? "grub to load the kernel over TFTP (with Secure Boot on, shim refuses "
                            "a kernel that is not signed by a key it trusts)"
                          : "iPXE to download the kernel";
    case BootStage::kInitrd:
      return signed_chain ? "grub to load the initrd over TFTP" : "iPXE to download the initrd";
    case BootStage::kNetwork:
      return "the initrd to bring up the network (DHCP)";
    case BootStage::kOverlay:
      return "the initrd to mount its root over NFS and fetch its overlay";
    case BootStage::kHello:
      return "the booted system to phone home";
  }
  return "the next stage";
}

}  // namespace

BootTimeline ComputeBootTimeline(const NodeRecord& node, const std::vector<EventRecord>& events) {
  BootTimeline t;
  int last_index = -1;
  for (const auto& e : events) {
    if (e.kind == "boot-error" || e.kind == "refused") {
      t.errors.push_back(e.detail);
      continue;
    }
    if (e.kind != "boot" || !e.stage) continue;
    const BootStage stage = *e.stage;
    const int index = StageIndex(stage);
    // Going back to an earlier stage starts a new attempt, except the second
    // DHCP that iPXE does after its binary was loaded.
    const bool ipxe_dhcp = stage == BootStage::kDhcp && t.last_stage == BootStage::kIpxeBinary;
    const bool repeat = index == last_index;
    if (index < last_index && !ipxe_dhcp) {
      t.steps.clear();
      t.errors.clear();
    }
    if (!repeat || t.steps.empty()) {
      const size_t name = ToString(stage).size();
      std::string detail = e.detail.size() > name + 2 ? e.detail.substr(name + 2) : "";
      t.steps.push_back({stage, e.time_ms, detail});
    }
    t.last_stage = stage;
    last_index = std::max(index, ipxe_dhcp ? last_index : index);
    if (ipxe_dhcp) last_index = StageIndex(BootStage::kIpxeBinary);
  }
  int at = t.last_stage ? StageIndex(*t.last_stage) : -1;
  if (t.last_stage == BootStage::kDhcp && t.steps.size() > 1)
    at = StageIndex(BootStage::kIpxeBinary);
  // The next stage on this boot's path: the signed chain's stages are not
  // iPXE's, and the other way round.
  bool signed_chain = false;
  bool ipxe = false;
  for (const auto& step : t.steps) {
    signed_chain |= ChainOf(step.stage) == BootChain::kSigned;
    ipxe |= ChainOf(step.stage) == BootChain::kIpxe;
  }
  t.next_stage.reset();
  for (BootStage s : AllBootStages().subspan(static_cast<size_t>(at + 1))) {
    const BootChain chain = ChainOf(s);
    if (signed_chain && chain == BootChain::kIpxe) continue;
    if (ipxe && chain == BootChain::kSigned) continue;
    if (!signed_chain && !ipxe && s == BootStage::kShim) continue;  // kIpxeBinary says both
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
    t.summary =
        name + " has not asked to boot yet: provisiond waits for " + Expectation(BootStage::kDhcp);
  } else if (!t.next_stage || t.last_stage >= BootStage::kHello) {
    t.summary = name + " booted and phoned home";
  } else {
    t.summary = name + " stopped after '" + std::string(ToString(*t.last_stage)) +
                "': provisiond waits for " + Expectation(*t.next_stage, signed_chain);
    if (!t.errors.empty()) t.summary += "; last error: " + t.errors.back();
  }
  return t;
}

}  // namespace prov
