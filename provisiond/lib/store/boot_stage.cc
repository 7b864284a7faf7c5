#include "store/boot_stage.h"

namespace prov {
namespace {

struct StageInfo {
  BootStage stage;
  std::string_view name;
  BootChain chain;
};

// In boot order (AllBootStages and the enum follow it).
constexpr StageInfo kStages[] = {
    {BootStage::kDhcp, "dhcp", BootChain::kAny},
    {BootStage::kIpxeBinary, "ipxe-binary", BootChain::kIpxe},
    {BootStage::kShim, "shim", BootChain::kSigned},
    {BootStage::kGrub, "grub", BootChain::kSigned},
    {BootStage::kGrubConfig, "grub-config", BootChain::kSigned},
    {BootStage::kScript, "script", BootChain::kIpxe},
    {BootStage::kKernel, "kernel", BootChain::kAny},
    {BootStage::kInitrd, "initrd", BootChain::kAny},
    {BootStage::kNetwork, "network", BootChain::kAny},
    {BootStage::kOverlay, "overlay", BootChain::kAny},
    {BootStage::kHello, "hello", BootChain::kAny},
};

constexpr BootStage kOrder[] = {
    BootStage::kDhcp,       BootStage::kIpxeBinary, BootStage::kShim,   BootStage::kGrub,
    BootStage::kGrubConfig, BootStage::kScript,     BootStage::kKernel, BootStage::kInitrd,
    BootStage::kNetwork,    BootStage::kOverlay,    BootStage::kHello,
};

constexpr bool TablesAgree() {
  if (std::size(kStages) != std::size(kOrder)) return false;
  for (size_t i = 0; i < std::size(kStages); ++i)
    if (kStages[i].stage != kOrder[i] || static_cast<size_t>(kOrder[i]) != i) return false;
  return true;
}
static_assert(TablesAgree(), "kStages, kOrder and BootStage list the stages in one order");

}  // namespace

std::span<const BootStage> AllBootStages() {
  return kOrder;
}

std::string_view ToString(BootStage stage) {
  return kStages[static_cast<size_t>(stage)].name;
}

std::optional<BootStage> ParseBootStage(std::string_view name) {
  for (const StageInfo& s : kStages)
    if (s.name == name) return s.stage;
  return std::nullopt;
}

BootChain ChainOf(BootStage stage) {
  return kStages[static_cast<size_t>(stage)].chain;
}

bool IsLoaderStage(BootStage stage) {
  return stage < BootStage::kKernel;
}

}  // namespace prov
