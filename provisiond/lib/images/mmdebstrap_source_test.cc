#include "images/mmdebstrap_source.h"

#include <doctest/doctest.h>

#include "images/source.h"

namespace prov {

TEST_CASE("image sources: the registry lists mmdebstrap and oci; an unknown one lists them") {
  CHECK(ImageSourceNames() == std::vector<std::string_view>{"mmdebstrap", "oci"});
  auto source = CreateImageSource("mmdebstrap", {});
  REQUIRE(source.ok());
  CHECK((*source)->name() == "mmdebstrap");
  auto tarball = CreateImageSource("tarball", {});
  CHECK(tarball.status().code() == Code::kInvalid);
  CHECK(tarball.status().message() == "unknown image source 'tarball' (mmdebstrap, oci)");
}

TEST_CASE("image sources: mmdebstrap's command from a manifest (no mmdebstrap run)") {
  auto m = ParseImageManifest(
      "name: arc\n"
      "distribution: ubuntu\n"
      "suite: noble\n"
      "mirror: http://archive.ubuntu.com/ubuntu\n"
      "components: [main, universe]\n"
      "kernel_package: linux-image-generic\n"
      "packages: [openssh-server, curl]\n"
      "apt_sources:\n"
      "  - ppa: kobuk-team/intel-graphics\n"
      "  - line: \"deb http://example.org/x noble main\"\n",
      "image.yaml", "arc");
  REQUIRE_MESSAGE(m.ok(), m.status().message());
  ProcessSpec spec = MmdebstrapCommand(*m, "/usr/bin/mmdebstrap", "/store/arc/.build-1/root");
  CHECK(spec.argv ==
        std::vector<std::string>{
            "/usr/bin/mmdebstrap",
            "--mode=root",
            "--variant=minbase",
            "--architectures=amd64",
            "--components=main,universe",
            "--include=linux-image-generic,openssh-server,curl",
            "--aptopt=Acquire::Languages \"none\"",
            "--dpkgopt=path-exclude=/usr/share/man/*",
            "--dpkgopt=path-exclude=/usr/share/doc/*",
            "--dpkgopt=path-include=/usr/share/doc/*/copyright",
            "--dpkgopt=path-exclude=/usr/share/locale/*",
            "noble",
            "/store/arc/.build-1/root",
            "http://archive.ubuntu.com/ubuntu",
            "deb http://ppa.launchpadcontent.net/kobuk-team/intel-graphics/ubuntu noble main",
            "deb http://example.org/x noble main",
        });
  // The kernel package's own initramfs is never used: the node boots ours.
  CHECK(spec.env == std::vector<std::string>{"INITRD=No"});

  auto source = CreateImageSource("mmdebstrap", {});
  REQUIRE(source.ok());
  // Keys beside the manifest: the archive's trusted while building, a
  // source's named by its line; a missing one stops the build before any
  // fetch, naming the file.
  auto keyed = ParseImageManifest(
      "name: arc\n"
      "distribution: ubuntu\n"
      "suite: noble\n"
      "mirror: http://archive.ubuntu.com/ubuntu\n"
      "keyring: ubuntu-archive-keyring.gpg\n"
      "kernel_package: linux-image-generic\n"
      "apt_sources:\n"
      "  - ppa: kobuk-team/intel-graphics\n"
      "    signed_by: kobuk-team.asc\n",
      "/srv/images/arc/image.yaml", "arc");
  REQUIRE_MESSAGE(keyed.ok(), keyed.status().message());
  spec = MmdebstrapCommand(*keyed, "/usr/bin/mmdebstrap", "/r");
  const std::vector<std::string> hooks(spec.argv.begin() + 6, spec.argv.begin() + 9);
  CHECK(hooks == std::vector<std::string>{
                     "--setup-hook=mkdir -p \"$1/etc/apt/trusted.gpg.d\" \"$1/etc/apt/keyrings\"",
                     "--setup-hook=copy-in /srv/images/arc/ubuntu-archive-keyring.gpg "
                     "/etc/apt/trusted.gpg.d/",
                     "--setup-hook=copy-in /srv/images/arc/kobuk-team.asc /etc/apt/keyrings/"});
  CHECK(spec.argv.back() ==
        "deb [signed-by=/etc/apt/keyrings/kobuk-team.asc] "
        "http://ppa.launchpadcontent.net/kobuk-team/intel-graphics/ubuntu noble main");
  Status missing = (*source)->Check(*keyed, nullptr);
  CHECK(missing.code() == Code::kNotFound);
  CHECK(missing.message().find("archive key ubuntu-archive-keyring.gpg not found: looked in "
                               "/srv/images/arc/ubuntu-archive-keyring.gpg, "
                               "/usr/share/keyrings/ubuntu-archive-keyring.gpg") !=
        std::string::npos);
  CHECK(missing.message().find("ubuntu-keyring") != std::string::npos);
  // A downloaded key must be pinned; a fingerprint is 40 hex digits.
  for (const auto& [yaml, error] : std::vector<std::pair<std::string, std::string>>{
           {"keyring_url: https://example.invalid/k.gpg\n", "needs keyring_fingerprint"},
           {"keyring_fingerprint: F6EC B376\n", "is not a key fingerprint"},
           {"keyring_url: ftp://example.invalid/k.gpg\nkeyring_fingerprint: "
            "C29FEFCA65A2884015919AD99357B0F01FC632CC\n",
            "keyring_url must be an http(s) URL"}}) {
    auto bad = ParseImageManifest(
        "name: arc\ndistribution: ubuntu\nsuite: noble\nmirror: http://m\n"
        "keyring: ubuntu-archive-keyring.gpg\nkernel_package: linux-image-generic\n" +
            yaml,
        "/srv/images/arc/image.yaml", "arc");
    INFO(yaml);
    CHECK(bad.status().message().find(error) != std::string::npos);
    CHECK(bad.status().message().find("image.yaml:7") != std::string::npos);
  }

  CHECK((*source)->Provenance(*m) == nlohmann::json{{"suite", "noble"},
                                                    {"mirror", "http://archive.ubuntu.com/ubuntu"},
                                                    {"packages", {"openssh-server", "curl"}}});
}

TEST_CASE("image sources: a manifest's source: names its source, which reads its own keys") {
  auto m = ParseImageManifest(
      "name: x\nsource: mmdebstrap\ndistribution: debian\nsuite: bookworm\n"
      "mirror: http://m\nkernel_package: linux-image-amd64\npackages: [curl]\n",
      "x/image.yaml", "x");
  REQUIRE_MESSAGE(m.ok(), m.status().message());
  CHECK(m->source == "mmdebstrap");
  CHECK(AptSettingsOf(*m).suite == "bookworm");
  CHECK(AptSettingsOf(*m).packages == std::vector<std::string>{"curl"});
  CHECK(m->settings->Summary() == "debian bookworm, 1 packages");
  // Without source:, mmdebstrap (every manifest before the key).
  auto plain = ParseImageManifest(
      "name: x\ndistribution: debian\nsuite: bookworm\nmirror: http://m\nkernel_package: k\n",
      "x/image.yaml", "x");
  REQUIRE_MESSAGE(plain.ok(), plain.status().message());
  CHECK(plain->source == "mmdebstrap");
  // An unknown source is an error at its line, naming the known ones; the
  // keys no source read are unknown keys.
  auto other = ParseImageManifest("name: x\nsource: tarball\nsuite: noble\n", "x/image.yaml", "x");
  REQUIRE_FALSE(other.ok());
  CHECK_MESSAGE(other.status().message().find(
                    "x/image.yaml:2:9: unknown image source 'tarball' (mmdebstrap, oci)") !=
                    std::string::npos,
                other.status().message());
  CHECK_MESSAGE(other.status().message().find("unknown key 'suite'") != std::string::npos,
                other.status().message());
}

TEST_CASE("image sources: mmdebstrap checks its mirror first") {
  ImageManifest m;
  auto apt = std::make_shared<AptSettings>();
  apt->mirror = "file:///nonexistent/mirror";
  apt->suite = "bookworm";
  m.settings = apt;
  auto source = CreateImageSource("mmdebstrap", {});
  std::vector<std::string> said;
  Status s = (*source)->Check(m, [&](const std::string& line) { said.push_back(line); });
  CHECK(s.code() == Code::kUnavailable);
  CHECK(s.message() ==
        "mirror file:///nonexistent/mirror has no /nonexistent/mirror/dists/bookworm/Release");
  CHECK(said ==
        std::vector<std::string>{"checking mirror file:///nonexistent/mirror for bookworm"});
}

}  // namespace prov
