#include "base/tar.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "base/file_util.h"
#include "base/process.h"

namespace prov {

TEST_CASE("tar: GNU tar reads what we write, modes and owners included") {
  std::string long_dir(120, 'd');
  auto tar =
      WriteTar({{"/etc/hostname", "node0\n", 0644, 0, 0, false},
                {"root/.ssh", "", 0700, 0, 0, true},
                {"/root/.ssh/authorized_keys", "ssh-ed25519 AAAA control\n", 0600, 0, 0, false},
                {"/home/" + long_dir + "/f", "x", 0640, 1000, 1000, false}},
               1700000000);
  REQUIRE(tar.ok());
  CHECK(tar->size() % 512 == 0);
  namespace fs = std::filesystem;
  auto dir = fs::temp_directory_path() / ("provision-tar-" + std::to_string(getpid()));
  fs::create_directories(dir / "out");
  REQUIRE(WriteFileAtomic((dir / "o.tar").string(), *tar).ok());
  ProcessSpec spec;
  spec.argv = {"/usr/bin/tar",    "-C",   (dir / "out").string(),
               "--numeric-owner", "-xpf", (dir / "o.tar").string()};
  auto r = RunProcess(spec, 10000);
  REQUIRE(r.ok());
  CHECK_MESSAGE(r->exit_code == 0, r->output);
  CHECK(*ReadFile((dir / "out/etc/hostname").string()) == "node0\n");
  const auto perms =
      fs::status(dir / "out/root/.ssh/authorized_keys").permissions() & fs::perms::all;
  CHECK(perms == (fs::perms::owner_read | fs::perms::owner_write));
  CHECK(*ReadFile((dir / ("out/home/" + long_dir + "/f")).string()) == "x");
  fs::remove_all(dir);
  CHECK_FALSE(WriteTar({{"../etc/passwd", "x"}}, 0).ok());
}

TEST_CASE("tar: ReadTar reads what WriteTar and GNU tar write, and refuses damage") {
  std::string long_dir(120, 'd');
  std::string binary("\0\x01\xff", 3);
  auto tar = WriteTar({{"MANIFEST.json", "{}"},
                       {"ssh", "", 0700, 0, 0, true},
                       {"ssh/id_ed25519", binary, 0600},
                       {long_dir + "/f", std::string(1000, 'x'), 0640}},
                      1700000000);
  REQUIRE(tar.ok());
  auto back = ReadTar(*tar);
  REQUIRE_MESSAGE(back.ok(), back.status().message());
  REQUIRE(back->size() == 4);
  CHECK((*back)[0].path == "MANIFEST.json");
  CHECK((*back)[1].directory);
  CHECK((*back)[1].path == "ssh");
  CHECK((*back)[2].content == binary);
  CHECK((*back)[2].mode == 0600);
  CHECK((*back)[3].path == long_dir + "/f");
  CHECK((*back)[3].content.size() == 1000);

  namespace fs = std::filesystem;
  auto dir = fs::temp_directory_path() / ("provision-tar-r-" + std::to_string(getpid()));
  fs::create_directories(dir / "in/a");
  REQUIRE(WriteFileAtomic((dir / "in/a/b").string(), "hello", 0640).ok());
  ProcessSpec spec;
  spec.argv = {"/usr/bin/tar", "--format=ustar",         "-C", (dir / "in").string(),
               "-cf",          (dir / "g.tar").string(), "a"};
  auto r = RunProcess(spec, 10000);
  REQUIRE(r.ok());
  REQUIRE_MESSAGE(r->exit_code == 0, r->output);
  auto gnu = ReadTar(*ReadFile((dir / "g.tar").string()));
  fs::remove_all(dir);
  REQUIRE_MESSAGE(gnu.ok(), gnu.status().message());
  REQUIRE(gnu->size() == 2);
  CHECK((*gnu)[1].path == "a/b");
  CHECK((*gnu)[1].content == "hello");
  CHECK((*gnu)[1].mode == 0640);

  std::string damaged = *tar;
  damaged[1024 + 1] ^= 1;  // the second header (after the manifest and its block)
  auto bad = ReadTar(damaged);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("checksum") != std::string::npos);
  CHECK_FALSE(ReadTar(tar->substr(0, 1500)).ok());
  // A "../" path, with a correct checksum, is refused.
  std::string evil = *WriteTar({{"xx/yy/etc", "1"}}, 0);
  evil.replace(0, 5, "../..");
  unsigned sum = 0;
  for (int i = 0; i < 512; ++i) sum += (i >= 148 && i < 156) ? ' ' : (unsigned char)evil[i];
  snprintf(evil.data() + 148, 8, "%06o", sum);
  auto refused = ReadTar(evil);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("not a plain relative path") != std::string::npos);
}

TEST_CASE("cpio: GNU cpio reads the initrd part we write, modes included") {
  const std::string cpio = WriteCpio(
      {{"provision", "", 0700, 0, 0, true}, {"/provision/ticket", "0123abcd\n", 0400, 0, 0, false}},
      1700000000);
  CHECK(cpio.size() % 4 == 0);
  CHECK(cpio.compare(0, 6, "070701") == 0);
  CHECK(cpio.find("TRAILER!!!") != std::string::npos);
  namespace fs = std::filesystem;
  auto dir = fs::temp_directory_path() / ("provision-cpio-" + std::to_string(getpid()));
  fs::create_directories(dir / "out");
  REQUIRE(WriteFileAtomic((dir / "t.cpio").string(), cpio).ok());
  ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c",
               "cd '" + (dir / "out").string() + "' && cpio -idm --quiet < '" +
                   (dir / "t.cpio").string() + "'"};
  auto r = RunProcess(spec, 10000);
  REQUIRE(r.ok());
  CHECK_MESSAGE(r->exit_code == 0, r->output);
  CHECK(*ReadFile((dir / "out/provision/ticket").string()) == "0123abcd\n");
  CHECK((fs::status(dir / "out/provision/ticket").permissions() & fs::perms::all) ==
        fs::perms::owner_read);
  CHECK((fs::status(dir / "out/provision").permissions() & fs::perms::all) == fs::perms::owner_all);
  fs::remove_all(dir);
}

}  // namespace prov
