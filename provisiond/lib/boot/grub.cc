// The signed boot chain for UEFI: shim (Debian's shim-signed, signed by
// Microsoft's UEFI CA, which consumer firmware trusts) loads grub
// (grub-efi-amd64-signed's netboot build, signed by Debian, which shim
// trusts), and grub loads the image's kernel (Debian's kernels are signed by
// Debian; shim verifies them for grub). It boots with Secure Boot on or off.
//
// Debian's signed netboot grub has tftp but no http module, and with Secure
// Boot on it loads no modules, so everything it reads comes by TFTP: its
// start config (grub/grub.cfg: grub's built-in prefix is /grub on the TFTP
// server), each node's config (grub/nodes/<mac>.cfg, asked for by the MAC
// of the port grub booted from), and the image's kernel and initrd (linked
// into the TFTP root under images/). provisiond writes the configs as files
// (BootService). The node's one-boot ticket is not in any of them (anyone on
// the boot network can read TFTP): the initrd fetches it over HTTP from a
// privileged port.
#include <map>

#include "base/file_util.h"
#include "base/mac.h"
#include "base/template.h"
#include "boot/loader.h"

namespace prov {
namespace {

const char* kGrubTemplates[] = {"start", "node", "discovered", "local", "unavailable"};

class Grub final : public BootLoader {
 public:
  explicit Grub(const LoaderSettings& settings) : settings_(settings) {}

  Status Load() {
    return templates_.Load(settings_.templates_dir,
                           {std::begin(kGrubTemplates), std::end(kGrubTemplates)}, ".grub.in");
  }

  std::string_view name() const override { return LoaderName(BootChain::kSigned); }
  std::string_view title() const override { return "shim and grub"; }

  std::string FirstStage(ClientArch) const override { return "shimx64.efi"; }
  std::vector<TftpFile> TftpFiles() const override {
    // shim looks for grubx64.efi beside itself.
    return {{settings_.files_dir + "/shim/shimx64.efi.signed", "shimx64.efi"},
            {settings_.files_dir + "/grub/x86_64-efi-signed/grubnetx64.efi.signed", "grubx64.efi"}};
  }
  std::optional<BootStage> TftpStage(std::string_view file) const override {
    const size_t slash = file.rfind('/');
    const std::string_view base = file.substr(slash == std::string_view::npos ? 0 : slash + 1);
    if (base == "shimx64.efi" || base == "shimx64.0") return BootStage::kShim;
    if (base == "grubx64.efi") return BootStage::kGrub;
    if (file.find("/grub/nodes/") != std::string_view::npos || file.starts_with("grub/nodes/"))
      return BootStage::kGrubConfig;
    if (file.find("/images/") != std::string_view::npos || file.starts_with("images/")) {
      if (base == "vmlinuz") return BootStage::kKernel;
      if (base == "initrd.img") return BootStage::kInitrd;
    }
    return std::nullopt;
  }
  std::string_view package() const override {
    return "Debian packages shim-signed and grub-efi-amd64-signed";
  }
  // grub reuses the firmware's DHCP answer; it asks none of its own.
  std::string_view dhcp_user_class() const override { return ""; }
  std::vector<std::pair<std::string, std::string>> DhcpOptions() const override { return {}; }
  std::string StartUrl(const std::string&) const override { return ""; }

  std::string TftpScriptPath(const ScriptName& script) const override {
    // grub names the port it booted from as net_default_mac (lower case,
    // colons): the same text as provisiond's MACs.
    return script.start ? "grub/grub.cfg" : "grub/nodes/" + script.node + ".cfg";
  }
  std::string TftpImageDir(const std::string& image_ref) const override {
    // "lab@3d77ce4e" -> images/lab/3d77ce4e (names and versions are
    // checked words: no slashes, no dots at their start).
    const size_t at = image_ref.find('@');
    return "images/" + image_ref.substr(0, at) + "/" +
           (at == std::string::npos ? "current" : image_ref.substr(at + 1));
  }

  // Its scripts are never asked for over HTTP.
  std::optional<ScriptName> ParseScriptName(std::string_view) const override {
    return std::nullopt;
  }
  // grub's initrd command hands the initrds to the kernel itself.
  std::string InitrdArguments(const std::vector<BootFile>&) const override { return ""; }

  Result<std::string> StartScript(const ScriptContext& c) const override {
    return templates_.Render("start", c, {});
  }
  Result<std::string> NodeScript(const NodeBootConfig& b) const override {
    TemplateValues v;
    v["profile"] = b.profile;
    v["image"] = b.image;
    v["kernel"] = b.kernel_url;
    std::string initrds;
    for (const auto& f : b.initrds) initrds += (initrds.empty() ? "" : " ") + f.url;
    v["initrds"] = initrds;
    v["cmdline"] = b.cmdline;
    return templates_.Render("node", b.context, std::move(v));
  }
  Result<std::string> DiscoveredScript(const ScriptContext& c) const override {
    return templates_.Render("discovered", c, {});
  }
  Result<std::string> LocalScript(const ScriptContext& c) const override {
    return templates_.Render("local", c, {});
  }
  Result<std::string> UnavailableScript(const ScriptContext& c,
                                        const std::string& reason) const override {
    TemplateValues v;
    // A grub string in double quotes (and a comment): no quote, dollar,
    // backslash or line break from the reason can end it or expand.
    std::string quoted;
    for (char ch : reason)
      quoted += (ch == '"' || ch == '$' || ch == '\\')    ? '\''
                : (static_cast<unsigned char>(ch) < 0x20) ? ' '
                                                          : ch;
    v["reason"] = quoted;
    return templates_.Render("unavailable", c, std::move(v));
  }

 private:
  LoaderSettings settings_;
  ScriptTemplates templates_;
};

}  // namespace

Result<std::unique_ptr<BootLoader>> CreateGrubLoader(const LoaderSettings& settings) {
  return MakeLoader<Grub>(settings);
}

}  // namespace prov
