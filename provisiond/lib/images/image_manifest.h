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
  std::string sha256;  // of the manifest text
  std::string file;
};

Result<ImageManifest> ParseImageManifest(const std::string& text, const std::string& file,
                                         const std::string& expected_name);
// Loads <images_dir>/<name>/image.yaml.
Result<ImageManifest> LoadImageManifest(const std::string& images_dir, const std::string& name);

}  // namespace prov
