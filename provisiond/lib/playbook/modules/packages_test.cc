// apt, apt_repository and get_url, run on this machine without the network
// (test_fixture.h).
#include <doctest/doctest.h>

#include <cstdlib>

#include "playbook/modules/modules.h"
#include "playbook/modules/test_fixture.h"

namespace prov {

TEST_CASE_FIXTURE(ModuleFixture, "apt: an installed package is ok, nothing is fetched") {
  if (system("command -v dpkg-query >/dev/null 2>&1") != 0) return;
  auto o = Run("apt", {{"name", json::array({"coreutils", "dpkg"})}, {"state", "present"}});
  INFO(o.msg);
  CHECK_FALSE(o.failed);
  CHECK_FALSE(o.changed);
  o = Run("apt", {{"pkg", "coreutils"}});
  CHECK_FALSE(o.changed);
  // Absent and never installed: nothing to do.
  o = Run("apt", {{"name", "provisiond-no-such-package"}, {"state", "absent"}});
  CHECK_FALSE(o.failed);
  CHECK_FALSE(o.changed);
  o = Run("apt", {{"name", "Bad Name"}});
  CHECK(o.failed);
  CHECK(o.msg.find("not a package name") != std::string::npos);
  o = Run("apt", {{"state", "present"}});
  CHECK(o.failed);
  o = Run("apt", {{"deb", dir / "missing.deb"}});
  CHECK(o.failed);
  CHECK(o.msg.find("not found on the node") != std::string::npos);
}

TEST_CASE_FIXTURE(ModuleFixture,
                  "apt: update_cache asks the mirror only when a package is missing") {
  if (system("command -v dpkg-query >/dev/null 2>&1") != 0) return;
  // An apt-get that records that it ran and fails, as with no mirror in reach
  // (a node booted from an image that baked its packages).
  fs::create_directories(dir / "bin");
  WriteExecutable(dir / "bin/apt-get", "#!/bin/sh\necho \"$*\" >>" + (dir / "apt-get.calls") +
                                           "\necho 'E: no mirror' >&2\nexit 100\n");
  PathPrefix path(dir / "bin");
  auto o = Run("apt", {{"name", json::array({"coreutils", "dpkg"})}, {"update_cache", true}});
  INFO(o.msg);
  CHECK_FALSE(o.failed);
  CHECK_FALSE(o.changed);
  CHECK_FALSE(fs::exists(dir / "apt-get.calls"));
  o = Run("apt", {{"name", "provisiond-no-such-package"}, {"update_cache", true}});
  CHECK(o.failed);
  CHECK(o.msg.find("Failed to update apt cache") != std::string::npos);
  CHECK(fs::exists(dir / "apt-get.calls"));
}

TEST_CASE_FIXTURE(ModuleFixture, "apt_repository writes ppa and deb lines into its own sources") {
  // APT_CONFIG points apt-config (and so the module) at sources under dir.
  fs::create_directories(dir / "sources.list.d");
  PutFile(dir / "sources.list", "deb http://deb.debian.org/debian bookworm main\n");
  PutFile(dir / "apt.conf", "Dir::Etc::sourcelist \"" + (dir / "sources.list") +
                                "\";\nDir::Etc::sourceparts \"" + (dir / "sources.list.d") +
                                "\";\n");
  setenv("APT_CONFIG", (dir / "apt.conf").c_str(), 1);
  struct Unset {
    ~Unset() { unsetenv("APT_CONFIG"); }
  } unset;

  json ppa = {{"repo", "ppa:graphics-drivers/ppa"}, {"codename", "noble"}, {"update_cache", false}};
  Idempotent("apt_repository", ppa);
  std::string f = dir / "sources.list.d/graphics-drivers-ubuntu-ppa-noble.list";
  CHECK(FileText(f) ==
        "deb https://ppa.launchpadcontent.net/graphics-drivers/ppa/ubuntu noble main\n");
  CHECK(Mode(f) == 0644);

  json deb = {{"repo", "deb  [arch=amd64]  https://repo.example.com/apt stable main"},
              {"filename", "example"},
              {"update_cache", "no"}};
  Idempotent("apt_repository", deb);
  CHECK(FileText(dir / "sources.list.d/example.list") ==
        "deb [arch=amd64] https://repo.example.com/apt stable main\n");

  // Already in sources.list: nothing to add.
  auto o = Run("apt_repository", {{"repo", "deb http://deb.debian.org/debian bookworm main"},
                                  {"update_cache", false}});
  CHECK_FALSE(o.changed);

  Idempotent("apt_repository", {{"repo", "deb https://x.example.org/debian stable main"},
                                {"signed_by", "/usr/share/keyrings/x.gpg"},
                                {"update_cache", false}});
  CHECK(FileText(dir / "sources.list.d/x_example_org_debian.list") ==
        "deb [signed-by=/usr/share/keyrings/x.gpg] https://x.example.org/debian stable main\n");

  json ppa_absent = ppa;
  ppa_absent["state"] = "absent";
  Idempotent("apt_repository", ppa_absent);
  CHECK_FALSE(fs::exists(f));

  o = Run("apt_repository", {{"repo", "http://not-a-line"}, {"update_cache", false}});
  CHECK(o.failed);
  CHECK(o.msg.find("must be a 'deb ...'") != std::string::npos);
}

TEST_CASE_FIXTURE(ModuleFixture, "get_url fetches once, checks the checksum") {
  if (system("command -v curl >/dev/null 2>&1") != 0) return;
  PutFile(dir / "source.bin", "payload\n");
  const std::string url = "file://" + (dir / "source.bin");
  const std::string sum =
      "sha256:" + std::string("3cbdbfcc9b7bc2d5ab0d4b46bbac3d3e2c1f2b0e9b2b1a9e0b4f0bd7a4e5ac7f");
  std::string dest = dir / "got.bin";
  Idempotent("get_url", {{"url", url}, {"dest", dest}, {"mode", "0600"}});
  CHECK(FileText(dest) == "payload\n");
  CHECK(Mode(dest) == 0600);

  // The right checksum of what is there: ok; a wrong one: fetched again and refused.
  auto stat = Run("stat", {{"path", dest}, {"checksum_algorithm", "sha256"}});
  std::string good = "sha256:" + stat.result["stat"]["checksum"].get<std::string>();
  auto o = Run("get_url", {{"url", url}, {"dest", dest}, {"checksum", good}});
  CHECK_FALSE(o.failed);
  CHECK_FALSE(o.changed);
  o = Run("get_url", {{"url", url}, {"dest", dir / "other.bin"}, {"checksum", sum}});
  CHECK(o.failed);
  CHECK(o.msg.find("did not match") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "other.bin"));

