// The image store over NFS: nfs-ganesha (the kernel NFS server is not on
// every machine, and not on these) exports the whole store read-only at
// /images, so a new image version is visible without reconfiguring; run and
// supervised by provisiond in its own mount namespace. Exports are checked
// with libnfs, a real NFS client, before nodes are pointed at them.
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "base/result.h"
#include "base/supervisor.h"
#include "images/image_catalog.h"
#include "store/store.h"

namespace prov {

// An image version's root as one read-only filesystem image (erofs), for
// NFS roots that survive a takeover. A node that reads its root over NFS
// holds file handles; after a takeover the new active's NFS server must
// answer those very handles. nfs-ganesha's handle is the filesystem's id and
// the kernel's handle of the file (its inode), so two control nodes serve the
// same handles only when they serve the same filesystem: the same erofs
// file, byte for byte (copied, never rebuilt), with a UUID of its own that
// ganesha takes for the filesystem id, mounted read-only at the same place
// below the export on every control node.
//
//   <version>/root         the tree (builds, bakes, archives read it)
//   <version>/root.erofs   the same tree as an erofs image, made once
//   <version>/nfsroot      where root.erofs is mounted for the NFS server

inline std::string RootImagePath(const ImageVersion& v) {
  return v.dir + "/root.erofs";
}
inline std::string RootMountPoint(const ImageVersion& v) {
  return v.dir + "/nfsroot";
}

// The filesystem UUID of `v`'s erofs image: from its reference, so two
// versions never share a filesystem id and one version has one everywhere.
std::string RootImageUuid(const ImageVersion& v);

// Makes <version>/root.erofs from <version>/root (and the empty mount point)
// unless it is there: written beside it, then renamed. `mkfs` is mkfs.erofs.
Status MakeRootImage(const ImageVersion& v, const std::string& mkfs);

// True when something is mounted at `path` in process `pid`'s mount
// namespace (its /proc/<pid>/mountinfo).
bool MountedIn(pid_t pid, const std::string& path);

// Mounts <version>/root.erofs read-only (a loop device) at <version>/nfsroot
// in provisiond's mount namespace, which the NFS server's starts as a copy
// of, unless something is mounted there.
Status MountRootImage(const ImageVersion& v);

struct NfsSettings {
  std::string ganesha = "/usr/bin/ganesha.nfsd";
  std::string template_path;   // images/nfs/ganesha.conf.in
  std::string listen_address;  // the cluster interface's address
  std::string clients;         // who may mount: the cluster subnet, "10.99.0.0/24"
  std::string export_path;     // the image store
  std::string pseudo_path = "/images";
  std::string run_dir;  // config, pid file, log, recovery database
  // Several control nodes (a PostgreSQL inventory): roots are served from
  // each version's erofs image (images/nfs.h), so that the file
  // handles a node holds are the same on whichever control node is active.
  bool root_images = false;
  std::string mkfs_erofs = "/usr/bin/mkfs.erofs";
};

// Reads `path` (relative to the export) from NFS server `server`'s export
// `export_path` with libnfs (NFSv4.0), at most `max_bytes`.
Result<std::string> ReadOverNfs(const std::string& server, const std::string& export_path,
                                const std::string& path, size_t max_bytes = 65536,
                                int timeout_ms = 10000);

class NfsService {
 public:
  // With root_images, the erofs images of `catalog`'s versions are mounted
  // before the server starts: it answers a running node's file handles from
  // its first request on (a takeover).
  static Result<std::unique_ptr<NfsService>> Start(const NfsSettings& settings, Store& store,
                                                   ImageCatalog* catalog = nullptr);
  ~NfsService();
  NfsService(const NfsService&) = delete;
  NfsService& operator=(const NfsService&) = delete;

  // The kernel arguments that tell a node's initrd where `image`'s root is.
  std::string RootArgs(const ImageVersion& image) const;

  // With root_images: makes `image`'s erofs image when it has none (the
  // active; a standby copies it with the version) and mounts it for the NFS
  // server (again after the server restarted). Without: nothing.
  Status PrepareRoot(const ImageVersion& image);

  // Reads the image's os-release back over NFS; the result is remembered (and
  // recorded as an event) per version. Nodes are pointed at a version only
  // once this succeeded.
  Status Verify(const ImageVersion& image, bool force = false);
  // The NFS server's process (-1 when none runs).
  pid_t pid() const;

 private:
  NfsService(const NfsSettings& s, Store& store) : settings_(s), store_(store) {}
  // "/<name>/<version>/nfsroot" (its erofs image) or ".../root" (the tree),
  // below the export.
  std::string RootPath(const ImageVersion& image) const;
  // Mounts `image`'s erofs image in provisiond's own mount namespace;
  // `fresh`: it was not mounted there before.
  Status MountOwn(const ImageVersion& image, bool* fresh = nullptr);

  NfsSettings settings_;
  Store& store_;
  std::mutex mu_;
  std::map<std::string, bool> verified_;  // by ref; guarded by mu_
  std::set<std::string> own_mounts_;      // in provisiond's namespace, unmounted at the end; mu_
  std::mutex make_mu_;                    // PrepareRoot: one at a time
  std::unique_ptr<SupervisedProcess> process_;
};

}  // namespace prov
