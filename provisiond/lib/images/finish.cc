// The finishing step of an image build (see finish.h): what every image gets,
// whatever its source, and the commit into the catalog.
#include "images/finish.h"

#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "base/file_util.h"
#include "store/store.h"

namespace prov {
namespace fs = std::filesystem;

namespace {

Status WriteInto(const std::string& root, const std::string& path, const std::string& content,
                 int mode) {
  Status s = MakeDirs(fs::path(root + path).parent_path().string());
  if (!s.ok()) return s;
  return WriteFileAtomic(root + path, content, mode);
}

Status CopyInto(const std::string& root, const std::string& from, const std::string& path,
                int mode) {
  auto content = ReadFile(from);
  if (!content.ok())
    return Status::NotFound("cannot add " + path + " to the image: " + content.status().message());
  return WriteInto(root, path, *content, mode);
}

// Every entry under `dir` (sorted, recursively, symlinks not followed) as
// "relative path, type, mode, size, mtime, link target" lines into `h`.
void HashMetadata(const fs::path& dir, const std::string& label, Sha256& h) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(dir, ec))) {
    h.Update(label + " absent\n");
    return;
  }
  std::vector<std::string> lines;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    struct stat st {};
    if (lstat(it->path().c_str(), &st) != 0) continue;
    // A directory's size is its file system's business (a copy's are
    // compact): only what it holds counts.
    if (S_ISDIR(st.st_mode)) st.st_size = 0;
    std::string line = label + "/" + fs::relative(it->path(), dir, ec).string() + " " +
                       std::to_string(st.st_mode) + " " + std::to_string(st.st_size) + " " +
                       std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
    if (S_ISLNK(st.st_mode)) line += " -> " + fs::read_symlink(it->path(), ec).string();
    lines.push_back(std::move(line));
  }
  std::sort(lines.begin(), lines.end());
  for (const auto& l : lines) h.Update(l + "\n");
}

// The extended attributes of `path` (not following a link), by name.
std::map<std::string, std::string> ExtendedAttributes(const std::string& path) {
  std::map<std::string, std::string> out;
  ssize_t len = llistxattr(path.c_str(), nullptr, 0);
  if (len <= 0) return out;
  std::string names(static_cast<size_t>(len), '\0');
  len = llistxattr(path.c_str(), names.data(), names.size());
  names.resize(len > 0 ? static_cast<size_t>(len) : 0);
  for (size_t at = 0, end; at < names.size(); at = end + 1) {
    end = names.find('\0', at);
    if (end == std::string::npos) end = names.size();
    const std::string name = names.substr(at, end - at);
    const ssize_t size = lgetxattr(path.c_str(), name.c_str(), nullptr, 0);
    if (size < 0) continue;
    std::string value(static_cast<size_t>(size), '\0');
    const ssize_t got = lgetxattr(path.c_str(), name.c_str(), value.data(), value.size());
    if (got >= 0) out[name] = value.substr(0, static_cast<size_t>(got));
  }
  return out;
}

}  // namespace

Result<std::string> InitrdInputsKey(const std::string& root, const ImageManifest& m,
                                    const ImageBuildOptions& opt) {
  Sha256 h;
  h.Update("initrd-inputs:1\n");
  std::error_code ec;
  std::vector<std::string> files = {opt.tools_dir + "/provision-mount",
                                    opt.tools_dir + "/provision-fetch", "/bin/busybox"};
  const fs::path builder_dir = fs::path(opt.initrd_builder).parent_path();
  for (const auto& e : fs::directory_iterator(builder_dir, ec))
    if (e.is_regular_file(ec)) files.push_back(e.path().string());
  std::sort(files.begin() + 3, files.end());
  for (const auto& f : files) {
    // A missing one makes the builder fail: nothing to reuse then anyway.
    auto sha = Sha256File(f);
    h.Update(fs::path(f).filename().string() + " " + (sha.ok() ? *sha : "absent") + "\n");
  }
  for (const auto& mod : m.initrd_modules) h.Update("module " + mod + "\n");
  // The tree's /lib is usr/lib on a merged-/usr root: the paths resolve
  // inside it (relative links), never into the control node's own.
  HashMetadata(fs::path(root) / "lib/modules", "modules", h);
  HashMetadata(fs::path(root) / "lib/firmware", "firmware", h);
  for (const auto& e : fs::directory_iterator(fs::path(root) / "boot", ec))
    if (e.path().filename().string().rfind("vmlinuz-", 0) == 0) {
      auto sha = Sha256File(e.path().string());
      if (!sha.ok()) return sha.status();
      h.Update("kernel " + e.path().filename().string() + " " + *sha + "\n");
    }
  return h.HexDigest();
}

