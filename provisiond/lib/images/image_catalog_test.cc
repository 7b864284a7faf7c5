#include "images/image_catalog.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>

#include "base/file_util.h"

namespace prov {

TEST_CASE("image catalog: import, resolve, immutable versions") {
  namespace fs = std::filesystem;
  auto dir = fs::temp_directory_path() / ("provision-images-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "src");
  REQUIRE(WriteFileAtomic((dir / "src/k").string(), "kernel-1").ok());
  REQUIRE(WriteFileAtomic((dir / "src/i").string(), "initrd-1").ok());
  ImageCatalog catalog((dir / "store").string());

  CHECK(catalog.Resolve("lab").status().code() == Code::kNotFound);
  auto v1 = catalog.Import("lab", (dir / "src/k").string(), (dir / "src/i").string());
  REQUIRE_MESSAGE(v1.ok(), v1.status().message());
  CHECK(v1->version.size() == 16);
  CHECK(v1->kernel_size == 8);
  auto again = catalog.Import("lab", (dir / "src/k").string(), (dir / "src/i").string());
  REQUIRE(again.ok());
  CHECK(again->version == v1->version);

  REQUIRE(WriteFileAtomic((dir / "src/i").string(), "initrd-2").ok());
  auto v2 = catalog.Import("lab", (dir / "src/k").string(), (dir / "src/i").string());
  REQUIRE(v2.ok());
  CHECK(v2->version != v1->version);
  CHECK(catalog.Resolve("lab")->version == v2->version);
  CHECK(catalog.Resolve("lab@" + v1->version)->version == v1->version);
  CHECK(*ReadFile(catalog.Resolve("lab@" + v1->version)->initrd) == "initrd-1");
  CHECK(catalog.List().size() == 2);
  // Removing the current version makes the name stand for the one left.
  REQUIRE(catalog.Remove(*catalog.Resolve("lab")).ok());
  CHECK(catalog.Resolve("lab")->version == v1->version);
  CHECK(catalog.List().size() == 1);

  REQUIRE(catalog.Import("lab", (dir / "src/k").string(), (dir / "src/i").string()).ok());
  CHECK(catalog.Resolve("../etc").status().code() == Code::kInvalid);
  CHECK(catalog.Resolve("lab@../../x").status().code() == Code::kInvalid);
  CHECK(catalog.Import("lab", "/nonexistent", "/nonexistent").status().code() == Code::kNotFound);
  fs::remove_all(dir);
}

}  // namespace prov
