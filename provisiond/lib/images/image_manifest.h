// Image manifests: images/<name>/image.yaml names the distribution, suite,
// mirror, packages, extra apt sources (e.g. an Ubuntu PPA), the kernel
// package and files to add. Parsed strictly, every error with file:line:col.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"

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

struct ImageFile {
  std::string path;
  std::string content;
  std::string mode = "0644";
};

struct ImageManifest {
  std::string name;
  std::string description;
  std::string distribution;  // debian | ubuntu
  std::string suite;
  std::string mirror;
  std::vector<std::string> components;
  std::string architecture = "amd64";
  std::string kernel_package;
  std::vector<std::string> packages;
  std::vector<AptSource> apt_sources;
  std::vector<ImageFile> files;
  // The distribution's archive key (e.g. Ubuntu's, which Debian does not
  // ship): a file beside the manifest, trusted while the image is built and
  // kept in its /etc/apt/trusted.gpg.d. Empty: the build host's keys.
  std::string keyring;
  // Modules the initrd carries and loads besides every NIC driver of the
  // kernel (e.g. a storage or USB driver a machine needs before its NIC).
  std::vector<std::string> initrd_modules;
  std::string sha256;  // of the manifest text
  std::string file;
  // Where a file the manifest names (keyring, signed_by) is: beside it.
  std::string Beside(const std::string& name) const;
};

Result<ImageManifest> ParseImageManifest(const std::string& text, const std::string& file,
                                         const std::string& expected_name);
// Loads <images_dir>/<name>/image.yaml.
Result<ImageManifest> LoadImageManifest(const std::string& images_dir, const std::string& name);

}  // namespace prov
