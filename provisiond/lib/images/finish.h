// The second step of an image build, the same whatever made the root tree
// (images/source.h): the manifest's files and the phone-home agent added,
// the build host's identity removed, the kernel taken from the tree's /boot,
// a netboot initrd built for it, the whole tree hashed (the hash is the
// version), and the finished version renamed into the catalog, where it is
// never changed again. Building the same content twice gives the same
// version.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <string>

#include "base/result.h"
#include "images/build_step.h"
#include "images/image_catalog.h"
#include "images/image_manifest.h"

namespace prov {

// A build's working directory, <store>/<name>/.build-<random>, holding the
// tree in root/ and, once finished, vmlinuz, initrd.img and image.json. It is
// in the image store so that committing it is a rename (atomic, and no copy
// of gigabytes); it is removed with this object unless it was committed.
class BuildDir {
 public:
  static Result<BuildDir> Create(const ImageCatalog& catalog, const std::string& image_name);
  BuildDir(BuildDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  BuildDir& operator=(BuildDir&&) = delete;
  ~BuildDir();

  const std::string& path() const { return path_; }
  std::string root() const { return path_ + "/root"; }  // exists, empty at first
  // Called once the directory is renamed into the catalog: nothing to remove.
  void Committed() { path_.clear(); }

 private:
  explicit BuildDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

// Fails, naming it, when something every image gets is not there: checked
// before the source step spends minutes.
Status CheckFinishingInputs(const ImageBuildOptions& options);

// Finishes the tree in `build.root()` as `manifest`'s image and commits it.
// `provenance` (the source's part of image.json) and `started` (for the
// build time) come from the build. The version is the tree's hash, or
// `version` when given (a derived image is named by what made it, known
// before it is built: bake/derived_image.h).
Result<ImageVersion> FinishImage(BuildDir& build, const ImageManifest& manifest,
                                 const nlohmann::json& provenance, ImageCatalog& catalog,
                                 const ImageBuildOptions& options, const BuildProgress& progress,
                                 std::chrono::steady_clock::time_point started,
                                 const std::string& version = "");

// The parts of FinishImage, each usable on its own:

// Adds the manifest's files and the phone-home agent to `root`, and removes
// what identifies the build host (machine-id, hostname, resolv.conf, SSH
// host keys).
Status AddProvisionFiles(const std::string& root, const ImageManifest& manifest,
                         const ImageBuildOptions& options);

// Copies the newest <root>/boot/vmlinuz-* to `kernel_out` and removes any
// initrd.img-* beside it; returns the kernel's file name.
Result<std::string> ExtractKernel(const std::string& root, const std::string& kernel_out,
                                  const std::string& kernel_package);

// What a netboot initrd is made of, as one hash: the builder (its folder),
// the static tools and busybox it copies in, the extra modules asked for,
// and the tree's kernels, modules and firmware (path, type, size, mode and
// modification time of each file, directories without their size: a package
// that changes one rewrites it).
// Two trees with the same key get the same initrd.
Result<std::string> InitrdInputsKey(const std::string& root, const ImageManifest& manifest,
                                    const ImageBuildOptions& options);

// What finishing adds to every tree, as one hash: the static tools, the
// phone-home agent's files and the initrd builder's folder. A version named
// before it is built (images/source.h: Identity) includes it, so that a new
// agent makes a new version.
Result<std::string> FinishingInputsKey(const ImageBuildOptions& options);

// The content hash of a directory tree: paths, modes, owners, symlink targets,
// extended attributes (file capabilities) and file contents, in sorted order.
Result<std::string> HashTree(const std::string& root);

// Writes `meta` as image.json, renames the build into
// <store>/<name>/<version> (unless that version exists already: same content)
// and makes it the name's current version.
Result<ImageVersion> CommitBuild(BuildDir& build, const std::string& name,
                                 const std::string& version, const nlohmann::json& meta,
                                 ImageCatalog& catalog, const BuildProgress& progress);

}  // namespace prov
