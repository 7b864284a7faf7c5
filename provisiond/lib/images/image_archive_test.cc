#include "images/image_archive.h"

#include <doctest/doctest.h>
#include <sys/xattr.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "base/temp_dir.h"
#include "images/finish.h"

namespace prov {
namespace fs = std::filesystem;

namespace {

// A built image's version folder made by hand: kernel, initrd, a root tree
// (a file with an extended attribute where the filesystem keeps them) and
// image.json with the tree's hash. True when the attribute was set.
bool MakeVersion(const std::string& store, const std::string& ref_version) {
  const std::string dir = store + "/lab/" + ref_version;
  REQUIRE(MakeDirs(dir + "/root/etc").ok());
  REQUIRE(WriteFileAtomic(dir + "/vmlinuz", "kernel bytes").ok());
  REQUIRE(WriteFileAtomic(dir + "/initrd.img", "initrd bytes").ok());
  REQUIRE(WriteFileAtomic(dir + "/root/etc/os-release", "ID=debian\n").ok());
  REQUIRE(WriteFileAtomic(dir + "/root/ping", "a program", 0755).ok());
  const bool xattr =
      setxattr((dir + "/root/ping").c_str(), "user.provisiond-test", "cap", 3, 0) == 0;
  fs::create_symlink("etc/os-release", dir + "/root/os-release");
  auto hash = HashTree(dir + "/root");
  REQUIRE(hash.ok());
  nlohmann::json meta = {{"name", "lab"}, {"version", ref_version}, {"sha256", *hash}};
  REQUIRE(WriteFileAtomic(dir + "/image.json", meta.dump()).ok());
  return xattr;
}

}  // namespace

TEST_CASE("image archive: a version copied to another store is the same, checked") {
  TempDir tmp("provision-archive");
  const std::string from = tmp.path() + "/from", to = tmp.path() + "/to";
  const bool xattr = MakeVersion(from, "0123456789abcdef");
  ImageCatalog source(from), target(to);
  auto v = source.Resolve("lab@0123456789abcdef");
  REQUIRE_MESSAGE(v.ok(), v.status().message());

  auto a = MakeImageArchive(*v, tmp.path() + "/archives");
  REQUIRE_MESSAGE(a.ok(), a.status().message());
  CHECK(a->size == fs::file_size(a->path));
  CHECK(a->sha256 == *Sha256File(a->path));
  // Made once: a second call answers the same file.
  const auto made = fs::last_write_time(a->path);
  auto again = MakeImageArchive(*v, tmp.path() + "/archives");
  REQUIRE(again.ok());
  CHECK(again->sha256 == a->sha256);
  CHECK(fs::last_write_time(again->path) == made);

  SUBCASE("installed: the same files, the same tree hash, the attribute kept") {
    auto got = InstallImageArchive(target, "lab@0123456789abcdef", a->path, a->sha256);
    REQUIRE_MESSAGE(got.ok(), got.status().message());
    CHECK(got->root == to + "/lab/0123456789abcdef/root");
    CHECK(*ReadFile(got->kernel) == "kernel bytes");
    CHECK(*HashTree(got->root) == *HashTree(v->root));
    if (xattr) {
      char value[8] = {};
      CHECK(getxattr((got->root + "/ping").c_str(), "user.provisiond-test", value, sizeof value) ==
            3);
    }
    CHECK(fs::is_symlink(got->root + "/os-release"));
    // Nothing left beside it.
    for (const auto& e : fs::directory_iterator(to + "/lab"))
      CHECK(e.path().filename().string() == "0123456789abcdef");
  }
  SUBCASE("a damaged copy is refused and leaves nothing") {
    auto bad = InstallImageArchive(target, "lab@0123456789abcdef", a->path, std::string(64, '0'));
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.status().message().find("is damaged") != std::string::npos);
    CHECK_FALSE(target.Resolve("lab@0123456789abcdef").ok());
    CHECK_FALSE(fs::exists(to + "/lab/.incoming-0123456789abcdef"));
  }
  SUBCASE("a tree that does not hash to image.json's sha256 is refused") {
    // The source changed after its hash was written (as a tar that lost an
    // attribute would look): the archive is whole, the tree is not the image.
    REQUIRE(WriteFileAtomic(from + "/lab/0123456789abcdef/root/etc/os-release", "ID=other\n").ok());
    ImageVersion changed = *v;
    changed.version = "0123456789abcdef";
    auto b = MakeImageArchive(changed, tmp.path() + "/archives2");
    REQUIRE(b.ok());
    auto bad = InstallImageArchive(target, "lab@0123456789abcdef", b->path, b->sha256);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.status().message().find("root tree hashes to") != std::string::npos);
    CHECK_FALSE(fs::exists(to + "/lab/0123456789abcdef"));
    CHECK_FALSE(fs::exists(to + "/lab/.incoming-0123456789abcdef"));
  }
}

}  // namespace prov
