// Image builds as background jobs of the daemon (a build takes minutes), with
// progress as events, and removing versions nothing uses.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "images/image_builder.h"
#include "images/image_catalog.h"
#include "profiles/inventory.h"

namespace prov {

class ImageService {
 public:
  ImageService(Inventory& inventory, ImageCatalog& catalog, std::string images_dir,
               ImageBuildOptions options)
      : inventory_(inventory),
        catalog_(catalog),
        images_dir_(std::move(images_dir)),
        options_(std::move(options)) {}
  ~ImageService();  // stops running builds and waits for them

  // Validates the manifest and starts building it; Conflict when a build of
  // the same image runs. Progress and the result are events of kind
  // "image-build" ("image-built" / "image-build-failed" at the end).
  Status StartBuild(const std::string& name, const std::string& who);
  // Builds something other than a manifest (a derived image: bake/) as a
  // job of the same kind: one at a time per name, the same events, stopped
  // with the service. `job` gets the progress callback and the build's
  // options (their cancel flag set); `started` is the first event's text.
  using BuildJob = std::function<Result<ImageVersion>(const ImageBuildOptions& options,
                                                      const BuildProgress& progress)>;
  Status StartJob(const std::string& name, const std::string& started, BuildJob job,
                  const std::string& who);
  // Names of the images being built now.
  std::vector<std::string> Running();

  // Removes a version unless a profile or a node uses it.
  Status Remove(const std::string& ref, const std::string& who);

  // Removes the derived images (<image>.baked, bake/) that no node boots or
  // runs and no profile names, but the newest `keep_derived` of each; a
  // removal is an event. Returns the refs removed. Called after each bake
  // and by `image prune`.
  Result<std::vector<std::string>> PruneDerived(const std::string& who);
  void set_keep_derived(int64_t keep) { keep_derived_ = keep; }

  // The versions ("name@version") a profile names or a node boots or runs,
  // each with who uses it, in words; read once per removal, prune or status.
  std::map<std::string, std::string> InUse();

 private:
  void Run(const std::string& name, const std::string& started, const BuildJob& job,
           const std::string& who);
  // The build of `name` ended: its thread is joined later.
  void Retire(const std::string& name);

  Inventory& inventory_;
  ImageCatalog& catalog_;
  std::string images_dir_;
  ImageBuildOptions options_;
  int64_t keep_derived_ = 2;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::map<std::string, std::thread> builds_;  // guarded by mu_
  std::vector<std::thread> finished_;          // joined later; guarded by mu_
};

}  // namespace prov
