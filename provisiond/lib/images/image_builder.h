// Builds an image from its manifest in two steps: its source makes the root
// tree (images/source.h: mmdebstrap today), then the finishing step adds what
// every image gets, takes the kernel, builds the netboot initrd, hashes the
// tree into its version and commits it to the catalog (images/finish.h).
#pragma once

#include <string>

#include "base/result.h"
#include "images/build_step.h"
#include "images/image_catalog.h"
#include "images/image_manifest.h"

namespace prov {

Result<ImageVersion> BuildImage(const ImageManifest& manifest, ImageCatalog& catalog,
                                const ImageBuildOptions& options, const BuildProgress& progress);

}  // namespace prov
