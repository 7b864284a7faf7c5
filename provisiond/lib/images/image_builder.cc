#include "images/image_builder.h"

#include <curl/curl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "base/process.h"
#include "store/store.h"

namespace prov {
namespace fs = std::filesystem;

Status CheckMirror(const ImageManifest& m, int timeout_s) {
  const std::string url =
      m.mirror + (m.mirror.back() == '/' ? "" : "/") + "dists/" + m.suite + "/Release";
  if (m.mirror.rfind("file://", 0) == 0) {
    if (!fs::exists(url.substr(7)))
      return Status::Error(Code::kUnavailable, "mirror " + m.mirror + " has no " + url.substr(7));
    return Status::Ok();
  }
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), &curl_easy_cleanup);
  if (!curl) return Status::Internal("curl_easy_init failed");
  curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_NOBODY, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT, static_cast<long>(timeout_s));
  curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
  CURLcode rc = curl_easy_perform(curl.get());
  if (rc != CURLE_OK)
    return Status::Error(Code::kUnavailable, "mirror " + m.mirror + " cannot be reached: " +
                                                 curl_easy_strerror(rc) + " (" + url + ")");
  long code = 0;
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &code);
  if (code != 200)
    return Status::Error(Code::kUnavailable, "mirror " + m.mirror + " has no suite '" + m.suite +
                                                 "': " + url + " answered HTTP " +
                                                 std::to_string(code));
  return Status::Ok();
}

Result<std::string> HashTree(const std::string& root) {
  std::vector<std::string> paths;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::none, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) return Status::Internal("cannot walk " + root + ": " + ec.message());
    paths.push_back(it->path().string().substr(root.size()));
  }
  std::sort(paths.begin(), paths.end());
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
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
    EVP_DigestUpdate(ctx, head.data(), head.size() + 1);
    if (S_ISREG(st.st_mode)) {
      std::ifstream in(full, std::ios::binary);
      while (in) {
        in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        EVP_DigestUpdate(ctx, buf.data(), static_cast<size_t>(in.gcount()));
      }
    }
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  EVP_DigestFinal_ex(ctx, md, &len);
  EVP_MD_CTX_free(ctx);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) {
    out += hex[md[i] >> 4];
    out += hex[md[i] & 15];
  }
  return out;
}

namespace {

Status Run(const ProcessSpec& spec, int timeout_s, const BuildProgress& progress,
           const std::string& what, const std::atomic<bool>* cancel) {
  auto r = RunProcess(
      spec, timeout_s * 1000,
      [&](const std::string& line) {
        if (progress) progress(what + ": " + line);
      },
      cancel);
  if (r.ok() && cancel && *cancel) return Status::Error(Code::kUnavailable, what + " was stopped");
  if (!r.ok()) return r.status();
  if (r->timed_out)
    return Status::Error(Code::kUnavailable,
                         what + " timed out after " + std::to_string(timeout_s) + " s");
  if (r->exit_code != 0) {
    // The last lines say why (mmdebstrap ends with "E: ..." lines).
    std::string tail =
        r->output.size() > 1500 ? r->output.substr(r->output.size() - 1500) : r->output;
    return Status::Error(Code::kUnavailable,
                         what + " failed (exit " + std::to_string(r->exit_code) + "):\n" + tail);
  }
  return Status::Ok();
}

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

}  // namespace

