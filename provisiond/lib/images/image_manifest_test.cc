#include "images/image_manifest.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <map>

#include "images/mmdebstrap_source.h"

namespace prov {

TEST_CASE("image manifests: every shipped manifest loads, with its source's keys") {
  std::map<std::string, std::string> sources;
  for (const auto& e : std::filesystem::directory_iterator(PROVISION_SOURCE_DIR "/images")) {
    if (!std::filesystem::exists(e.path() / "image.yaml")) continue;
    const std::string name = e.path().filename().string();
    INFO(name);
    auto m = LoadImageManifest(PROVISION_SOURCE_DIR "/images", name);
    REQUIRE_MESSAGE(m.ok(), m.status().message());
    CHECK(m->name == name);
    CHECK_FALSE(m->kernel_package.empty());
    sources[name] = m->source;
  }
  CHECK(sources.size() >= 7);
  for (const char* name : {"lab", "ubuntu-arc", "ubuntu-nvidia", "debian-amd-npu"})
    CHECK(sources.at(name) == "mmdebstrap");
  for (const char* name : {"lab-oci", "ubuntu-oci", "cuda-oci"}) CHECK(sources.at(name) == "oci");
  auto arc = LoadImageManifest(PROVISION_SOURCE_DIR "/images", "ubuntu-arc");
  CHECK(AptSettingsOf(*arc).apt_sources.at(0).Render("noble") ==
        "deb http://ppa.launchpadcontent.net/kobuk-team/intel-graphics/ubuntu noble main");
}

TEST_CASE("image manifests: broken ones say what and where") {
  struct Case {
    const char* text;
    const char* error;
  };
  const std::string base =
      "name: x\ndistribution: debian\nsuite: bookworm\nmirror: http://m\nkernel_package: "
      "linux-image-amd64\n";
  const Case cases[] = {
      {"name: x\n", "missing required key 'distribution'"},
      {"name: y\ndistribution: debian\nsuite: s\nmirror: http://m\nkernel_package: k\n",
       "i.yaml:1:7: name 'y' does not match its directory 'x'"},
      {"name: x\ndistribution: arch\nsuite: s\nmirror: http://m\nkernel_package: k\n",
       "i.yaml:2:15: distribution must be debian or ubuntu"},
      {"name: x\ndistribution: debian\nsuite: s\nmirror: ftp://m\nkernel_package: k\n",
       "i.yaml:4:9: mirror must be an http://"},
      {"name: x\ndistribution: debian\nsuite: s\nmirror: http://m\nkernel_package: k\npackages: "
       "[Bad_Name]\n",
       "'Bad_Name' is not a Debian package name"},
      {"name: x\ndistribution: debian\nsuite: s\nmirror: http://m\nkernel_package: "
       "k\napt_sources:\n  - ppa: a/b\n",
       "PPAs are for Ubuntu"},
      {"name: x\ndistribution: ubuntu\nsuite: s\nmirror: http://m\nkernel_package: "
       "k\napt_sources:\n  - {}\n",
       "needs exactly one of 'ppa' or 'line'"},
      {"name: x\ndistribution: debian\nsuite: s\nmirror: http://m\nkernel_package: k\nfiles:\n  - "
       "{path: etc/x, content: y}\n",
       "must be absolute"},
      {"name: x\ndistribution: debian\nsuite: s\nmirror: http://m\nkernel_package: k\nsize: 3\n",
       "i.yaml:6:1: unknown key 'size'"},
      {"name: x\ndistribution: debian\nsuite: s\nmirror: http://m\nkernel_package: k\nkeyring: "
       "../../etc/shadow\n",
       "i.yaml:6:10: keyring '../../etc/shadow' must be the name of a .gpg or .asc file"},
      {"name: x\ndistribution: debian\nsuite: s\nmirror: http://m\nkernel_package: k\napt_sources:"
       "\n  - {line: \"deb [arch=amd64] http://r s main\", signed_by: r.gpg}\n",
       "the line has its own [options]"},
      {"name: x\ndistribution: debian\nsuite: s\nmirror: http://m\nkernel_package: "
       "k\ninitrd_modules: [\"nvme; reboot\"]\n",
       "'nvme; reboot' is not a kernel module name"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    auto m = ParseImageManifest(c.text, "i.yaml", "x");
    REQUIRE_FALSE(m.ok());
    CHECK_MESSAGE(m.status().message().find(c.error) != std::string::npos, m.status().message());
  }
  CHECK(ParseImageManifest(base, "i.yaml", "x").ok());
}

}  // namespace prov
