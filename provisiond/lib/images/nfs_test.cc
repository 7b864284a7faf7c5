#include "images/nfs.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>

#include "base/file_util.h"
#include "base/temp_dir.h"

namespace prov {
namespace fs = std::filesystem;

TEST_CASE("root image: one UUID per version, the same everywhere") {
  ImageVersion a, b;
  a.name = b.name = "lab";
  a.version = "0123abcd";
  b.version = "0123abce";
  const std::string ua = RootImageUuid(a);
  CHECK(ua == RootImageUuid(a));
  CHECK(ua != RootImageUuid(b));
  REQUIRE(ua.size() == 36);
  CHECK(ua[8] == '-');
  CHECK(ua[14] == '4');  // version 4
  CHECK(std::string("89ab").find(ua[19]) != std::string::npos);
}

TEST_CASE("root image: made once from the tree, written whole") {
  const char* mkfs = "/usr/bin/mkfs.erofs";
  if (access(mkfs, X_OK) != 0) {
    MESSAGE("mkfs.erofs missing (package erofs-utils): skipped");
    return;
  }
  TempDir tmp;
  ImageVersion v;
  v.name = "lab";
  v.version = "v1";
  v.dir = tmp.path() + "/lab/v1";
  v.root = v.dir + "/root";
  REQUIRE(MakeDirs(v.root + "/etc").ok());
  REQUIRE(WriteFileAtomic(v.root + "/etc/os-release", "ID=debian\n").ok());
  REQUIRE(MakeRootImage(v, mkfs).ok());
  CHECK(fs::is_directory(RootMountPoint(v)));
  REQUIRE(fs::exists(RootImagePath(v)));
  CHECK_FALSE(fs::exists(RootImagePath(v) + ".part"));
  auto first = Sha256File(RootImagePath(v));
  REQUIRE(first.ok());
  // erofs's superblock: magic 0xE0F5E1E2 at 1024, the UUID at 1024 + 48.
  auto bytes = ReadFile(RootImagePath(v));
  REQUIRE(bytes.ok());
  REQUIRE(bytes->size() > 1024 + 64);
  CHECK(static_cast<unsigned char>((*bytes)[1024]) == 0xE2);
  CHECK(static_cast<unsigned char>((*bytes)[1027]) == 0xE0);
  std::string uuid;
  for (int i = 0; i < 16; ++i) {
    static const char* hex = "0123456789abcdef";
    const auto c = static_cast<unsigned char>((*bytes)[1024 + 48 + i]);
    uuid += hex[c >> 4];
    uuid += hex[c & 15];
    if (i == 3 || i == 5 || i == 7 || i == 9) uuid += '-';
  }
  CHECK(uuid == RootImageUuid(v));
  // There already: left as it is (a copy from the active is never rebuilt).
  REQUIRE(WriteFileAtomic(v.root + "/etc/hostname", "changed\n").ok());
  REQUIRE(MakeRootImage(v, mkfs).ok());
  CHECK(*Sha256File(RootImagePath(v)) == *first);
  // A failing mkfs leaves nothing behind.
  ImageVersion w = v;
  w.version = "v2";
  w.dir = tmp.path() + "/lab/v2";
  w.root = w.dir + "/no-such-tree";
  CHECK_FALSE(MakeRootImage(w, mkfs).ok());
  CHECK_FALSE(fs::exists(RootImagePath(w)));
  CHECK_FALSE(fs::exists(RootImagePath(w) + ".part"));
}

TEST_CASE("root image: what is mounted where, from mountinfo") {
  CHECK(MountedIn(getpid(), "/"));
  CHECK(MountedIn(getpid(), "/proc"));
  CHECK_FALSE(MountedIn(getpid(), "/no/such/mount/point"));
}

}  // namespace prov
