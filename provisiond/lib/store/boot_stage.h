// The stages of a node's boot, in the order a node passes them: the one list
// of their names, their order and the boot loader chain each belongs to. The
// boot path records them, the timeline orders them, the console log starts a
// new boot on them and the API shows them; none of those spells a stage.
//
//   iPXE:         dhcp, ipxe-binary, script (HTTP), kernel, initrd (HTTP)
//   signed chain: dhcp, shim, grub, grub-config, kernel, initrd (TFTP)
//   then, both:   network (the initrd's DHCP), overlay, hello
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace prov {

enum class BootStage {
  kDhcp,
  kIpxeBinary,
  kShim,
  kGrub,
  kGrubConfig,
  kScript,
  kKernel,
  kInitrd,
  kNetwork,
  kOverlay,
  kHello,
};

// Which loader's chain passes a stage.
enum class BootChain {
  kAny,     // every boot: DHCP, the kernel and what follows
  kIpxe,    // iPXE's binary and its script over HTTP
  kSigned,  // shim, grub and grub's config over TFTP (Secure Boot)
};

// The boot loaders, one for each chain with stages of its own, and their
// names in provisiond's config (dhcp.uefi_loader), in profiles (uefi_loader)
// and on nodes (node set --uefi-loader): "ipxe" (BIOS, and UEFI with Secure
// Boot off) and "grub" (the signed chain shim -> grub). boot/loader.cc builds
// each from its chain; no other unit spells a loader's name.
const char* LoaderName(BootChain chain);  // "" for kAny
std::optional<BootChain> ParseLoaderName(std::string_view name);
// The UEFI loader when nothing chooses one: the signed chain, which boots
// with Secure Boot on or off.
constexpr BootChain kDefaultUefiChain = BootChain::kSigned;
// For messages: "grub or ipxe"; with `what`, each with what it boots
// ("grub (shim and grub, signed: Secure Boot on or off) or ipxe (...)").
std::string LoaderChoices(bool what = false);

// Every stage, in boot order.
std::span<const BootStage> AllBootStages();
std::string_view ToString(BootStage stage);
std::optional<BootStage> ParseBootStage(std::string_view name);
BootChain ChainOf(BootStage stage);
// A stage served before the kernel: seen again after the kernel, it begins a
// new boot.
bool IsLoaderStage(BootStage stage);
// A boot event's text, for people: "kernel: lab@1", or the name alone when
// there is no detail. (The stage itself is the event's own field.)
std::string StageText(BootStage stage, std::string_view detail);

}  // namespace prov
