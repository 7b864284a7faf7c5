#include "image.h"

#include <doctest/doctest.h>
#include <stdlib.h>
#include <time.h>

#include "format.h"

namespace prov::ctl {

using json = nlohmann::json;

TEST_CASE("image table: sizes for people, root as yes or no") {
  setenv("TZ", "UTC", 1);
  tzset();
  json reply = json::parse(R"js({"images": [
    {"name": "lab", "version": "0123456789abcdef", "ref": "lab@0123456789abcdef",
     "kernel_size": 8388608, "initrd_size": 52428800, "root": false, "created": 1795311857041}]})js");
  CHECK(
      RenderImageTable(reply) ==
      "NAME  VERSION           CURRENT  KERNEL   INITRD    ROOT  CREATED\n"
      "lab   0123456789abcdef  -        8.0 MiB  50.0 MiB  no    2026-11-22T01:44:17.041+00:00\n");
  reply["images"][0]["current"] = true;
  CHECK(RenderImageTable(reply).find("\nlab   0123456789abcdef  yes      8.0 MiB") !=
        std::string::npos);
  CHECK(RenderImageTable(json::object()).find("no images (build one:") == 0);
}

TEST_CASE("image show: ref, current, sizes, root, then how it was built") {
  setenv("TZ", "UTC", 1);
  tzset();
  json image = json::parse(R"js({"name": "lab", "version": "0123456789abcdef",
    "ref": "lab@0123456789abcdef", "kernel_size": 8388608, "initrd_size": 52428800,
    "root": true, "created": 1795311857041, "building": false,
    "build": {"sha256": "0123456789abcdef0000", "manifest_sha256": "fedcba98",
              "suite": "bookworm", "mirror": "http://deb.debian.org/debian",
              "packages": ["openssh-server", "curl"], "kernel": "vmlinuz-6.1.0-18-amd64",
              "files": 23456, "bytes": 432013312, "build_seconds": 185.4,
              "created": 1795311857041}})js");
  CHECK(RenderImage(image, image) ==
        "image:   lab@0123456789abcdef\n"
        "current: yes (lab stands for this version)\n"
        "kernel:  8.0 MiB (vmlinuz-6.1.0-18-amd64)\n"
        "initrd:  50.0 MiB\n"
        "root:    yes (served over NFS)\n"
        "sha256:  0123456789abcdef0000\n"
        "created: 2026-11-22T01:44:17.041+00:00\n"
        "build:\n"
        "  suite:           bookworm\n"
        "  mirror:          http://deb.debian.org/debian\n"
        "  packages:        2: openssh-server, curl\n"
        "  root tree:       23456 files, 412.0 MiB\n"
        "  build time:      3m05s\n"
        "  manifest sha256: fedcba98\n");

  // Another version is current, and a build runs.
  json other = {{"name", "lab"}, {"version", "ffff"}, {"ref", "lab@ffff"}};
  image["building"] = true;
  const std::string text = RenderImage(image, other);
  CHECK(text.find("\ncurrent:  no (lab stands for lab@ffff)\n") != std::string::npos);
  CHECK(text.find("\nbuilding: a build of lab runs now") != std::string::npos);
  // The name stands for no version (its current one was removed).
  CHECK(RenderImage(image, json()).find("\ncurrent:  no\n") != std::string::npos);
  // The API's own "current" wins.
  image["current"] = true;
  CHECK(RenderImage(image, other).find("\ncurrent:  yes") != std::string::npos);
}

TEST_CASE("image show: a container image's reference, digest and packages on top") {
  json image = json::parse(R"js({"name": "noble", "version": "0123456789abcdef",
    "ref": "noble@0123456789abcdef", "kernel_size": 1, "initrd_size": 2, "root": true,
    "build": {"sha256": "01", "manifest_sha256": "fe", "files": 2, "bytes": 3,
              "oci": {"reference": "docker://ubuntu:24.04", "digest": "sha256:9a8b",
                      "packages": ["systemd-sysv", "openssh-server"]}}})js");
  const std::string text = RenderImage(image, image);
  CHECK_MESSAGE(
      text.find("build:\n"
                "  oci image:       docker://ubuntu:24.04\n"
                "  digest:          sha256:9a8b\n"
                "  on top:          2: systemd-sysv, openssh-server\n") != std::string::npos,
      text);
  CHECK(text.find("suite") == std::string::npos);
}

