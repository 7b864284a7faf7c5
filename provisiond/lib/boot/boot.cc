#include "boot/boot.h"

#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <random>

#include "base/file_util.h"
#include "base/mac.h"
#include "base/tar.h"
#include "store/node_state.h"

namespace prov {
namespace {

HttpResponse Script(std::string text) {
  HttpResponse r = HttpResponse::Text(200, std::move(text), "text/plain; charset=utf-8");
  r.headers.emplace_back("Cache-Control", "no-store");
  return r;
}

// "52-54-00-00-00-01": how dnsmasq names a client's directory.
bool IsHyphenatedMac(std::string_view name) {
  auto mac = NormalizeMac(name);
  return mac.ok() && HyphenatedMac(*mac) == name;
}

// The name proxy-DHCP's PXE menu makes of a file ("ipxe.efi" -> "ipxe.0").
std::string ProxyName(const std::string& file) {
  return file.substr(0, file.find('.')) + ".0";
}

// States in which a boot request means the node is (re)booting now.
bool BootMovesToBooting(NodeState s) {
  return s == NodeState::kEnrolled || s == NodeState::kBooted || s == NodeState::kConfiguring ||
         s == NodeState::kReady || s == NodeState::kFailed;
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

std::vector<TftpFile> BootService::TftpFiles() const {
  std::vector<TftpFile> out = loader_->TftpFiles();
  for (const BootLoader* l : {uefi_loader_.get(), uefi_other_.get()}) {
    if (!l) continue;
    for (auto& f : l->TftpFiles())
      if (std::find(out.begin(), out.end(), f) == out.end()) out.push_back(f);
  }
  return out;
}

Status BootService::WriteTftpStartScripts() {
  for (const BootLoader* l : {loader_.get(), uefi_loader_.get(), uefi_other_.get()}) {
    if (!l) continue;
    const std::string path = l->TftpScriptPath({.start = true, .node = ""});
    if (path.empty() || settings_.tftp_dir.empty()) continue;
    auto text = l->StartScript(Context(nullptr));
    if (!text.ok()) return text.status();
    Status s = WriteTftpFile(path, *text);
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

Status BootService::WriteTftpFile(const std::string& path, const std::string& text) {
  const std::string full = settings_.tftp_dir + "/" + path;
  Status s = MakeDirs(full.substr(0, full.rfind('/')));
  return s.ok() ? WriteFileAtomic(full, text, 0644) : s;
}

void BootService::WriteTftpNodeScript(const std::string& mac) {
  if (settings_.tftp_dir.empty()) return;
  auto node = store_.FindNode(mac);
  if (!node.ok()) return;
  const BootLoader& l = UefiLoaderFor(*node);
  const std::string path = l.TftpScriptPath({.start = false, .node = mac});
  if (path.empty()) return;
  auto text = RenderNodeScript(l, *node);
  if (!text.ok()) {
    spdlog::warn("{}'s {} config: {}", node->name(), l.title(), text.status().message());
    return;
  }
  std::lock_guard lock(tftp_mu_);
  auto it = tftp_written_.find(path);
  if (it != tftp_written_.end() && it->second == *text) return;
  if (Status s = WriteTftpFile(path, *text); !s.ok()) {
    spdlog::warn("{}'s {} config: {}", node->name(), l.title(), s.message());
    return;
  }
  if (tftp_written_.size() > 100000) tftp_written_.clear();  // bounded; only saves writes
  tftp_written_[path] = *text;
}

void BootService::RecordTftpSent(const std::string& ip, const std::string& file) {
  // dnsmasq logs the full path; the loaders know paths in the TFTP root.
  std::string_view name = file;
  if (!settings_.tftp_dir.empty() && name.starts_with(settings_.tftp_dir + "/"))
    name.remove_prefix(settings_.tftp_dir.size() + 1);
  // A node's own directory (SyncTftpNodeDirs): the file it links to names
  // the stage ("52-54-00-00-00-01/shimx64.efi" -> ../ipxe.efi).
  std::string resolved;
  if (const size_t slash = name.find('/');
      slash != std::string_view::npos && IsHyphenatedMac(name.substr(0, slash))) {
    std::error_code ec;
    const auto target =
        std::filesystem::read_symlink(settings_.tftp_dir + "/" + std::string(name), ec);
    resolved = ec ? std::string(name.substr(slash + 1)) : target.filename().string();
    name = resolved;
  }
  std::optional<BootStage> stage;
  for (const BootLoader* l : {loader_.get(), uefi_loader_.get(), uefi_other_.get()})
    if (l && !stage) stage = l->TftpStage(name);
  if (!stage) return;
  if (auto n = store_.FindNodeByIp(ip); n.ok())
    NoteStage(n->mac, *stage, std::string(name.substr(name.rfind('/') + 1)), ip);
}

void BootService::NoteStage(const std::string& mac, BootStage stage, const std::string& detail,
                            const std::string& ip) {
  if (auto n = RecordStage(mac, stage, detail, ip); !n.ok())
    spdlog::warn("{}: stage {} not recorded: {}", mac, ToString(stage), n.status().message());
}

const BootLoader& BootService::UefiLoaderFor(const NodeRecord& node) const {
  std::string want = node.uefi_loader;
  if (want.empty() && !node.profile_version.empty() && settings_.profile_uefi_loader)
    want = settings_.profile_uefi_loader(node.profile_version);
  if (uefi_other_ && want == uefi_other_->name()) return *uefi_other_;
  return *uefi_loader_;
}

// The links of a node's directory for `loader`, by name: the default UEFI
// loader's first stage (and its proxy-DHCP name) to `loader`'s, the BIOS
// loader's as it is, `loader`'s files, and the first folder of every path it
// reads its scripts and images under.
std::map<std::string, std::string> BootService::NodeDirLinks(const BootLoader& loader) const {
  std::map<std::string, std::string> links;
  const std::string from = uefi_loader_->FirstStage(ClientArch::kUefiX64);
  const std::string to = loader.FirstStage(ClientArch::kUefiX64);
  links[from] = to;
  links[ProxyName(from)] = to;
  const std::string bios = loader_->FirstStage(ClientArch::kBios);
  links.emplace(bios, bios);
  links.emplace(ProxyName(bios), ProxyName(bios));
  for (const auto& f : loader.TftpFiles()) links.emplace(f.name, f.name);
  for (const std::string& path :
       {loader.TftpScriptPath({.start = true, .node = ""}),
        loader.TftpScriptPath({.start = false, .node = "x"}), loader.TftpImageDir("x@y")})
    if (const size_t slash = path.find('/'); slash != std::string::npos && slash > 0)
      links.emplace(path.substr(0, slash), path.substr(0, slash));
  return links;
}

int BootService::SyncTftpNodeDirs() {
  if (settings_.tftp_dir.empty()) return 0;
  const int64_t version = store_.BootLoadersVersion();
  std::lock_guard lock(tftp_mu_);
  if (version == tftp_dirs_version_) return 0;
  namespace fs = std::filesystem;
  std::error_code ec;
  if (Status s = MakeDirs(settings_.tftp_dir); !s.ok()) {
    spdlog::warn("TFTP root: {}", s.message());
    return 0;
  }
  if (tftp_dirs_version_ < 0) {
    // What an earlier run left: each is checked against the inventory below.
    for (const auto& e : fs::directory_iterator(settings_.tftp_dir, ec))
      if (IsHyphenatedMac(e.path().filename().string()))
        tftp_dirs_[e.path().filename().string()] = "";
  }
  std::map<std::string, std::string> want;  // mac-hyphen -> loader
  // Only the nodes that may choose: a large inventory is not read whole.
  std::vector<std::string> versions;
  if (uefi_other_ && settings_.profile_uefi_loader)
    for (const auto& v : store_.ProfileVersionsInUse())
      if (settings_.profile_uefi_loader(v) == uefi_other_->name()) versions.push_back(v);
  for (const auto& n : store_.UefiLoaderChoosers(versions)) {
    const BootLoader& l = UefiLoaderFor(n);
    if (&l == uefi_other_.get()) {
      want[HyphenatedMac(n.mac)] = std::string(l.name());
    } else if (!uefi_other_ && !n.uefi_loader.empty() && n.uefi_loader != l.name()) {
      spdlog::warn("{} asks for the UEFI loader {}, whose files are not installed: it gets {}",
                   n.name(), n.uefi_loader, l.title());
    }
  }
  int changed = 0;
  for (const auto& [dir, loader] : tftp_dirs_) {
    auto it = want.find(dir);
    if (it != want.end() && it->second == loader) continue;
    fs::remove_all(settings_.tftp_dir + "/" + dir, ec);
    if (it == want.end()) ++changed;
  }
  std::map<std::string, std::string> made;
  for (const auto& [dir, loader] : want) {
    auto have = tftp_dirs_.find(dir);
    if (have != tftp_dirs_.end() && have->second == loader) {
      made[dir] = loader;
      continue;
    }
    // Made aside, then renamed into place: dnsmasq never sees half of one.
    const std::string tmp = settings_.tftp_dir + "/." + dir + ".tmp";
    const std::string path = settings_.tftp_dir + "/" + dir;
    fs::remove_all(tmp, ec);
    fs::create_directory(tmp, ec);
    for (const auto& [name, target] : NodeDirLinks(*uefi_other_))
      if (!ec) fs::create_symlink("../" + target, tmp + "/" + name, ec);
    if (!ec) {
      chmod(tmp.c_str(), 0755);
      fs::remove_all(path, ec);
      fs::rename(tmp, path, ec);
    }
    if (ec) {
      spdlog::warn("TFTP directory {} for {}: {}", path, loader, ec.message());
      fs::remove_all(tmp, ec);
      continue;
    }
    made[dir] = loader;
    ++changed;
  }
  tftp_dirs_ = std::move(made);
  tftp_dirs_version_ = version;
  return changed;
}

Status BootService::LinkTftpImage(const BootLoader& loader, const ImageVersion& image) {
  const std::string dir = settings_.tftp_dir + "/" + loader.TftpImageDir(image.ref());
  std::error_code ec;
  if (std::filesystem::exists(dir + "/initrd.img", ec)) return Status::Ok();
  Status s = MakeDirs(dir);
  if (!s.ok()) return s;
  // Symbolic links: dnsmasq reads through them (as user nobody: the image
  // store must be readable by others, as it is for the NFS export).
  for (const auto& [from, name] :
       {std::pair{image.kernel, "vmlinuz"}, std::pair{image.initrd, "initrd.img"}}) {
    const std::string tmp = dir + "/." + name + ".tmp";
    std::filesystem::remove(tmp, ec);
    std::filesystem::create_symlink(from, tmp, ec);
    if (!ec) std::filesystem::rename(tmp, dir + "/" + name, ec);
    if (ec) return Status::Internal("linking " + from + " into the TFTP root: " + ec.message());
  }
  return Status::Ok();
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

std::string BootService::FilesUrl(const std::string& mac) const {
  return boot_url() + "/boot/" + HyphenatedMac(mac);
}

std::vector<BootFile> BootService::Initrds(const std::string& mac,
                                           const ImageVersion& image) const {
  // ?v= names the version the script was rendered for (see NodeFile); the
  // ticket comes after the image's initrd, which the kernel unpacks first.
  return {{"initrd.img", FilesUrl(mac) + "/initrd.img?v=" + image.version},
          {"ticket.img", FilesUrl(mac) + "/ticket.img"}};
}

Result<std::string> BootService::IssueTicket(int64_t node_id) {
  std::string ticket;
  Status s = store_.Transact([&](StoreTx& tx) -> Status {
    auto n = tx.NodeById(node_id);
    if (!n.ok()) return n.status();
    if (!n->ticket.empty()) {
      ticket = n->ticket;
      return Status::Ok();
    }
    n->ticket = ticket = RandomHex(16);
    return tx.UpdateNode(*n);
  });
  if (!s.ok()) return s;
  return ticket;
}

HttpResponse BootService::TicketImage(const HttpRequest& request, const std::string& mac) {
  auto node = store_.FindNode(mac);
  if (!node.ok()) return HttpResponse::FromStatus(node.status());
  if (node->ticket.empty())
    return HttpResponse::Error(
        404, "no boot of " + node->name() + " waits for a ticket (its boot script issues one)");
  if (settings_.reserved_addresses && request.remote != node->ip) {
    EventRecord e{.node_id = node->id,
                  .node = node->name(),
                  .kind = "refused",
                  .detail = "boot ticket asked for from " + request.remote + ", not from " +
                            (node->ip.empty() ? "its reserved address (none yet)" : node->ip),
                  .who = "boot"};
    store_.RecordEvent(e);
    return HttpResponse::Error(
        403, "the boot ticket of " + node->name() + " is served to its reserved address only");
  }
  HttpResponse r = HttpResponse::Text(200,
                                      WriteCpio({{"provision", "", 0700, 0, 0, true},
                                                 {"provision/ticket", node->ticket + "\n", 0400}},
                                                NowMs() / 1000),
                                      "application/octet-stream");
  r.headers.emplace_back("Cache-Control", "no-store");
  return r;
}

HttpResponse BootService::TicketText(const HttpRequest& request, const std::string& mac) {
  auto node = store_.FindNode(mac);
  if (!node.ok()) return HttpResponse::FromStatus(node.status());
  std::string refusal;
  if (!request.FromPrivilegedPort())
    refusal = "from port " + std::to_string(request.remote_port) +
              " (only root on the node can use a port below 1024)";
  else if (settings_.reserved_addresses && request.remote != node->ip)
    refusal = "from " + request.remote + ", not from " +
              (node->ip.empty() ? "its reserved address (none yet)" : node->ip);
  else if (node->state != NodeState::kBooting)
    refusal = "while it is " + std::string(ToString(node->state)) +
              " (a ticket is for a boot through the boot path)";
  if (!refusal.empty()) {
    EventRecord e{.node_id = node->id,
                  .node = node->name(),
                  .kind = "refused",
                  .detail = "boot ticket asked for " + refusal,
                  .who = "boot"};
    store_.RecordEvent(e);
    return HttpResponse::Error(403,
                               "no boot ticket for " + node->name() + ": asked for " + refusal);
  }
  auto ticket = node->ticket.empty() ? IssueTicket(node->id) : Result<std::string>(node->ticket);
  if (!ticket.ok()) return HttpResponse::FromStatus(ticket.status());
  HttpResponse r = HttpResponse::Text(200, *ticket + "\n", "text/plain");
  r.headers.emplace_back("Cache-Control", "no-store");
  return r;
}

Result<NodeRecord> BootService::RecordStage(const std::string& mac, BootStage stage,
                                            const std::string& detail, const std::string& ip) {
  constexpr int64_t kRepeatWindowMs = 3000;
  // An unknown machine that keeps asking (or someone making up requests in
  // its name) is recorded once a minute, not once a request.
  constexpr int64_t kDiscoveredWindowMs = 60000;
  const std::string key = mac + '\0' + std::string(ToString(stage));
  const int64_t now = NowMs();
  // The hot path (a storm of requests): a node already booting that asks for
  // the same stage again needs no write.
  auto found = store_.FindNode(mac);
  if (found.ok() && found->stage == stage &&
      (found->state == NodeState::kBooting || found->state == NodeState::kDiscovered)) {
    const int64_t window =
        found->state == NodeState::kDiscovered ? kDiscoveredWindowMs : kRepeatWindowMs;
    std::lock_guard lock(recent_mu_);
    auto it = recent_.find(key);
    if (it != recent_.end() && now - it->second < window) return found;
  }
  const std::string text = StageText(stage, detail);
  NodeRecord result;
  bool capped = false;
  std::string staged;  // the event's text, when one was written
  BootStage staged_stage = stage;
  Status s = store_.Transact([&](StoreTx& tx) -> Status {
    auto current = tx.FindNode(mac);
    if (!current.ok()) {
      if (tx.CountInState(NodeState::kDiscovered) >= settings_.max_discovered) {
        capped = true;
        return Status::Ok();
      }
      NodeRecord n;
      n.mac = mac;
      n.ip = ip;
      n.state = NodeState::kDiscovered;
      n.stage = stage;
      n.last_seen_ms = now;
      auto inserted = tx.InsertNode(n);
      if (!inserted.ok()) return inserted.status();
      result = *inserted;
      EventRecord e{.node_id = inserted->id,
                    .node = mac,
                    .kind = "discovered",
                    .detail = "unknown MAC seen at " + text,
                    .who = "boot"};
      return tx.AppendEvent(e);
    }
    NodeRecord node = *current;
    // After the initrd is downloaded, a DHCP request is the initrd bringing
    // up the network: a stage of its own, not a new boot.
    if (stage == BootStage::kDhcp && node.state == NodeState::kBooting &&
        (node.stage == BootStage::kInitrd || node.stage == BootStage::kKernel)) {
      node.stage = BootStage::kNetwork;
      node.last_seen_ms = now;
      Status u = tx.UpdateNode(node);
      if (!u.ok()) return u;
      result = node;
      EventRecord e{.node_id = node.id,
                    .node = node.name(),
                    .kind = "boot",
                    .detail = StageText(BootStage::kNetwork, detail + " (the initrd's DHCP)"),
                    .who = "boot",
                    .stage = BootStage::kNetwork};
      staged = e.detail;
      staged_stage = BootStage::kNetwork;
      return tx.AppendEvent(e);
    }
    // A DHCP renewal from a running node is not a boot.
    if (stage == BootStage::kDhcp && !BootMovesToBooting(node.state) &&
        node.state != NodeState::kBooting && node.state != NodeState::kDiscovered) {
      node.last_seen_ms = now;
      result = node;
      return tx.UpdateNode(node);
    }
    node.stage = stage;
    node.last_seen_ms = now;
    // An address learnt from a request is only the peer's: with reservations
    // (full DHCP) only dnsmasq's lease counts, or a request from anywhere
    // could claim the address a node's ticket is then served to.
    if (node.ip.empty() && !ip.empty() &&
        (!settings_.reserved_addresses || stage == BootStage::kDhcp))
      node.ip = ip;
    if (BootMovesToBooting(node.state) && node.state != NodeState::kBooting &&
        !(stage == BootStage::kDhcp && node.state != NodeState::kEnrolled &&
          node.state != NodeState::kFailed)) {
      Status t = tx.Transition(node, NodeState::kBooting, text, "boot");
      if (!t.ok()) return t;
    } else {
      Status u = tx.UpdateNode(node);
      if (!u.ok()) return u;
    }
    result = node;
    EventRecord e{.node_id = node.id,
                  .node = node.name(),
                  .kind = "boot",
                  .detail = text,
                  .who = "boot",
                  .stage = stage};
    staged = text;
    return tx.AppendEvent(e);
  });
  if (!s.ok()) return s;
  if (!staged.empty() && settings_.on_stage) settings_.on_stage(result, staged_stage, staged);
  if (capped) {
    // Said once a minute at most: the flood is what is being bounded.
    static std::atomic<int64_t> last_said{0};
    if (now - last_said.exchange(now) > 60000)
      spdlog::warn("{} discovered nodes already (discovery.max_pending): {} is not recorded",
                   settings_.max_discovered, mac);
    NodeRecord unknown;
    unknown.mac = mac;
    unknown.state = NodeState::kDiscovered;
    return unknown;
  }
  std::lock_guard lock(recent_mu_);
  if (recent_.size() > 100000) recent_.clear();  // bounded; only an optimization
  recent_[key] = now;
  return result;
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

namespace {

// Whether a request starts a download (a Range request for a later part is
// the same download continuing): only those are boot stages.
bool StartsDownload(const HttpRequest& request) {
  const std::string range = request.Header("range");
  return range.empty() || range.rfind("bytes=0-", 0) == 0;
}

}  // namespace

std::string BootService::HttpLoaderUrl() const {
  if (!loader_->TftpScriptPath(ScriptName{.start = true, .node = ""}).empty()) return "";
  return boot_url() + "/boot/" + loader_->FirstStage(ClientArch::kUefiX64);
}

HttpResponse BootService::LoaderFile(const HttpRequest& request, const std::string& name) {
  if (!loader_->TftpScriptPath(ScriptName{.start = true, .node = ""}).empty())
    return HttpResponse::Error(404, "no boot script '" + name + "'");
  for (const auto& f : loader_->TftpFiles()) {
    if (f.name != name) continue;
    struct stat st {};
    if (stat(f.source.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      return HttpResponse::Error(404, f.source + " is missing on the control node (" +
                                          std::string(loader_->package()) + ")");
    if (request.method == "GET" && StartsDownload(request)) RecordTftpSent(request.remote, name);
    return ServeFile(
        request, f.source, static_cast<uint64_t>(st.st_size),
        "\"" + name + "-" + std::to_string(st.st_size) + "-" + std::to_string(st.st_mtime) + "\"",
        "application/efi");
  }
  return HttpResponse::Error(404, "no boot script or loader '" + name + "'");
}

HttpResponse BootService::NodeFile(const HttpRequest& request, const std::string& mac_text,
                                   const std::string& file) {
  auto mac = NormalizeMac(mac_text);
  if (!mac.ok()) return HttpResponse::FromStatus(mac.status());
  if (file == "overlay.tar") {
    if (!settings_.render_overlay) return HttpResponse::Error(404, "no overlays are served");
    auto tar = settings_.render_overlay(*mac, request);
    if (!tar.ok()) return HttpResponse::FromStatus(tar.status());
    HttpResponse r = HttpResponse::Text(200, std::move(*tar), "application/x-tar");
    r.headers.emplace_back("Cache-Control", "no-store");
    return r;
  }
  if (file == "ticket.img") return TicketImage(request, *mac);
  if (file == "ticket") return TicketText(request, *mac);
  if (file != "vmlinuz" && file != "initrd.img")
    return HttpResponse::Error(
        404,
        "no boot file '" + file + "' (vmlinuz, initrd.img, ticket.img, ticket or overlay.tar)");
  auto node = store_.FindNode(*mac);
  if (!node.ok()) return HttpResponse::FromStatus(node.status());
  if (node->image_version.empty())
    return HttpResponse::Error(404, node->name() + " has no image (no profile)");
  // The script names the version it was rendered for, so a build finishing
  // between the script and the downloads cannot mix two versions in one boot.
  std::string ref = node->image_version;
  if (std::string v = request.Query("v"); !v.empty()) ref = ref.substr(0, ref.find('@')) + "@" + v;
  auto image = images_.Resolve(ref);
  if (!image.ok()) return HttpResponse::FromStatus(image.status());
  const bool kernel = file == "vmlinuz";
  if (StartsDownload(request))
    NoteStage(*mac, kernel ? BootStage::kKernel : BootStage::kInitrd, image->ref(), request.remote);
  return ServeFile(request, kernel ? image->kernel : image->initrd,
                   kernel ? image->kernel_size : image->initrd_size,
                   "\"" + image->version + "-" + file + "\"", "application/octet-stream");
}

}  // namespace prov
