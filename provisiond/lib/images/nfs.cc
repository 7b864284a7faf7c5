#include "images/nfs.h"

#include <fcntl.h>
#include <nfsc/libnfs.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "base/file_util.h"
#include "base/template.h"

namespace prov {
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

Result<std::unique_ptr<NfsService>> NfsService::Start(const NfsSettings& settings, Store& store) {
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

std::string NfsService::RootArgs(const ImageVersion& image) const {
  if (image.root.empty()) return "";
  return "provision.nfs=" + settings_.listen_address + ":" + settings_.pseudo_path + "/" +
         image.name + "/" + image.version + "/root provision.nfsvers=4.1";
}

Status NfsService::Verify(const ImageVersion& image, bool force) {
  if (image.root.empty()) return Status::Ok();  // nothing exported: a kernel+initrd image
  {
    std::lock_guard lock(mu_);
    if (!force && verified_[image.ref()]) return Status::Ok();
  }
  // /etc/os-release is a relative symlink libnfs will not follow: read its target.
  const std::string rel = "/" + image.name + "/" + image.version + "/root/usr/lib/os-release";
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
