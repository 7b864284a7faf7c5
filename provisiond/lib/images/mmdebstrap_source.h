// The mmdebstrap image source: a minimal Debian or Ubuntu root from the
// manifest's mirror, suite, components and packages (the kernel package
// among them), with its extra apt sources. Its part of the manifest:
// distribution, suite, mirror, components, kernel_package, packages,
// apt_sources and keyring (AptSettings), parsed here.
#pragma once

#include <string>
#include <vector>

#include "base/process.h"
#include "base/result.h"
#include "base/yaml_reader.h"
#include "images/image_manifest.h"

namespace prov {

struct AptSource {
  std::string ppa;   // "kobuk-team/intel-graphics" (Ubuntu only)
  std::string line;  // a full "deb ..." line
  // The key the source is signed with: a file beside the manifest, copied
  // into the image as /etc/apt/keyrings/<signed_by> and named by the line.
  std::string signed_by;
  // The apt source line, for the image's sources.list.d.
  std::string Render(const std::string& suite) const;
};

struct AptSettings : SourceSettings {
  std::string distribution;  // debian | ubuntu
  std::string suite;
  std::string mirror;
  std::vector<std::string> components;
  std::vector<std::string> packages;
  std::vector<AptSource> apt_sources;
  // The distribution's archive key (e.g. Ubuntu's, which Debian does not
  // ship): a file's name, found beside the manifest or where systems keep
  // keyrings, or downloaded from keyring_url (images/archive_key.h); trusted
  // while the image is built and kept in its /etc/apt/trusted.gpg.d. Empty:
  // the build host's keys.
  std::string keyring;
  std::string keyring_fingerprint;  // pinned, 40 hex digits (required with keyring_url)
  std::string keyring_url;
  std::string Summary() const override {
    return distribution + " " + suite + ", " + std::to_string(packages.size()) + " packages";
  }
};

// Reads the source's keys from the manifest's top level into
// `manifest.settings` (and its kernel_package), errors at their lines.
void ParseMmdebstrapManifest(MapReader& top, ImageManifest& manifest);

// The settings of a manifest whose source is mmdebstrap.
const AptSettings& AptSettingsOf(const ImageManifest& manifest);

// The mmdebstrap command that builds `manifest`'s tree into `root`, with
// the archive key at `archive_key` (empty: beside the manifest).
ProcessSpec MmdebstrapCommand(const ImageManifest& manifest, const std::string& mmdebstrap,
                              const std::string& root, const std::string& archive_key = "");

// Fails with the reason when the manifest's mirror does not answer for its
// suite (<mirror>/dists/<suite>/Release).
Status CheckMirror(const ImageManifest& manifest, int timeout_s);

}  // namespace prov