Result<std::string> FinishingInputsKey(const ImageBuildOptions& opt) {
  std::vector<std::string> files = {opt.tools_dir + "/provision-facts",
                                    opt.tools_dir + "/provision-mount",
                                    opt.tools_dir + "/provision-fetch"};
  std::error_code ec;
  for (const fs::path& dir :
       {fs::path(opt.agent_dir), fs::path(opt.initrd_builder).parent_path()}) {
    std::vector<std::string> in_dir;
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.is_regular_file(ec)) in_dir.push_back(e.path().string());
    std::sort(in_dir.begin(), in_dir.end());
    files.insert(files.end(), in_dir.begin(), in_dir.end());
  }
  Sha256 h;
  h.Update("finishing-inputs:1\n");
  for (const auto& f : files) {
    auto sha = Sha256File(f);
    if (!sha.ok()) return sha.status();
    h.Update(fs::path(f).filename().string() + " " + *sha + "\n");
  }
  return h.HexDigest();
}

Result<BuildDir> BuildDir::Create(const ImageCatalog& catalog, const std::string& image_name) {
  const std::string path = catalog.store_dir() + "/" + image_name + "/.build-" + RandomHex(4);
  Status s = MakeDirs(path + "/root");
  if (!s.ok()) return s;
  return BuildDir(path);
}

BuildDir::~BuildDir() {
  // Whatever failed, a build that was not committed leaves nothing behind.
  std::error_code ec;
  if (!path_.empty()) fs::remove_all(path_, ec);
}

Status CheckFinishingInputs(const ImageBuildOptions& opt) {
  for (const std::string& need :
       {opt.tools_dir + "/provision-facts", opt.tools_dir + "/provision-mount",
        opt.tools_dir + "/provision-fetch", opt.agent_dir + "/provision-hello",
        opt.agent_dir + "/provision-console", opt.agent_dir + "/provision-storage.service",
        opt.initrd_builder})
    if (access(need.c_str(), R_OK) != 0)
      return Status::NotFound("image builds need " + need +
                              " (build provision-facts, provision-mount and provision-fetch; "
                              "tools_dir and images_dir in the config say where)");
  return Status::Ok();
}

Status AddProvisionFiles(const std::string& root, const ImageManifest& m,
                         const ImageBuildOptions& opt) {
  for (const auto& f : m.files) {
    Status s = WriteInto(root, f.path, f.content, std::stoi(f.mode, nullptr, 8));
    if (!s.ok()) return s;
  }
  Status s =
      CopyInto(root, opt.tools_dir + "/provision-facts", "/usr/local/sbin/provision-facts", 0755);
  if (s.ok())
    s = CopyInto(root, opt.agent_dir + "/provision-hello", "/usr/local/sbin/provision-hello", 0755);
  if (s.ok())
    s = CopyInto(root, opt.agent_dir + "/provision-hello.service",
                 "/etc/systemd/system/provision-hello.service", 0644);
  // The journal's half of the network console.
  if (s.ok())
    s = CopyInto(root, opt.agent_dir + "/provision-console", "/usr/local/sbin/provision-console",
                 0755);
  if (s.ok())
    s = CopyInto(root, opt.agent_dir + "/provision-console.service",
                 "/etc/systemd/system/provision-console.service", 0644);
  // The profile's local storage, set up early at each boot (runs only where
  // the node's overlay names volumes).
  if (s.ok())
    s = CopyInto(root, opt.agent_dir + "/provision-storage.service",
                 "/etc/systemd/system/provision-storage.service", 0644);
  if (!s.ok()) return s;
  std::error_code ec;
  for (auto [target, unit] :
       {std::pair<const char*, const char*>{"multi-user.target", "provision-hello.service"},
        {"multi-user.target", "provision-console.service"},
        {"local-fs.target", "provision-storage.service"}}) {
    const std::string wants = root + "/etc/systemd/system/" + target + ".wants/";
    fs::create_directories(wants, ec);
    // Already there in a tree finished before (a derived image's copy).
    if (fs::is_symlink(wants + unit, ec)) continue;
    fs::create_symlink(std::string("/etc/systemd/system/") + unit, wants + unit, ec);
    if (ec) return Status::Internal("cannot enable " + std::string(unit) + ": " + ec.message());
  }
  // The node's identity comes from its overlay at every boot, never from the
  // image (mmdebstrap copies the build host's hostname and resolv.conf in).
  for (const char* file : {"/etc/machine-id", "/etc/hostname", "/etc/resolv.conf"}) {
    fs::remove(root + file, ec);
    if (ec) return Status::Internal("cannot remove " + std::string(file) + ": " + ec.message());
  }
  s = WriteInto(root, "/etc/machine-id", "", 0444);
  if (s.ok()) s = WriteInto(root, "/etc/resolv.conf", "", 0644);
  if (!s.ok()) return s;
  for (const char* key : {"ssh_host_ed25519_key", "ssh_host_ed25519_key.pub", "ssh_host_rsa_key",
                          "ssh_host_rsa_key.pub", "ssh_host_ecdsa_key", "ssh_host_ecdsa_key.pub"}) {
    fs::remove(root + "/etc/ssh/" + key, ec);
    if (ec) return Status::Internal("cannot remove the build's /etc/ssh/" + std::string(key));
  }
  // sshd makes its host key at boot when it is missing (in the RAM overlay):
  // the Ed25519 key only, the one the hello reports and provisiond pins. An
  // RSA key (`ssh-keygen -A`) took 0.4-1.3 s of CPU here at every boot, many
  // times that on a slow node. (Debian's unit checks the config with
  // `sshd -t` first, which fails without a key: make it, then check.)
  s = WriteInto(root, "/etc/systemd/system/ssh.service.d/provision-hostkeys.conf",
                "[Service]\nExecStartPre=\n"
                "ExecStartPre=/bin/sh -c 'test -s /etc/ssh/ssh_host_ed25519_key || exec "
                "/usr/bin/ssh-keygen -q -t ed25519 -N \"\" -f /etc/ssh/ssh_host_ed25519_key'\n"
                "ExecStartPre=/usr/sbin/sshd -t\n",
                0644);
  if (!s.ok()) return s;
  return WriteInto(root, "/etc/ssh/sshd_config.d/provision-hostkey.conf",
                   "# provisiond: nodes make and offer the Ed25519 host key only.\n"
                   "HostKey /etc/ssh/ssh_host_ed25519_key\n",
                   0644);
}

