#include "images/nfs.h"

#include <fcntl.h>
#include <nfsc/libnfs.h>
#include <spdlog/spdlog.h>
#include <sys/mount.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <sstream>
#include <thread>

#include "base/file_util.h"
#include "base/process.h"
#include "base/template.h"

namespace prov {
namespace fs = std::filesystem;
namespace {
struct ContextFree {
  void operator()(nfs_context* c) const { nfs_destroy_context(c); }
};
}  // namespace

Result<std::string> ReadOverNfs(const std::string& server, const std::string& export_path,
                                const std::string& path, size_t max_bytes, int timeout_ms) {
  std::unique_ptr<nfs_context, ContextFree> nfs(nfs_init_context());
  if (!nfs) return Status::Internal("libnfs: cannot create a context");
  nfs_set_version(nfs.get(), 4);  // NFS_V4, from libnfs-raw-nfs4.h
  nfs_set_timeout(nfs.get(), timeout_ms);
  const std::string where = "nfs://" + server + export_path;
  if (nfs_mount(nfs.get(), server.c_str(), export_path.c_str()) != 0)
    return Status::Error(Code::kUnavailable,
                         "cannot mount " + where + ": " + nfs_get_error(nfs.get()));
  nfsfh* fh = nullptr;
  if (nfs_open(nfs.get(), path.c_str(), O_RDONLY, &fh) != 0)
    return Status::Error(Code::kUnavailable,
                         "cannot open " + path + " on " + where + ": " + nfs_get_error(nfs.get()));
  std::string out(max_bytes, '\0');
  int n = nfs_read(nfs.get(), fh, max_bytes, out.data());
  std::string error = n < 0 ? nfs_get_error(nfs.get()) : "";
  nfs_close(nfs.get(), fh);
  if (n < 0)
    return Status::Error(Code::kUnavailable, "cannot read " + path + " on " + where + ": " + error);
  out.resize(static_cast<size_t>(n));
  return out;
}

namespace {  // root images

// mountinfo writes space, tab, newline and backslash as \ooo.
std::string UnescapeMountPath(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && isdigit(s[i + 1]) && isdigit(s[i + 2]) &&
        isdigit(s[i + 3])) {
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

Status RunRootTool(const std::vector<std::string>& argv, const std::string& what) {
  ProcessSpec spec;
  spec.argv = argv;
  auto r = RunProcess(spec, 3600 * 1000);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0)
    return Status::Internal(what + ": " + argv[0] + " failed (exit " +
                            std::to_string(r->exit_code) + "): " + r->output.substr(0, 2000));
  return Status::Ok();
}

}  // namespace

std::string RootImageUuid(const ImageVersion& v) {
  std::string h = Sha256Hex("provisiond root image " + v.ref()).substr(0, 32);
  h[12] = '4';                                                  // version 4 (random-looking)
  h[16] = "89ab"[std::stoi(h.substr(16, 1), nullptr, 16) & 3];  // RFC 4122 variant
  return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) +
         "-" + h.substr(20, 12);
}

Status MakeRootImage(const ImageVersion& v, const std::string& mkfs) {
  if (v.root.empty()) return Status::Ok();
  if (Status s = MakeDirs(RootMountPoint(v)); !s.ok()) return s;
  const std::string image = RootImagePath(v);
  if (fs::exists(image)) return Status::Ok();
  const std::string tmp = image + ".part";
  std::error_code ec;
  fs::remove(tmp, ec);
  // Each file keeps its own times (Python compares them with its bytecode's);
  // -U: the version's UUID, ganesha's filesystem id for it.
  Status s = RunRootTool({mkfs, "--quiet", "-U", RootImageUuid(v), tmp, v.root},
                         "the erofs image of " + v.ref());
  if (!s.ok()) {
    fs::remove(tmp, ec);
    return s;
  }
  fs::rename(tmp, image, ec);
  if (ec) return Status::Internal("cannot rename " + tmp + ": " + ec.message());
  return Status::Ok();
}

bool MountedIn(pid_t pid, const std::string& path) {
  auto text = ReadFile("/proc/" + std::to_string(pid) + "/mountinfo");
  if (!text.ok()) return false;
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    // id parent major:minor root mount-point ...
    std::istringstream fields(line);
    std::string id, parent, dev, root, point;
    fields >> id >> parent >> dev >> root >> point;
    if (UnescapeMountPath(point) == path) return true;
  }
  return false;
}