TEST_CASE("image show says an imported image was imported, and from where") {
  json image = json::parse(R"js({"name": "npu", "version": "aa", "ref": "npu@aa",
    "kernel_size": 10, "initrd_size": 20, "root": false,
    "build": {"sha256": "aa11", "source": {"kernel": "/k", "initrd": "/i"}}})js");
  const std::string text = RenderImage(image, image);
  CHECK(text.find("\nroot:    no (a kernel and an initrd only)\n") != std::string::npos);
  CHECK(text.find("\nkernel:  10 B\n") != std::string::npos);
  CHECK(text.find("\nbuild: none (imported from /k and /i)\n") == text.size() - 39);
  image.erase("build");
  CHECK(RenderImage(image, json()).find("build: none (imported)\n") != std::string::npos);
}

TEST_CASE("image verify: a line per check, the root arguments, the verdict") {
  json reply = json::parse(R"js({"image": "lab@01", "kernel": true, "initrd": true,
    "root": true, "nfs": "os-release read back over NFS",
    "root_args": "root=/dev/nfs nfsroot=10.0.0.1:/lab@01", "ok": true})js");
  CHECK(RenderImageVerify(reply) ==
        "ok    kernel  present\n"
        "ok    initrd  present\n"
        "ok    root    a root tree to serve\n"
        "ok    nfs     os-release read back over NFS\n"
        "kernel root arguments: root=/dev/nfs nfsroot=10.0.0.1:/lab@01\n"
        "lab@01 can be served\n");
  CHECK(ImageVerified(reply));

  reply["ok"] = false;
  reply["nfs"] = "mount failed:\nno such export";
  CHECK(RenderImageVerify(reply).find("FAIL  nfs     mount failed:\n"
                                      "              no such export\n") != std::string::npos);
  CHECK(RenderImageVerify(reply).find("lab@01 failed verification\n") != std::string::npos);
  CHECK_FALSE(ImageVerified(reply));

  // No root: root and nfs do not apply, and the image is fine.
  json bare = {{"image", "npu@02"},          {"kernel", true}, {"initrd", true}, {"root", false},
               {"nfs", "no root to export"}, {"ok", true}};
  CHECK(RenderImageVerify(bare) ==
        "ok    kernel  present\n"
        "ok    initrd  present\n"
        "-     root    none (a kernel and an initrd)\n"
        "-     nfs     no root to export\n"
        "npu@02 can be served\n");
  // A missing kernel fails, whatever "ok" says.
  reply = bare;
  reply["kernel"] = false;
  CHECK(RenderImageVerify(reply).find("FAIL  kernel  missing or empty\n") == 0);
  CHECK_FALSE(ImageVerified(reply));
}

TEST_CASE("image build events: the image, the text, progress lines with the time") {
  auto e = ParseImageBuildEvent(
      {{"kind", "image-build"}, {"time", 5}, {"detail", "lab: mmdebstrap: I: extracting"}});
  REQUIRE(e);
  CHECK(e->kind == "image-build");
  CHECK(e->image == "lab");
  CHECK(e->text == "mmdebstrap: I: extracting");
  CHECK(e->time_ms == 5);
  CHECK_FALSE(ParseImageBuildEvent({{"kind", "image"}, {"detail", "lab: imported lab@1"}}));
  CHECK_FALSE(ParseImageBuildEvent(json::object()));
  e = ParseImageBuildEvent({{"kind", "image-build-failed"}, {"detail", "lab"}});
  REQUIRE(e);
  CHECK(e->image == "lab");
  CHECK(e->text == "");

  CHECK(RenderBuildProgress("mmdebstrap: I: downloading", 12'345) ==
        "[ 12.3s] mmdebstrap: I: downloading\n");
  CHECK(RenderBuildProgress("built", 185'400) == "[185.4s] built\n");
  CHECK(RenderBuildProgress("a\nb\n", -5) ==
        "[  0.0s] a\n"
        "         b\n");
  CHECK(FormatDuration(12'345) == "12.3s");
  CHECK(FormatDuration(185'400) == "3m05s");
}

TEST_CASE("image renderers take missing fields as unknown rather than failing") {
  CHECK_NOTHROW(RenderImageTable(json::parse(R"js({"images": [{}]})js")));
  CHECK_NOTHROW(RenderImage(json::object(), json()));
  CHECK_NOTHROW(RenderImage(json::array(), json::array()));
  CHECK_NOTHROW(RenderImage(json::parse(R"js({"build": {"suite": 1, "packages": [{}],
      "build_seconds": "x"}})js"),
                            json::object()));
  CHECK_NOTHROW(RenderImageVerify(json::object()));
  CHECK_NOTHROW(ParseImageBuildEvent(json::array()));
}

}  // namespace prov::ctl
