#include "base/file_util.h"

#include <doctest/doctest.h>

#include <filesystem>

#include "base/temp_dir.h"

namespace prov {

TEST_CASE("file set: what is not known is wanted, not read, until ReadWanted") {
  TempDir tmp;
  const std::string dir = tmp.path();
  REQUIRE(WriteFileAtomic(dir + "/a.txt", "alpha").ok());
  REQUIRE(MakeDirs(dir + "/sub/deeper").ok());
  REQUIRE(WriteFileAtomic(dir + "/sub/deeper/b.txt", "beta").ok());

  FileSet files;
  std::string error;
  CHECK(files.Text(dir + "/a.txt", &error) == nullptr);  // asked, not yet read
  CHECK_FALSE(files.IsDirectory(dir + "/sub"));
  CHECK(files.Tree(dir + "/sub").empty());
  CHECK(files.Digest(dir + "/missing", &error) == nullptr);
  REQUIRE(files.ReadWanted());
  CHECK_FALSE(files.ReadWanted());  // nothing new was asked for

  const std::string* a = files.Text(dir + "/./a.txt");  // paths compare normalized
  REQUIRE(a != nullptr);
  CHECK(*a == "alpha");
  CHECK(files.IsDirectory(dir + "/sub/"));
  CHECK(files.Tree(dir + "/sub") == std::vector<std::string>{dir + "/sub/deeper/b.txt"});
  CHECK(files.Digest(dir + "/missing", &error) == nullptr);
  CHECK_FALSE(files.Exists(dir + "/missing"));
  CHECK(*files.Digest(dir + "/a.txt") == Sha256Hex("alpha"));
  CHECK_FALSE(files.ReadWanted());

  // What the set holds stays as read: a change on disk is not seen.
  REQUIRE(WriteFileAtomic(dir + "/a.txt", "changed").ok());
  CHECK(*files.Text(dir + "/a.txt") == "alpha");
  CHECK(files.Text(dir + "/sub", &error) == nullptr);
  CHECK(error.find("folder") != std::string::npos);
}

TEST_CASE("file set: in memory, nothing is wanted and folders come from files") {
  auto files = FileSet::InMemory({{"/p/x/y.yml", "y"}, {"/p/z.yml", "z"}});
  CHECK(files.IsDirectory("/p"));
  CHECK(files.IsDirectory("/p/x"));
  CHECK(files.IsFile("/p/z.yml"));
  CHECK_FALSE(files.Exists("/etc/passwd"));  // the disk is not looked at
  CHECK(files.Tree("/p") == std::vector<std::string>{"/p/x/y.yml", "/p/z.yml"});
  CHECK_FALSE(files.ReadWanted());
  CHECK(files.rounds() == 0);
}

TEST_CASE("file set: ReadThenParse runs again until nothing new is wanted") {
  TempDir tmp;
  // A chain: each file names the next; the last names none.
  for (int i = 0; i < 4; ++i)
    REQUIRE(
        WriteFileAtomic(tmp.path() + "/" + std::to_string(i), i < 3 ? std::to_string(i + 1) : "")
            .ok());
  FileSet files;
  int runs = 0;
  auto length = ReadThenParse(files, [&](FileSet& f) {
    ++runs;
    int n = 0;
    for (std::string name = "0";; ++n) {
      const std::string* next = f.Text(tmp.path() + "/" + name);
      if (!next || next->empty()) return n;
      name = *next;
    }
  });
  CHECK(length == 3);
  CHECK(runs == 5);  // 4 files, one found per round, and the run that wanted none
  CHECK(files.rounds() == 4);
}

}  // namespace prov
