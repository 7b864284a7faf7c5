// Builds an image from its manifest: mmdebstrap into a temporary directory of
// the image store, the manifest's files and the phone-home agent added, the
// kernel taken from the root, a netboot initrd built for it, and the whole
// tree hashed: the hash is the version. The finished version is renamed into
// place and never changed again; building the same content twice gives the
// same version.
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include "base/result.h"
#include "images/image_catalog.h"
#include "images/image_manifest.h"

namespace prov {

struct ImageBuildOptions {
  std::string mmdebstrap = "/usr/bin/mmdebstrap";
  std::string initrd_builder;  // images/initramfs/build-initrd.sh
  std::string agent_dir;       // images/agent: provision-hello, provision-hello.service
  std::string tools_dir;       // provision-facts and provision-mount binaries
  int timeout_s = 3600;
  int mirror_check_timeout_s = 15;
  const std::atomic<bool>* cancel = nullptr;  // stops the build when it becomes true
};

// Progress lines ("mmdebstrap: I: downloading packages...").
using BuildProgress = std::function<void(const std::string& line)>;

Result<ImageVersion> BuildImage(const ImageManifest& manifest, ImageCatalog& catalog,
                                const ImageBuildOptions& options, const BuildProgress& progress);

// Fails with the reason when the manifest's mirror does not answer for its
// suite (<mirror>/dists/<suite>/Release).
Status CheckMirror(const ImageManifest& manifest, int timeout_s);

// The content hash of a directory tree: paths, modes, owners, symlink targets
// and file contents, in sorted order.
Result<std::string> HashTree(const std::string& root);

}  // namespace prov
