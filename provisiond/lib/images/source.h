// The first step of an image build: an image source makes the image's root
// tree from its manifest (today mmdebstrap from a Debian or Ubuntu mirror,
// images/mmdebstrap_source.cc), chosen by the manifest's `source:` and
// reading its own keys of it. What comes after is the same for every source
// (images/finish.h). Another source (an OCI image, a tarball) is a new file
// implementing ImageSource and its manifest parser, plus its line in
// source.cc's table.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/yaml_reader.h"
#include "images/build_step.h"
#include "images/image_manifest.h"

namespace prov {

class ImageSource {
 public:
  virtual ~ImageSource() = default;
  // Its name in the registry ("mmdebstrap").
  virtual std::string_view name() const = 0;
  // Checks in seconds what would otherwise fail the build after minutes (its
  // mirror answers); says what it checks through `progress`.
  virtual Status Check(const ImageManifest& manifest, const BuildProgress& progress) const = 0;
  // Fills `root`, an empty directory on the image store's filesystem, with
  // the image's tree: a root filesystem with a kernel in /boot.
  virtual Status Fetch(const ImageManifest& manifest, const std::string& root,
                       const BuildProgress& progress) const = 0;
  // What the tree will be made of, when the source can tell before making
  // it (an OCI image's manifest digest with what goes on top): 16 hex digits
  // that become the version, so that a version already built is not built
  // again. Empty (the default): the version is the finished tree's hash.
  virtual Result<std::string> Identity(const ImageManifest& manifest,
                                       const BuildProgress& progress) const {
    (void)manifest;
    (void)progress;
    return std::string();
  }
  // What the image's image.json records about where its tree came from
  // (an object; its keys are the source's own).
  virtual nlohmann::json Provenance(const ImageManifest& manifest) const = 0;
};

// The source called `name`, with the build's options (its programs, its
// timeouts, the build's cancel flag, which must outlive the source). An
// unknown name is an error that lists the known ones.
Result<std::unique_ptr<ImageSource>> CreateImageSource(std::string_view name,
                                                       const ImageBuildOptions& options);

// Reads the part of a manifest the source `name` owns (its keys, from the
// manifest's top level `top`) into `manifest`, errors at their lines; an
// unknown name is the error CreateImageSource gives.
Status ParseSourcePart(std::string_view name, MapReader& top, ImageManifest& manifest);

// The known sources' names, in the registry's order.
std::vector<std::string_view> ImageSourceNames();

}  // namespace prov
