// An image version as one file, to copy it to another control node: a tar of
// its folder (numeric owners, extended attributes, so file capabilities
// survive), made once per version (versions never change) with its SHA-256,
// and unpacked on the other side only when the digest and the root tree's
// hash (image.json's sha256) come out the same.
#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"
#include "images/image_catalog.h"

namespace prov {

struct ImageArchive {
  std::string path;
  uint64_t size = 0;
  std::string sha256;  // of the whole file, lowercase hex
};

// The archive of `v` in `dir` (<dir>/<name>@<version>.tar, and .sha256
// beside it), made when it is not there yet or older than the version's
// folder; one call makes it at a time.
Result<ImageArchive> MakeImageArchive(const ImageVersion& v, const std::string& dir);

// Unpacks `archive` as `ref` ("name@version") into `catalog`'s store: the
// file's SHA-256 must be `sha256`; it is unpacked into a hidden folder beside
// the version's place, its root tree (when it has one) must hash to
// image.json's sha256, then it is renamed into place. A version already there
// is left as it is.
Result<ImageVersion> InstallImageArchive(ImageCatalog& catalog, const std::string& ref,
                                         const std::string& archive, const std::string& sha256);

}  // namespace prov
