// The image store: built images by name and version, each version a
// directory that is never changed once written:
//   <store>/<name>/<version>/{vmlinuz, initrd.img, image.json[, root/]}
//   <store>/<name>/current      (the version "<name>" resolves to)
// A version is the content hash of what it holds. Only files listed here are
// ever served: no path from a URL reaches the filesystem.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"

namespace prov {

struct ImageVersion {
  std::string name;
  std::string version;
  std::string dir;
  std::string kernel;  // full paths
  std::string initrd;
  std::string root;  // the root tree (issue: images over NFS); may be empty
  uint64_t kernel_size = 0;
  uint64_t initrd_size = 0;
  int64_t created_ms = 0;

  std::string ref() const { return name + "@" + version; }
};

class ImageCatalog {
 public:
  explicit ImageCatalog(std::string store_dir);

  // "lab" resolves to lab's current version, "lab@<version>" to that one.
  Result<ImageVersion> Resolve(const std::string& ref);
  std::vector<ImageVersion> List();

  // Copies a kernel and an initrd into the store as a new version of `name`
  // (the hash of both) and makes it current. Importing the same files again
  // gives the same version and changes nothing.
  Result<ImageVersion> Import(const std::string& name, const std::string& kernel_path,
                              const std::string& initrd_path);

  // Makes `version` the one its name resolves to.
  Status MakeCurrent(const ImageVersion& version);

  // Deletes one version (and `current` if it pointed there).
  Status Remove(const ImageVersion& version);

  const std::string& store_dir() const { return store_dir_; }

 private:
  Result<ImageVersion> Load(const std::string& name, const std::string& version);
  std::string store_dir_;
  std::mutex mu_;
  std::map<std::string, ImageVersion> cache_;  // by ref "name@version"; guarded by mu_
  // name -> (stat stamp of its `current` file, version); guarded by mu_
  std::map<std::string, std::pair<std::string, std::string>> current_;
};

// Image names: letters, digits, '.', '_', '-'; used as directory names.
Status ValidateImageName(const std::string& name);

}  // namespace prov
