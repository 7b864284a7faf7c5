// The mmdebstrap image source: a minimal Debian or Ubuntu root from the
// manifest's mirror, suite, components and packages (the kernel package
// among them), with its extra apt sources.
#pragma once

#include <string>

#include "base/process.h"
#include "base/result.h"
#include "images/image_manifest.h"

namespace prov {

// The mmdebstrap command that builds `manifest`'s tree into `root`.
ProcessSpec MmdebstrapCommand(const ImageManifest& manifest, const std::string& mmdebstrap,
                              const std::string& root);

// Fails with the reason when the manifest's mirror does not answer for its
// suite (<mirror>/dists/<suite>/Release).
Status CheckMirror(const ImageManifest& manifest, int timeout_s);

}  // namespace prov
