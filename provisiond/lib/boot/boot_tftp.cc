// The TFTP tree dnsmasq serves: the loaders' files and start scripts, a
// folder per node that phoned no TFTP request yet (links to its loader's
// files and image), its script written when DHCP gives it an address, and
// the files TFTP sent read back as boot stages.
#include "boot/boot.h"

#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>

#include "base/file_util.h"
#include "base/mac.h"

namespace prov {

namespace {

// "52-54-00-00-00-01": how dnsmasq names a client's directory.
bool IsHyphenatedMac(std::string_view name) {
  auto mac = NormalizeMac(name);
  return mac.ok() && HyphenatedMac(*mac) == name;
}

// The name proxy-DHCP's PXE menu makes of a file ("ipxe.efi" -> "ipxe.0").
std::string ProxyName(const std::string& file) {
  return file.substr(0, file.find('.')) + ".0";
}

}  // namespace

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

}  // namespace prov