Result<std::string> ExtractKernel(const std::string& root, const std::string& kernel_out,
                                  const std::string& kernel_package) {
  // The newest /boot/vmlinuz-* the kernel package installed.
  std::error_code ec;
  std::string kernel;
  for (const auto& e : fs::directory_iterator(root + "/boot", ec))
    if (e.path().filename().string().rfind("vmlinuz-", 0) == 0 && e.path().string() > kernel)
      kernel = e.path().string();
  if (kernel.empty())
    return Status::NotFound("the image has no /boot/vmlinuz-*: is '" + kernel_package +
                            "' a kernel package?");
  fs::copy_file(kernel, kernel_out, fs::copy_options::overwrite_existing, ec);
  if (ec) return Status::Internal("cannot copy the kernel: " + ec.message());
  // Remove what initramfs-tools may have left: the node boots our initrd.
  for (const auto& e : fs::directory_iterator(root + "/boot", ec))
    if (e.path().filename().string().rfind("initrd.img-", 0) == 0) fs::remove(e.path(), ec);
  return fs::path(kernel).filename().string();
}

Result<std::string> HashTree(const std::string& root) {
  std::vector<std::string> paths;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::none, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) return Status::Internal("cannot walk " + root + ": " + ec.message());
    paths.push_back(it->path().string().substr(root.size()));
  }
  if (ec) return Status::Internal("cannot walk " + root + ": " + ec.message());
  std::sort(paths.begin(), paths.end());
  Sha256 hash;
  std::vector<char> buf(1 << 20);
  for (const auto& rel : paths) {
    const std::string full = root + rel;
    struct stat st {};
    if (lstat(full.c_str(), &st) != 0) continue;
    std::string head = rel + '\0' + std::to_string(st.st_mode) + ':' + std::to_string(st.st_uid) +
                       ':' + std::to_string(st.st_gid) + '\0';
    if (S_ISLNK(st.st_mode)) {
      std::error_code lec;
      head += fs::read_symlink(full, lec).string();
    } else if (S_ISREG(st.st_mode)) {
      head += std::to_string(st.st_size);
    }
    // Extended attributes, sorted by name: a file capability is content.
    // (Most files have none: one call that answers 0.)
    for (const auto& [attr, value] : ExtendedAttributes(full))
      head += "\nxattr " + attr + "=" + value;
    hash.Update(std::string_view(head.data(), head.size() + 1));
    if (S_ISREG(st.st_mode)) {
      std::ifstream in(full, std::ios::binary);
      while (in) {
        in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        hash.Update(std::string_view(buf.data(), static_cast<size_t>(in.gcount())));
      }
    }
  }
  return hash.HexDigest();
}

