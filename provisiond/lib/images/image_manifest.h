// Image manifests: images/<name>/image.yaml names the image, its source
// (`source:`, mmdebstrap by default) with the source's own keys (for
// mmdebstrap: distribution, suite, mirror, packages, apt sources, the kernel
// package: images/mmdebstrap_source.h), the initrd's extra modules and files
// to add. Parsed strictly, every error with file:line:col; each source
// parses its own keys.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/yaml_reader.h"

namespace prov {

struct ImageFile {
  std::string path;
  std::string content;
  std::string mode = "0644";
};

// The part of a manifest its image source reads (its own keys: a package
// list and a mirror for mmdebstrap); the source that parsed it knows its
// type (images/<name>_source.h).
struct SourceSettings {
  virtual ~SourceSettings() = default;
  // What a build's first event says of it ("debian bookworm, 9 packages").
  virtual std::string Summary() const = 0;
};

struct ImageManifest {
  std::string name;
  std::string description;
  // `source:`, the image source that makes the root tree (images/source.h's
  // registry): mmdebstrap when the manifest does not say.
  std::string source = "mmdebstrap";
  std::string architecture = "amd64";
  // The package (or, for a derived image, the base) the kernel comes from:
  // what finishing names when /boot has no kernel.
  std::string kernel_package;
  std::vector<ImageFile> files;
  // Modules the initrd carries and loads besides every NIC driver of the
  // kernel (e.g. a storage or USB driver a machine needs before its NIC).
  std::vector<std::string> initrd_modules;
  std::shared_ptr<const SourceSettings> settings;  // the source's part
  std::string sha256;                              // of the manifest text
  std::string file;
  // The folder the manifest is in, and where a file it names (a key) is:
  // beside it.
  std::string Dir() const;
  std::string Beside(const std::string& name) const;
};

// A package name as apt takes it: [a-z0-9][a-z0-9+.-]*, or package/release.
bool IsDebianPackageName(std::string_view name);

// Reads `kernel_package` (required or not) and `packages` into `manifest`
// and `packages`, each name checked (errors at their lines): the keys of
// every source that installs Debian packages (mmdebstrap, oci).
void ReadPackageKeys(MapReader& top, ImageManifest& manifest, std::vector<std::string>& packages,
                     bool kernel_required);

Result<ImageManifest> ParseImageManifest(const std::string& text, const std::string& file,
                                         const std::string& expected_name);
// Loads <images_dir>/<name>/image.yaml.
Result<ImageManifest> LoadImageManifest(const std::string& images_dir, const std::string& name);

}  // namespace prov
