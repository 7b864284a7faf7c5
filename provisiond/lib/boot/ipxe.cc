// The iPXE boot loader. PXE firmware loads iPXE by TFTP (undionly.kpxe on
// BIOS, ipxe.efi or snponly.efi on UEFI, from Debian's ipxe); iPXE then asks
// DHCP again with user class "iPXE", is sent to provisiond's start script,
// and from there to its node's script, which downloads the kernel and the
// initrd over HTTP with retries. Scripts are rendered from pxe/*.ipxe.in.
#include <map>

#include "base/file_util.h"
#include "base/template.h"
#include "boot/loader.h"

namespace prov {
namespace {

const char* kTemplates[] = {"start", "node", "discovered", "local", "unavailable"};
const char* kUefiFiles[] = {"ipxe.efi", "snponly.efi"};
constexpr std::string_view kBinaries[] = {"undionly.kpxe", "ipxe.efi", "snponly.efi"};

class Ipxe final : public BootLoader {
 public:
  explicit Ipxe(const LoaderSettings& settings) : settings_(settings) {}

  Status Load() {
    if (settings_.uefi_file.empty()) settings_.uefi_file = kUefiFiles[0];
    bool known = false;
    for (const char* f : kUefiFiles) known |= settings_.uefi_file == f;
    if (!known)
      return Status::Invalid("iPXE has no UEFI binary '" + settings_.uefi_file +
                             "' (ipxe.efi or snponly.efi)");
    return templates_.Load(settings_.templates_dir, {std::begin(kTemplates), std::end(kTemplates)},
                           ".ipxe.in");
  }

  std::string_view name() const override { return LoaderName(BootChain::kIpxe); }
  std::string_view title() const override { return "iPXE"; }

  std::string FirstStage(ClientArch arch) const override {
    // undionly drives the NIC through the PXE ROM's UNDI; on UEFI, ipxe.efi
    // brings its own NIC drivers and snponly.efi uses the firmware's.
    return arch == ClientArch::kBios ? "undionly.kpxe" : settings_.uefi_file;
  }
  std::vector<TftpFile> TftpFiles() const override {
    // All three, whichever UEFI binary is chosen: a node's firmware may have
    // been told another name by a previous config.
    std::vector<TftpFile> out;
    for (std::string_view f : kBinaries)
      out.push_back({settings_.files_dir + "/" + std::string(f), std::string(f)});
    return out;
  }
  std::optional<BootStage> TftpStage(std::string_view file) const override {
    // Also under the ".0" names proxy-DHCP's PXE menu gives.
    const std::string_view base = file.substr(file.rfind('/') + 1);
    for (std::string_view f : kBinaries) {
      const std::string_view stem = f.substr(0, f.find('.'));
      if (base == f || (base.starts_with(stem) && base.substr(stem.size()) == ".0"))
        return BootStage::kIpxeBinary;
    }
    return std::nullopt;
  }
  std::string TftpScriptPath(const ScriptName&) const override { return ""; }
  std::string TftpImageDir(const std::string&) const override { return ""; }
  std::string_view package() const override { return "Debian package ipxe"; }
  std::string_view dhcp_user_class() const override { return "iPXE"; }
  std::vector<std::pair<std::string, std::string>> DhcpOptions() const override {
    return {
        {"iPXE waits for a proxy-DHCP offer unless the answer says PXEClient.", "60,PXEClient"}};
  }
  std::string StartUrl(const std::string& boot_url) const override {
    return boot_url + "/boot/start.ipxe";
  }

  std::optional<ScriptName> ParseScriptName(std::string_view file) const override {
    if (file == "start.ipxe") return ScriptName{.start = true, .node = ""};
    constexpr std::string_view suffix = ".ipxe";
    if (file.size() <= suffix.size() || !file.ends_with(suffix)) return std::nullopt;
    return ScriptName{.start = false,
                      .node = std::string(file.substr(0, file.size() - suffix.size()))};
  }

  std::string InitrdArguments(const std::vector<BootFile>& initrds) const override {
    // The kernel's EFI stub loads the initrds iPXE names (initrd --name);
    // BIOS kernels ignore the argument.
    std::string out;
    for (const auto& f : initrds) out += (out.empty() ? "initrd=" : " initrd=") + f.name;
    return out;
  }

  Result<std::string> StartScript(const ScriptContext& c) const override {
    return templates_.Render("start", c, {});
  }

  Result<std::string> NodeScript(const NodeBootConfig& b) const override {
    TemplateValues v;
    // The script sets ${base} to the node's files once and names each file
    // relative to it.
    v["files_url"] = b.files_url;
    v["profile"] = b.profile;
    v["image"] = b.image;
    v["kernel"] = UnderBase(b, b.kernel_url);
    std::string initrds;
    for (const auto& f : b.initrds)
      initrds +=
          (initrds.empty() ? "" : " && ") + ("initrd --name " + f.name + " " + UnderBase(b, f.url));
    v["initrds"] = initrds;
    v["cmdline"] = b.cmdline;
    v["max_tries"] = std::to_string(b.max_tries);
    v["jitter"] = std::to_string(b.retry_jitter_s);
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
    v["reason"] = reason;
    return templates_.Render("unavailable", c, std::move(v));
  }

 private:
  static std::string UnderBase(const NodeBootConfig& b, const std::string& url) {
    const std::string prefix = b.files_url + "/";
    if (!b.files_url.empty() && url.starts_with(prefix))
      return "${base}/" + url.substr(prefix.size());
    return url;
  }

  LoaderSettings settings_;
  ScriptTemplates templates_;
};

}  // namespace

Result<std::unique_ptr<BootLoader>> CreateIpxeLoader(const LoaderSettings& settings) {
  return MakeLoader<Ipxe>(settings);
}

}  // namespace prov
