// The boot service: its loaders and settings, and the scripts nodes boot
// with (the start script, each node's script and kernel command line). The
// TFTP tree is boot_tftp.cc, tickets and files boot_files.cc, the stage
// machine boot_stages.cc.
#include "boot/boot.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <random>

#include "base/file_util.h"
#include "base/mac.h"
#include "store/node_state.h"

namespace prov {

namespace {

HttpResponse Script(std::string text) {
  HttpResponse r = HttpResponse::Text(200, std::move(text), "text/plain; charset=utf-8");
  r.headers.emplace_back("Cache-Control", "no-store");
  return r;
}

}  // namespace

Result<std::unique_ptr<BootService>> BootService::Create(const BootSettings& settings, Store& store,
                                                         ImageCatalog& images) {
  std::unique_ptr<BootService> boot(new BootService(settings, store, images));
  auto loader = CreateBootLoader(settings.loader,
                                 {settings.pxe_dir, settings.loader_dir, settings.uefi_file});
  if (!loader.ok()) return loader.status();
  boot->loader_ = std::move(*loader);
  const bool signed_chain = ParseLoaderName(settings.uefi_loader) == BootChain::kSigned;
  auto uefi = CreateBootLoader(
      settings.uefi_loader,
      {settings.pxe_dir, signed_chain ? settings.signed_loader_dir : settings.loader_dir,
       settings.uefi_file});
  if (!uefi.ok()) return uefi.status();
  boot->uefi_loader_ = std::move(*uefi);
  // The other one, for the nodes and profiles that choose it; the signed
  // chain only when its packages are installed (preflight says when not).
  auto other = CreateBootLoader(
      LoaderName(signed_chain ? BootChain::kIpxe : BootChain::kSigned),
      {settings.pxe_dir, signed_chain ? settings.loader_dir : settings.signed_loader_dir,
       settings.uefi_file});
  if (!other.ok()) return other.status();
  bool present = true;
  for (const auto& f : (*other)->TftpFiles()) present &= access(f.source.c_str(), R_OK) == 0;
  if (present) boot->uefi_other_ = std::move(*other);
  return boot;
}

const BootLoader& BootService::UefiLoaderFor(const NodeRecord& node) const {
  std::string want = node.uefi_loader;
  if (want.empty() && !node.profile_version.empty() && settings_.profile_uefi_loader)
    want = settings_.profile_uefi_loader(node.profile_version);
  if (uefi_other_ && want == uefi_other_->name()) return *uefi_other_;
  return *uefi_loader_;
}

ScriptContext BootService::Context(const NodeRecord* node) const {
  ScriptContext c;
  c.boot_url = boot_url();
  c.retry_delay_s = settings_.retry_delay_s;
  if (node) {
    c.mac = node->mac;
    c.hostname = node->hostname;
    c.name = node->name();
    c.state = std::string(ToString(node->state));
  }
  return c;
}

void BootService::set_console_target(const std::string& target) {
  std::lock_guard lock(url_mu_);
  settings_.console_target = target;
}

void BootService::set_boot_url(const std::string& url) {
  std::lock_guard lock(url_mu_);
  settings_.boot_url = url;
}

std::string BootService::boot_url() const {
  std::lock_guard lock(url_mu_);
  return settings_.boot_url;
}

HttpResponse BootService::StartScript() const {
  auto text = loader_->StartScript(Context(nullptr));
  if (!text.ok()) return HttpResponse::FromStatus(text.status());
  return Script(std::move(*text));
}

std::string BootService::KernelCommandLine(const NodeRecord& node, const ImageVersion& image,
                                           const BootLoader& loader) const {
  std::string cmd = loader.InitrdArguments(Initrds(node.mac, image));
  // No secret here: every user of the node can read /proc/cmdline.
  cmd += (cmd.empty() ? "" : " ") + std::string("provision.url=") + boot_url() +
         " provision.mac=" + node.mac + " provision.node=" + node.hostname +
         " provision.image=" + image.ref();
  {
    std::lock_guard lock(url_mu_);
    if (!settings_.console_target.empty()) cmd += " provision.console=" + settings_.console_target;
  }
  if (settings_.root_args) {
    std::string root = settings_.root_args(image);
    if (!root.empty()) cmd += " " + root;
  }
  if (settings_.profile_kernel_args && !node.profile_version.empty())
    for (const auto& a : settings_.profile_kernel_args(node.profile_version)) cmd += " " + a;
  return cmd;
}

HttpResponse BootService::NodeScript(const std::string& mac_text, const std::string& remote) {
  auto mac = NormalizeMac(mac_text);
  if (!mac.ok()) return HttpResponse::FromStatus(mac.status());
  auto node = RecordStage(*mac, BootStage::kScript, "from " + remote, remote);
  if (!node.ok()) return HttpResponse::FromStatus(node.status());
  auto text = RenderNodeScript(*loader_, *node);
  if (!text.ok()) return HttpResponse::FromStatus(text.status());
  return Script(std::move(*text));
}

Result<std::string> BootService::RenderNodeScript(const BootLoader& loader,
                                                  const NodeRecord& node) {
  const ScriptContext context = Context(&node);
  switch (node.state) {
    case NodeState::kDiscovered:
      return loader.DiscoveredScript(context);
    case NodeState::kRetired:
    case NodeState::kMaintenance:
      return loader.LocalScript(context);
    default:
      break;
  }
  // A machine that boots its own OS is never netbooted: if its firmware
  // asks, it is told to boot from its disk.
  if (node.installed) return loader.LocalScript(context);
  auto image = node.image_version.empty()
                   ? Result<ImageVersion>(Status::NotFound("it has no profile (and so no image)"))
                   : images_.Resolve(node.image_version);
  if (image.ok() && settings_.verify_image) {
    Status verified = settings_.verify_image(*image);
    if (!verified.ok())
      image =
          Status::Error(Code::kUnavailable, "the root of " + image->ref() +
                                                " cannot be read over NFS: " + verified.message());
  }
  const std::string tftp_dir = loader.TftpImageDir(image.ok() ? image->ref() : "");
  if (image.ok() && !tftp_dir.empty()) {
    if (Status linked = LinkTftpImage(loader, *image); !linked.ok()) image = linked;
  }
  if (!image.ok()) {
    EventRecord e{.node_id = node.id,
                  .node = node.name(),
                  .kind = "boot-error",
                  .detail = "script: " + image.status().message(),
                  .who = "boot"};
    store_.RecordEvent(e);
    return loader.UnavailableScript(context, image.status().message());
  }
  NodeBootConfig boot;
  boot.context = context;
  boot.profile = node.profile_version;
  boot.image = image->ref();
  boot.max_tries = settings_.max_tries;
  // Spreads the retries of many nodes; no need for a random device per request.
  thread_local std::minstd_rand jitter(std::random_device{}());
  boot.retry_jitter_s = static_cast<int>(1 + jitter() % 5);
  if (!tftp_dir.empty()) {
    // By TFTP, from the root grub booted from; the initrd asks for its
    // ticket itself.
    boot.kernel_url = "/" + tftp_dir + "/vmlinuz";
    boot.initrds = {{"initrd.img", "/" + tftp_dir + "/initrd.img"}};
    boot.cmdline = KernelCommandLine(node, *image, loader);
    return loader.NodeScript(boot);
  }
  // The hot path (a storm of script requests) reads the outstanding
  // ticket from the row it has; only a new boot writes one.
  if (node.ticket.empty()) {
    if (auto ticket = IssueTicket(node.id); !ticket.ok()) return ticket.status();
  }
  boot.files_url = FilesUrl(node.mac);
  // ?v=: the version this script is for (see NodeFile).
  boot.kernel_url = boot.files_url + "/vmlinuz?v=" + image->version;
  boot.initrds = Initrds(node.mac, *image);
  boot.cmdline = KernelCommandLine(node, *image, loader);
  return loader.NodeScript(boot);
}

}  // namespace prov
