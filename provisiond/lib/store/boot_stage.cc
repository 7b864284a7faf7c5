#include "store/boot_stage.h"

#include <array>

namespace prov {
namespace {

struct StageInfo {
  BootStage stage;
  std::string_view name;
  BootChain chain;
};

// In boot order, the enum's.
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

// The stages alone, in the same order (AllBootStages' span).
constexpr auto kOrder = [] {
  std::array<BootStage, std::size(kStages)> order{};
  for (size_t i = 0; i < order.size(); ++i) order[i] = kStages[i].stage;
  return order;
}();

// ToString and ChainOf index kStages by the enum's value.
constexpr bool InEnumOrder() {
  for (size_t i = 0; i < kOrder.size(); ++i)
    if (static_cast<size_t>(kOrder[i]) != i) return false;
  return kOrder.back() == BootStage::kHello;  // the enum's last
}
static_assert(InEnumOrder(), "kStages lists every BootStage, in the enum's order");

struct LoaderInfo {
  BootChain chain;
  const char* name;
  std::string_view boots;  // for messages
};

// In the order messages list them: the default first.
constexpr LoaderInfo kLoaders[] = {
    {BootChain::kSigned, "grub", "shim and grub, signed: Secure Boot on or off"},
    {BootChain::kIpxe, "ipxe", "Secure Boot off"},
};
static_assert(kLoaders[0].chain == kDefaultUefiChain, "the default loader is listed first");

}  // namespace

const char* LoaderName(BootChain chain) {
  for (const LoaderInfo& l : kLoaders)
    if (l.chain == chain) return l.name;
  return "";
}

std::optional<BootChain> ParseLoaderName(std::string_view name) {
  for (const LoaderInfo& l : kLoaders)
    if (l.name == name) return l.chain;
  return std::nullopt;
}

std::string LoaderChoices(bool what) {
  std::string out;
  const size_t n = std::size(kLoaders);
  for (size_t i = 0; i < n; ++i) {
    if (i) out += i + 1 == n ? " or " : ", ";
    out += kLoaders[i].name;
    if (what) out.append(" (").append(kLoaders[i].boots).append(")");
  }
  return out;
}

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

std::string StageText(BootStage stage, std::string_view detail) {
  std::string text(ToString(stage));
  if (!detail.empty()) text.append(": ").append(detail);
  return text;
}

}  // namespace prov