Status MountRootImage(const ImageVersion& v) {
  const std::string point = RootMountPoint(v);
  if (MountedIn(getpid(), point)) return Status::Ok();
  if (!fs::exists(RootImagePath(v)))
    return Status::Error(Code::kNotFound,
                         v.ref() + " has no erofs image (" + RootImagePath(v) + ")");
  return RunRootTool({"/bin/mount", "-t", "erofs", "-o", "ro,loop", RootImagePath(v), point},
                     "mounting the erofs image of " + v.ref() + " for the NFS server");
}

Result<std::unique_ptr<NfsService>> NfsService::Start(const NfsSettings& settings, Store& store,
                                                      ImageCatalog* catalog) {
  std::unique_ptr<NfsService> svc(new NfsService(settings, store));
  // nfs-ganesha finds the filesystem it exports in /etc/mtab only; without it
  // the export silently fails and every node's root mount says NOENT.
  if (access("/etc/mtab", R_OK) != 0)
    return Status::Error(
        Code::kUnavailable,
        "/etc/mtab is missing: nfs-ganesha reads the mounts there and would export "
        "nothing (systemd makes it at boot; without systemd: ln -s "
        "../proc/self/mounts /etc/mtab)");
  Status s = MakeDirs(settings.run_dir + "/recovery");
  if (!s.ok()) return s;
  s = MakeDirs(settings.export_path);
  if (!s.ok()) return s;
  auto text = ReadFile(settings.template_path);
  if (!text.ok()) return text.status();
  auto config = RenderTemplate(*text,
                               {{"listen_address", settings.listen_address},
                                {"clients", settings.clients},
                                {"export_path", settings.export_path},
                                {"pseudo_path", settings.pseudo_path},
                                {"recovery_dir", settings.run_dir + "/recovery"},
                                {"run_dir", settings.run_dir}},
                               settings.template_path);
  if (!config.ok()) return config.status();
  const std::string config_path = settings.run_dir + "/ganesha.conf";
  // An NFS server left running by a provisiond killed with SIGKILL keeps
  // serving the nodes that are up if it runs with this very config (adopted
  // below: nothing restarted, no gap); otherwise it is stopped.
  auto running_config = ReadFile(config_path);
  const bool same_config = running_config.ok() && *running_config == *config;
  s = WriteFileAtomic(config_path, *config);
  if (!s.ok()) return s;
  const pid_t leftover =
      AdoptOrStopLeftover("nfs", config_path, same_config, EventRecorder(store, "nfs"));
  // The server's mount namespace starts as a copy of this one: the versions'
  // erofs images are there before its first request.
  if (settings.root_images && catalog) {
    for (const ImageVersion& v : catalog->List()) {
      if (v.root.empty() || !fs::exists(RootImagePath(v))) continue;
      if (Status m = svc->MountOwn(v); !m.ok()) return m;
    }
  }
  ProcessSpec spec;
  spec.argv = {settings.ganesha,
               "-F",
               "-f",
               config_path,
               "-p",
               settings.run_dir + "/ganesha.pid",
               "-L",
               settings.run_dir + "/ganesha.log",
               "-N",
               "NIV_EVENT"};
  spec.output_file = settings.run_dir + "/ganesha.stderr";
  // ganesha would reach the host's rpcbind through /run/rpcbind.sock.
  spec.private_run = true;
  auto process = SupervisedProcess::Start("nfs", spec,
                                          "exporting " + settings.export_path + " read-only at " +
                                              settings.pseudo_path + " to " + settings.clients,
                                          EventRecorder(store, "nfs"), 500, nullptr, leftover);
  if (!process.ok()) return process.status();
  svc->process_ = std::move(*process);
  return svc;
}

std::string NfsService::RootPath(const ImageVersion& image) const {
  const bool erofs = settings_.root_images && fs::exists(RootImagePath(image));
  return "/" + image.name + "/" + image.version + (erofs ? "/nfsroot" : "/root");
}