Result<ImageVersion> CommitBuild(BuildDir& build, const std::string& name,
                                 const std::string& version, const nlohmann::json& meta,
                                 ImageCatalog& catalog, const BuildProgress& progress) {
  const std::string name_dir = catalog.store_dir() + "/" + name;
  const std::string final_dir = name_dir + "/" + version;
  Status s = WriteFileAtomic(build.path() + "/image.json", meta.dump(2) + "\n");
  if (!s.ok()) return s;
  // image.json is written last into a version: a directory with it is whole.
  if (fs::exists(final_dir + "/image.json")) {
    if (progress) progress("the same content exists already as " + name + "@" + version);
  } else {
    std::error_code ec;
    fs::rename(build.path(), final_dir, ec);
    if (ec) return Status::Internal("cannot move the build to " + final_dir + ": " + ec.message());
    build.Committed();
  }
  auto committed = catalog.Resolve(name + "@" + version);
  if (!committed.ok()) return committed;
  s = catalog.MakeCurrent(*committed);
  if (!s.ok()) return s;
  return committed;
}

Result<ImageVersion> FinishImage(BuildDir& build, const ImageManifest& m,
                                 const nlohmann::json& provenance, ImageCatalog& catalog,
                                 const ImageBuildOptions& opt, const BuildProgress& progress,
                                 std::chrono::steady_clock::time_point started,
                                 const std::string& fixed_version) {
  auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  const std::string root = build.root();
  say("adding files and the phone-home agent");
  Status s = AddProvisionFiles(root, m, opt);
  if (!s.ok()) return s;
  auto kernel = ExtractKernel(root, build.path() + "/vmlinuz", m.kernel_package);
  if (!kernel.ok()) return kernel.status();

  auto initrd_key = InitrdInputsKey(root, m, opt);
  if (!initrd_key.ok()) return initrd_key.status();
  bool initrd_reused = false;
  if (!opt.initrd_from.empty()) {
    auto from_meta = ReadFile(opt.initrd_from + "/image.json");
    nlohmann::json from =
        from_meta.ok() ? nlohmann::json::parse(*from_meta, nullptr, false) : nlohmann::json();
    if (from.is_object() && from.value("initrd_inputs", "") == *initrd_key) {
      std::error_code ec;
      fs::copy_file(opt.initrd_from + "/initrd.img", build.path() + "/initrd.img", ec);
      initrd_reused = !ec;
      if (initrd_reused)
        say("initrd reused from " + from.value("name", "") + "@" + from.value("version", "") +
            " (the same kernel, modules, firmware and tools)");
    }
  }
  if (!initrd_reused) {
    say("building the netboot initrd");
    ProcessSpec initrd;
    initrd.argv = {"/bin/bash", opt.initrd_builder, root, build.path() + "/initrd.img"};
    initrd.env = {"PROVISION_MOUNT=" + opt.tools_dir + "/provision-mount",
                  "PROVISION_FETCH=" + opt.tools_dir + "/provision-fetch"};
    // Every NIC driver is in the initrd; the manifest may add other modules.
    if (!m.initrd_modules.empty()) {
      std::string extra;
      for (const auto& mod : m.initrd_modules)
        extra += (extra.empty() ? "" : " ") + mod + ":required";
      initrd.env.push_back("INITRD_EXTRA_MODULES=" + extra);
    }
    s = RunBuildStep(initrd, 600, progress, "initrd", opt.cancel);
    if (!s.ok()) return s;
  }

  say("hashing the root tree");
  auto hash = HashTree(root);
  if (!hash.ok()) return hash.status();
  const std::string version = fixed_version.empty() ? hash->substr(0, 16) : fixed_version;
  uint64_t files = 0, bytes = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->is_regular_file(ec) && !it->is_symlink(ec)) {
      ++files;
      bytes += it->file_size(ec);
    }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  nlohmann::json meta = provenance.is_object() ? provenance : nlohmann::json::object();
  meta.update({{"name", m.name},
               {"version", version},
               {"sha256", *hash},
               {"manifest_sha256", m.sha256},
               {"kernel", *kernel},
               {"initrd_inputs", *initrd_key},
               {"initrd_modules", m.initrd_modules},
               {"files", files},
               {"bytes", bytes},
               {"build_seconds", seconds},
               {"created", NowMs()}});
  auto committed = CommitBuild(build, m.name, version, meta, catalog, progress);
  if (!committed.ok()) return committed;
  say("built " + m.name + "@" + version + ": " + std::to_string(files) + " files, " +
      std::to_string(bytes / (1024 * 1024)) + " MiB in " +
      std::to_string(static_cast<int>(seconds)) + " s");
  return committed;
}

}  // namespace prov