Result<ImageVersion> BuildImage(const ImageManifest& m, ImageCatalog& catalog,
                                const ImageBuildOptions& opt, const BuildProgress& progress) {
  auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  const auto start = std::chrono::steady_clock::now();
  // What goes into every image must be there before minutes of mmdebstrap.
  for (const std::string& need :
       {opt.tools_dir + "/provision-facts", opt.tools_dir + "/provision-mount",
        opt.agent_dir + "/provision-hello", opt.initrd_builder})
    if (access(need.c_str(), R_OK) != 0)
      return Status::NotFound("image builds need " + need +
                              " (build provision-facts and provision-mount; "
                              "tools_dir and images_dir in the config say where)");
  say("checking mirror " + m.mirror + " for " + m.suite);
  Status s = CheckMirror(m, opt.mirror_check_timeout_s);
  if (!s.ok()) return s;

  const std::string name_dir = catalog.store_dir() + "/" + m.name;
  const std::string work = name_dir + "/.build-" + RandomHex(4);
  const std::string root = work + "/root";
  s = MakeDirs(work);
  if (!s.ok()) return s;
  // Whatever happens below, a failed build leaves nothing behind.
  struct Cleanup {
    std::string dir;
    bool keep = false;
    ~Cleanup() {
      std::error_code ec;
      if (!keep) fs::remove_all(dir, ec);
    }
  } cleanup{work};

  std::string components;
  for (const auto& c : m.components) components += (components.empty() ? "" : ",") + c;
  std::string include = m.kernel_package;
  for (const auto& p : m.packages) include += "," + p;
  ProcessSpec debootstrap;
  debootstrap.argv = {opt.mmdebstrap,
                      "--mode=root",
                      "--variant=minbase",
                      "--architectures=" + m.architecture,
                      "--components=" + components,
                      "--include=" + include,
                      "--aptopt=Acquire::Languages \"none\"",
                      "--dpkgopt=path-exclude=/usr/share/man/*",
                      "--dpkgopt=path-exclude=/usr/share/doc/*",
                      "--dpkgopt=path-include=/usr/share/doc/*/copyright",
                      "--dpkgopt=path-exclude=/usr/share/locale/*",
                      m.suite,
                      root,
                      m.mirror};
  for (const auto& src : m.apt_sources) debootstrap.argv.push_back(src.Render(m.suite));
  // The kernel's postinst would build an initramfs-tools initrd we never use.
  debootstrap.env = {"INITRD=No"};
  say("mmdebstrap " + m.suite + " with " + std::to_string(m.packages.size() + 1) + " package(s)");
  s = Run(debootstrap, opt.timeout_s, progress, "mmdebstrap", opt.cancel);
  if (!s.ok()) return s;

  say("adding files and the phone-home agent");
  for (const auto& f : m.files) {
    s = WriteInto(root, f.path, f.content, std::stoi(f.mode, nullptr, 8));
    if (!s.ok()) return s;
  }
  s = CopyInto(root, opt.tools_dir + "/provision-facts", "/usr/local/sbin/provision-facts", 0755);
  if (s.ok())
    s = CopyInto(root, opt.agent_dir + "/provision-hello", "/usr/local/sbin/provision-hello", 0755);
  if (s.ok())
    s = CopyInto(root, opt.agent_dir + "/provision-hello.service",
                 "/etc/systemd/system/provision-hello.service", 0644);
  if (!s.ok()) return s;
  std::error_code ec;
  fs::create_directories(root + "/etc/systemd/system/multi-user.target.wants", ec);
  fs::create_symlink("/etc/systemd/system/provision-hello.service",
                     root + "/etc/systemd/system/multi-user.target.wants/provision-hello.service",
                     ec);
  // The node's identity comes from its overlay at every boot, never from the
  // image (mmdebstrap copies the build host's hostname and resolv.conf in).
  fs::remove(root + "/etc/machine-id", ec);
  WriteInto(root, "/etc/machine-id", "", 0444);
  fs::remove(root + "/etc/hostname", ec);
  fs::remove(root + "/etc/resolv.conf", ec);
  WriteInto(root, "/etc/resolv.conf", "", 0644);
  for (const char* key : {"ssh_host_ed25519_key", "ssh_host_ed25519_key.pub", "ssh_host_rsa_key",
                          "ssh_host_rsa_key.pub", "ssh_host_ecdsa_key", "ssh_host_ecdsa_key.pub"})
    fs::remove(root + "/etc/ssh/" + key, ec);
  // sshd makes its host keys at boot when they are missing (in the RAM overlay).
  // (Debian's unit checks the config with `sshd -t` first, which fails
  // without keys: make the keys, then check.)
  WriteInto(root, "/etc/systemd/system/ssh.service.d/provision-hostkeys.conf",
            "[Service]\nExecStartPre=\nExecStartPre=/usr/bin/ssh-keygen "
            "-A\nExecStartPre=/usr/sbin/sshd -t\n",
            0644);

  // The kernel: the newest /boot/vmlinuz-* the kernel package installed.
  std::string kernel;
  for (const auto& e : fs::directory_iterator(root + "/boot", ec))
    if (e.path().filename().string().rfind("vmlinuz-", 0) == 0 && e.path().string() > kernel)
      kernel = e.path().string();
  if (kernel.empty())
    return Status::NotFound("the image has no /boot/vmlinuz-*: is '" + m.kernel_package +
                            "' a kernel package?");
  fs::copy_file(kernel, work + "/vmlinuz", fs::copy_options::overwrite_existing, ec);
  if (ec) return Status::Internal("cannot copy the kernel: " + ec.message());
  // Remove what initramfs-tools may have left: the node boots our initrd.
  for (const auto& e : fs::directory_iterator(root + "/boot", ec))
    if (e.path().filename().string().rfind("initrd.img-", 0) == 0) fs::remove(e.path(), ec);

  say("building the netboot initrd");
  ProcessSpec initrd;
  initrd.argv = {"/bin/bash", opt.initrd_builder, root, work + "/initrd.img"};
  initrd.env = {"PROVISION_MOUNT=" + opt.tools_dir + "/provision-mount"};
  s = Run(initrd, 600, progress, "initrd", opt.cancel);
  if (!s.ok()) return s;

  say("hashing the root tree");
  auto hash = HashTree(root);
  if (!hash.ok()) return hash.status();
  const std::string version = hash->substr(0, 16);
  const std::string final_dir = name_dir + "/" + version;
  uint64_t files = 0, bytes = 0;
  for (auto it = fs::recursive_directory_iterator(root, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->is_regular_file(ec) && !it->is_symlink(ec)) {
      ++files;
      bytes += it->file_size(ec);
    }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  nlohmann::json meta = {
      {"name", m.name},           {"version", version},
      {"sha256", *hash},          {"manifest_sha256", m.sha256},
      {"suite", m.suite},         {"mirror", m.mirror},
      {"packages", m.packages},   {"kernel", fs::path(kernel).filename().string()},
      {"files", files},           {"bytes", bytes},
      {"build_seconds", seconds}, {"created", NowMs()}};
  s = WriteFileAtomic(work + "/image.json", meta.dump(2) + "\n");
  if (!s.ok()) return s;
  if (fs::exists(final_dir + "/image.json")) {
    say("the same content exists already as " + m.name + "@" + version);
  } else {
    fs::rename(work, final_dir, ec);
    if (ec) return Status::Internal("cannot move the build to " + final_dir + ": " + ec.message());
    cleanup.keep = true;
  }
  s = WriteFileAtomic(name_dir + "/current", version + "\n");
  if (!s.ok()) return s;
  say("built " + m.name + "@" + version + ": " + std::to_string(files) + " files, " +
      std::to_string(bytes / (1024 * 1024)) + " MiB in " +
      std::to_string(static_cast<int>(seconds)) + " s");
  return catalog.Resolve(m.name + "@" + version);
}

}  // namespace prov