std::string NfsService::RootArgs(const ImageVersion& image) const {
  if (image.root.empty()) return "";
  return "provision.nfs=" + settings_.listen_address + ":" + settings_.pseudo_path +
         RootPath(image) + " provision.nfsvers=4.1";
}

NfsService::~NfsService() {
  process_.reset();  // the server first: its namespace holds the mounts too
  std::lock_guard lock(mu_);
  for (const std::string& point : own_mounts_) umount2(point.c_str(), MNT_DETACH);
}

Status NfsService::MountOwn(const ImageVersion& image, bool* fresh) {
  const std::string point = RootMountPoint(image);
  {
    std::lock_guard lock(mu_);
    if (own_mounts_.count(point)) return Status::Ok();
  }
  if (fresh) *fresh = !MountedIn(getpid(), point);
  if (Status s = MountRootImage(image); !s.ok()) return s;
  std::lock_guard lock(mu_);
  own_mounts_.insert(point);
  return Status::Ok();
}

Status NfsService::PrepareRoot(const ImageVersion& image) {
  if (!settings_.root_images || image.root.empty()) return Status::Ok();
  {
    // Mounted already: the common case, on every boot script (Verify).
    std::lock_guard lock(mu_);
    if (own_mounts_.count(RootMountPoint(image))) return Status::Ok();
  }
  std::lock_guard make(make_mu_);  // one version at a time, made and mounted once
  if (!fs::exists(RootImagePath(image))) {
    const auto t0 = std::chrono::steady_clock::now();
    if (Status s = MakeRootImage(image, settings_.mkfs_erofs); !s.ok()) return s;
    store_.RecordEvent(
        EventRecord{.kind = "image-root",
                    .detail = image.ref() + ": made its erofs image for NFS (" +
                              std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                 std::chrono::steady_clock::now() - t0)
                                                 .count()) +
                              " ms, UUID " + RootImageUuid(image) + ")",
                    .who = "nfs"});
  }
  // The server's namespace is a copy of this one, taken when it starts: a
  // version mounted while it runs is served once it starts again. nfs-ganesha
  // 4.3 answers a mount made under a running export with NOENT or XDEV (its
  // cache holds the empty folder), so it is restarted; the handles it then
  // serves are the same, so nodes reading their roots wait for its start.
  bool fresh = false;
  if (Status s = MountOwn(image, &fresh); !s.ok()) return s;
  if (!fresh) return Status::Ok();
  {
    std::lock_guard lock(mu_);
    verified_.erase(image.ref());  // read it back through the mount
  }
  if (process_ && process_->pid() > 0) {
    if (Status s = process_->Restart("to serve the erofs image of " + image.ref()); !s.ok())
      return s;
  }
  return Status::Ok();
}

Status NfsService::Verify(const ImageVersion& image, bool force) {
  if (image.root.empty()) return Status::Ok();  // nothing exported: a kernel+initrd image
  if (Status s = PrepareRoot(image); !s.ok()) return s;
  {
    std::lock_guard lock(mu_);
    if (!force && verified_[image.ref()]) return Status::Ok();
  }
  // /etc/os-release is a relative symlink libnfs will not follow: read its target.
  const std::string rel = RootPath(image) + "/usr/lib/os-release";
  Result<std::string> text = Status::Internal("unread");
  // The server may still be starting: a few tries, a second apart.
  for (int attempt = 0; attempt < 10; ++attempt) {
    text = ReadOverNfs(settings_.listen_address, settings_.pseudo_path, rel);
    if (text.ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  std::string detail;
  if (text.ok()) {
    size_t at = text->find("PRETTY_NAME=");
    detail = at == std::string::npos ? "read os-release"
                                     : text->substr(at + 12, text->find('\n', at) - at - 12);
  }
  EventRecord e{.kind = text.ok() ? "image-verified" : "image-verify-failed",
                .detail = image.ref() + ": " +
                          (text.ok() ? "nfs://" + settings_.listen_address + settings_.pseudo_path +
                                           rel + " reads " + detail
                                     : text.status().message()),
                .who = "nfs"};
  store_.RecordEvent(e);
  std::lock_guard lock(mu_);
  verified_[image.ref()] = text.ok();
  return text.ok() ? Status::Ok() : text.status();
}

pid_t NfsService::pid() const {
  return process_ ? process_->pid() : -1;
}

}  // namespace prov