  // force: fetched again, but the same bytes: not changed.
  o = Run("get_url", {{"url", url}, {"dest", dest}, {"force", true}});
  CHECK_FALSE(o.changed);
  PutFile(dir / "source.bin", "payload 2\n");
  o = Run("get_url", {{"url", url}, {"dest", dest}, {"force", true}});
  CHECK(o.changed);
  CHECK(FileText(dest) == "payload 2\n");

  o = Run("get_url", {{"url", "file://" + (dir / "absent")}, {"dest", dir / "x"}});
  CHECK(o.failed);
  CHECK(o.msg.find("Request failed") != std::string::npos);
  o = Run("get_url", {{"url", url}, {"dest", dir / "nodir/x"}});
  CHECK(o.failed);
  CHECK(o.msg.find("does not exist") != std::string::npos);
  o = Run("get_url", {{"url", url}, {"dest", dest}, {"checksum", "sha256"}});
  CHECK(o.failed);
  CHECK(o.msg.find("checksum must be") != std::string::npos);
}

}  // namespace prov

namespace prov {

TEST_CASE_FIXTURE(ModuleFixture, "package: apt on Debian nodes, Ansible's state names") {
  if (system("command -v dpkg-query >/dev/null 2>&1") != 0) return;
  auto o = Run("ansible.builtin.package",
               {{"name", json::array({"coreutils"})}, {"state", "installed"}});
  INFO(o.msg);
  CHECK_FALSE(o.failed);
  CHECK_FALSE(o.changed);
  o = Run("package", {{"name", "provisiond-no-such-package"}, {"state", "removed"}});
  CHECK_FALSE(o.failed);
  CHECK_FALSE(o.changed);
  o = Run("package", {{"name", "Bad Name"}});
  CHECK(o.failed);
  CHECK_MESSAGE(o.msg.find("package: 'Bad Name' is not a package name") == 0, o.msg);
  o = Run("package", {{"name", "coreutils"}, {"use", "dnf"}});
  CHECK(o.failed);
  CHECK(o.msg.find("drives apt only") != std::string::npos);
}

}  // namespace prov
