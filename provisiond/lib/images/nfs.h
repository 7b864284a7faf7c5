// The image store over NFS: nfs-ganesha (the kernel NFS server is not on
// every machine, and not on these) exports the whole store read-only at
// /images, so a new image version is visible without reconfiguring; run and
// supervised by provisiond in its own mount namespace. Exports are checked
// with libnfs, a real NFS client, before nodes are pointed at them.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "base/result.h"
#include "base/supervisor.h"
#include "images/image_catalog.h"
#include "store/store.h"

namespace prov {

struct NfsSettings {
  std::string ganesha = "/usr/bin/ganesha.nfsd";
  std::string template_path;   // images/nfs/ganesha.conf.in
  std::string listen_address;  // the cluster interface's address
  std::string clients;         // who may mount: the cluster subnet, "10.99.0.0/24"
  std::string export_path;     // the image store
  std::string pseudo_path = "/images";
  std::string run_dir;  // config, pid file, log, recovery database
};

// Reads `path` (relative to the export) from NFS server `server`'s export
// `export_path` with libnfs (NFSv4.0), at most `max_bytes`.
Result<std::string> ReadOverNfs(const std::string& server, const std::string& export_path,
                                const std::string& path, size_t max_bytes = 65536,
                                int timeout_ms = 10000);

class NfsService {
 public:
  static Result<std::unique_ptr<NfsService>> Start(const NfsSettings& settings, Store& store);

  // The kernel arguments that tell a node's initrd where `image`'s root is.
  std::string RootArgs(const ImageVersion& image) const;

  // Reads the image's os-release back over NFS; the result is remembered (and
  // recorded as an event) per version. Nodes are pointed at a version only
  // once this succeeded.
  Status Verify(const ImageVersion& image, bool force = false);
  // The NFS server's process (-1 when none runs).
  pid_t pid() const;

 private:
  NfsService(const NfsSettings& s, Store& store) : settings_(s), store_(store) {}

  NfsSettings settings_;
  Store& store_;
  std::mutex mu_;
  std::map<std::string, bool> verified_;  // by ref; guarded by mu_
  std::unique_ptr<SupervisedProcess> process_;
};

}  // namespace prov
