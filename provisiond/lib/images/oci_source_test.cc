#include "images/oci_source.h"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "base/file_util.h"
#include "base/temp_dir.h"
#include "images/build_step.h"
#include "images/source.h"

namespace prov {
namespace {
namespace fs = std::filesystem;

Result<ImageManifest> OciManifest(const std::string& body, const std::string& file = "image.yaml") {
  return ParseImageManifest("name: box\nsource: oci\n" + body, file, "box");
}

// A file of `content` at `root`/`path`.
void Put(const std::string& root, const std::string& path, const std::string& content) {
  fs::create_directories(fs::path(root + path).parent_path());
  REQUIRE(WriteFileAtomic(root + path, content, 0755).ok());
}

// Whether skopeo and umoci can make and unpack layouts here (root: owners
// and capabilities); says why not.
bool CanRunOciTools() {
  if (access("/usr/bin/skopeo", X_OK) == 0 && access("/usr/bin/umoci", X_OK) == 0 && geteuid() == 0)
    return true;
  MESSAGE("skipped: needs root, skopeo and umoci (tests/packages.txt)");
  return false;
}

// A two-layer OCI layout made with umoci, as an image maker would: the lower
// layer has /etc/issue.net, /etc/keep and /bin/sh; the upper one deletes
// issue.net (a whiteout, .wh.issue.net) and adds /usr/local/bin/capped with
// a file capability (cap_net_raw+ep, as setcap writes it).
struct OciLayoutFixture {
  TempDir dir{"oci-test"};
  std::string layout = dir.path() + "/layout";

  bool Make() {
    const std::string d = dir.path();
    const std::string lower = d + "/lower/rootfs", upper = d + "/upper/rootfs";
    if (std::system(("umoci init --layout " + layout + " && umoci new --image " + layout +
                     ":t && umoci unpack --image " + layout + ":t " + d + "/lower >/dev/null")
                        .c_str()) != 0)
      return false;
    Put(lower, "/etc/issue.net", "lower\n");
    Put(lower, "/etc/keep", "kept\n");
    // An owner and a mode of their own.
    Put(lower, "/srv/owned", "owned\n");
    if (chown((lower + "/srv/owned").c_str(), 1234, 5678) != 0 ||
        chmod((lower + "/srv/owned").c_str(), 0640) != 0)
      return false;
    Put(lower, "/bin/sh", "#!/bin/true\n");
    // Enough content that the layer is the layout's largest blob.
    std::string filler;
    for (unsigned i = 0, x = 1; i < 40000; ++i, x = x * 1103515245u + 12345u)
      filler += std::to_string(x >> 8) + "\n";
    Put(lower, "/usr/share/filler", filler);
    if (std::system(("umoci repack --image " + layout + ":t " + d + "/lower && umoci unpack " +
                     "--image " + layout + ":t " + d + "/upper >/dev/null")
                        .c_str()) != 0)
      return false;
    fs::remove(upper + "/etc/issue.net");
    Put(upper, "/usr/local/bin/capped", "#!/bin/true\n");
    // VFS_CAP_REVISION_2, effective, permitted cap_net_raw (13).
    const unsigned char cap[20] = {0x01, 0, 0, 0x02, 0x00, 0x20, 0, 0, 0, 0,
                                   0,    0, 0, 0,    0,    0,    0, 0, 0, 0};
    if (setxattr((upper + "/usr/local/bin/capped").c_str(), "security.capability", cap, sizeof cap,
                 0) != 0)
      return false;
    return std::system(("umoci repack --image " + layout + ":t " + d + "/upper").c_str()) == 0;
  }
};

}  // namespace

TEST_CASE("oci source: the manifest's keys, each error at its line") {
  auto m = OciManifest(
      "oci: docker://nvcr.io/nvidia/cuda:12.4.1-runtime-ubuntu22.04\n"
      "credentials: ngc\n"
      "kernel_package: linux-image-generic\n"
      "packages: [systemd-sysv, openssh-server, curl]\n");
  REQUIRE_MESSAGE(m.ok(), m.status().message());
  const OciSettings& o = OciSettingsOf(*m);
  CHECK(o.reference == "docker://nvcr.io/nvidia/cuda:12.4.1-runtime-ubuntu22.04");
  CHECK(o.credentials == "ngc");
  CHECK(m->kernel_package == "linux-image-generic");
  CHECK(o.packages == std::vector<std::string>{"systemd-sysv", "openssh-server", "curl"});
  CHECK(o.Summary() ==
        "docker://nvcr.io/nvidia/cuda:12.4.1-runtime-ubuntu22.04, 3 packages on top");
  CHECK(OciSkopeoReference(*m) == o.reference);

  // A local archive beside the manifest; an absolute one as it is.
  auto local = OciManifest("oci: oci-archive:box.tar\n", "/srv/images/box/image.yaml");
  REQUIRE(local.ok());
  CHECK(OciSkopeoReference(*local) == "oci-archive:/srv/images/box/box.tar");
  auto saved = OciManifest("oci: docker-archive:/var/lib/provisiond/import/box.tar\n");
  REQUIRE(saved.ok());
  CHECK(OciSkopeoReference(*saved) == "docker-archive:/var/lib/provisiond/import/box.tar");

  for (auto [body, line, what] : {
           std::tuple{"oci: ubuntu:24.04\n", 3, "must start with docker://"},
           std::tuple{"oci: \"docker://ubuntu 24.04\"\n", 3, "is not a registry reference"},
           std::tuple{"oci: oci-archive:../x.tar\n", 3, "a path without '..'"},
           std::tuple{"oci: oci-archive:x.tar\ncredentials: hub\n", 4, "credentials are for"},
           std::tuple{"oci: docker://ubuntu:24.04\ncredentials: \"a b\"\n", 4,
                      "secret name 'a b' must be 1-64 of"},
           std::tuple{"oci: docker://ubuntu:24.04\npackages: [Bad_Name]\n", 4,
                      "not a Debian package"},
           std::tuple{"packages: [curl]\n", 1, "oci"},
       }) {
    auto bad = OciManifest(body);
    REQUIRE(!bad.ok());
    CAPTURE(bad.status().message());
    CHECK(bad.status().message().find("image.yaml:" + std::to_string(line) + ":") !=
          std::string::npos);
    CHECK(bad.status().message().find(what) != std::string::npos);
  }
}

TEST_CASE("oci source: the registry of a reference, for its login") {
  CHECK(OciRegistryOf("docker://ubuntu:24.04") == "docker.io");
  CHECK(OciRegistryOf("docker://library/ubuntu:24.04") == "docker.io");
  CHECK(OciRegistryOf("docker://nvidia/cuda:12.4.1-runtime-ubuntu22.04") == "docker.io");
  CHECK(OciRegistryOf("docker://nvcr.io/nvidia/cuda:12.4.1") == "nvcr.io");
  CHECK(OciRegistryOf("docker://registry.lab:5000/team/node@sha256:ab") == "registry.lab:5000");
  CHECK(OciRegistryOf("docker://localhost/node:1") == "localhost");
}

TEST_CASE("oci source: registry credentials go to skopeo in a login file, never in messages") {
  CHECK(nlohmann::json::parse(OciAuthJson("docker://nvcr.io/nvidia/cuda:12", "$oauthtoken:k3y")) ==
        nlohmann::json::parse(R"({"auths": {"nvcr.io": {"auth": "JG9hdXRodG9rZW46azN5"}}})"));
  if (access("/usr/bin/skopeo", X_OK) != 0) {
    MESSAGE("skipped the rest: needs skopeo");
    return;
  }
  // A registry on a closed port of this machine: skopeo fails, and neither
  // its error nor a progress line carries the password.
  auto m = OciManifest("oci: docker://127.0.0.1:9/team/node:1\ncredentials: team\n");
  REQUIRE(m.ok());
  ImageBuildOptions options;
  options.mirror_check_timeout_s = 5;
  options.secret = [](const std::string& name) -> Result<std::string> {
    if (name != "team") return Status::NotFound("no secret " + name);
    return std::string("builder:pa55-w0rd-9");
  };
  auto source = CreateImageSource("oci", options);
  REQUIRE(source.ok());
  std::vector<std::string> said;
  auto id = (*source)->Identity(*m, [&](const std::string& l) { said.push_back(l); });
  REQUIRE(!id.ok());
  CAPTURE(id.status().message());
  CHECK(id.status().message().find("skopeo inspect failed") != std::string::npos);
  for (const auto& text : said) CHECK(text.find("pa55-w0rd-9") == std::string::npos);
  CHECK(id.status().message().find("pa55-w0rd-9") == std::string::npos);
  // A secret that is not set stops the build before anything runs.
  auto unset = OciManifest("oci: docker://127.0.0.1:9/team/node:1\ncredentials: other\n");
  REQUIRE(unset.ok());
  Status s = (*source)->Check(*unset, {});
  CHECK(s.code() == Code::kNotFound);
  CHECK(s.message() == "image.yaml: no secret other");
}

TEST_CASE("oci source: skopeo's command line has the login file, never the password") {
  // A stand-in for skopeo that writes down its arguments and the login
  // file it was given (mode, content), then fails.
  TempDir dir("oci-argv");
  const std::string fake = dir.path() + "/skopeo";
  REQUIRE(WriteFileAtomic(fake,
                          "#!/bin/sh\n"
                          "printf '%s\\n' \"$@\" >\"" +
                              dir.path() +
                              "/argv\"\n"
                              "prev=\n"
                              "for a in \"$@\"; do\n"
                              "  if [ \"$prev\" = --authfile ]; then\n"
                              "    stat -c %a \"$a\" >\"" +
                              dir.path() +
                              "/mode\"\n"
                              "    cat \"$a\" >\"" +
                              dir.path() +
                              "/auth\"\n"
                              "  fi\n"
                              "  prev=$a\n"
                              "done\n"
                              "exit 1\n",
                          0755)
              .ok());
  auto m = OciManifest("oci: docker://registry.lab:5000/team/node:1\ncredentials: team\n");
  REQUIRE(m.ok());
  ImageBuildOptions options;
  options.skopeo = fake;
  options.secret = [](const std::string&) -> Result<std::string> {
    return std::string("builder:pa55-w0rd-9");
  };
  auto source = CreateImageSource("oci", options);
  REQUIRE(source.ok());
  REQUIRE(!(*source)->Identity(*m, {}).ok());
  const std::string argv = *ReadFile(dir.path() + "/argv");
  CAPTURE(argv);
  CHECK(argv.find("--authfile\n") != std::string::npos);
  CHECK(argv.find("pa55-w0rd-9") == std::string::npos);
  CHECK(argv.find("builder") == std::string::npos);
  CHECK(*ReadFile(dir.path() + "/mode") == "600\n");
  CHECK(nlohmann::json::parse(*ReadFile(dir.path() + "/auth")) ==
        nlohmann::json::parse(
            OciAuthJson("docker://registry.lab:5000/team/node:1", "builder:pa55-w0rd-9")));
}

TEST_CASE("oci source: what a node needs, looked for inside the tree") {
  TempDir dir("oci-missing");
  const std::string root = dir.path();
  CHECK(MissingForNode(root, "") ==
        std::vector<std::string>{"no kernel in /boot and no kernel_package",
                                 "no systemd (add systemd-sysv to packages)",
                                 "no sshd (add openssh-server to packages)",
                                 "no curl (the phone-home agent's: add curl to packages)"});
  CHECK(MissingForNode(root, "linux-image-amd64")[0] ==
        "no kernel in /boot (kernel_package linux-image-amd64 put none)");
  // An absolute link is the tree's: /sbin/init -> /lib/systemd/systemd
  // exists on this machine, but not in the tree yet.
  fs::create_directories(root + "/sbin");
  fs::create_directories(root + "/usr/bin");
  fs::create_symlink("/lib/systemd/systemd", root + "/sbin/init");
  fs::create_symlink("usr/bin", root + "/bin");
  CHECK(MissingForNode(root, "x").size() == 4);
  Put(root, "/usr/lib/systemd/systemd", "");
  fs::create_symlink("usr/lib", root + "/lib");
  Put(root, "/boot/vmlinuz-6.1.0-28-amd64", "");
  Put(root, "/usr/sbin/sshd", "");
  CHECK(MissingForNode(root, "x") ==
        std::vector<std::string>{"no curl (the phone-home agent's: add curl to packages)"});
  Put(root, "/bin/curl", "");  // through the tree's /bin -> usr/bin
  CHECK(MissingForNode(root, "x").empty());
}

TEST_CASE("oci source: layers unpacked with whiteouts and capabilities; no kernel is one error") {
  if (!CanRunOciTools()) return;
  OciLayoutFixture f;
  REQUIRE(f.Make());
  REQUIRE(std::system(
              ("skopeo copy -q oci:" + f.layout + ":t oci-archive:" + f.dir.path() + "/box.tar:t")
                  .c_str()) == 0);
  auto m = OciManifest("oci: oci-archive:box.tar\n", f.dir.path() + "/image.yaml");
  REQUIRE(m.ok());
  auto source = CreateImageSource("oci", {});
  REQUIRE(source.ok());
  std::vector<std::string> said;
  auto progress = [&](const std::string& line) { said.push_back(line); };
  REQUIRE((*source)->Check(*m, progress).ok());
  auto id = (*source)->Identity(*m, progress);
  // Identity needs the finishing inputs (tools, agent): none here.
  CHECK(!id.ok());

  const std::string root = f.dir.path() + "/build/root";
  fs::create_directories(root);
  Status s = (*source)->Fetch(*m, root, progress);
  REQUIRE(!s.ok());
  CHECK(s.code() == Code::kInvalid);
  // One error that names everything missing, before anything is installed.
  CHECK(s.message() == f.dir.path() +
                           "/image.yaml: oci-archive:box.tar is not yet a node's root: no kernel "
                           "in /boot and no kernel_package; no systemd (add systemd-sysv to "
                           "packages); no sshd (add openssh-server to packages); no curl (the "
                           "phone-home agent's: add curl to packages)");
  // The tree as the layers make it: the whiteout applied, the capability kept.
  CHECK(!fs::exists(root + "/etc/issue.net"));
  CHECK(*ReadFile(root + "/etc/keep") == "kept\n");
  unsigned char cap[32] = {};
  CHECK(getxattr((root + "/usr/local/bin/capped").c_str(), "security.capability", cap,
                 sizeof cap) == 20);
  CHECK(cap[4] == 0x00);
  CHECK(cap[5] == 0x20);  // cap_net_raw
  struct stat owned {};
  REQUIRE(lstat((root + "/srv/owned").c_str(), &owned) == 0);
  CHECK(owned.st_uid == 1234);
  CHECK(owned.st_gid == 5678);
  CHECK((owned.st_mode & 07777) == 0640);
  // Nothing of the copy stays beside the tree.
  CHECK(!fs::exists(f.dir.path() + "/build/oci"));
  CHECK(std::find(said.begin(), said.end(), "unpacking the layers") != said.end());
}

TEST_CASE("oci source: a layer whose content does not match its digest is refused") {
  if (!CanRunOciTools()) return;
  OciLayoutFixture f;
  REQUIRE(f.Make());
  // The largest blob is the lower layer: one byte of it changed, same size
  // (the manifest still names the layer's true digest).
  std::string largest;
  for (const auto& e : fs::directory_iterator(f.layout + "/blobs/sha256"))
    if (largest.empty() || fs::file_size(e.path()) > fs::file_size(largest))
      largest = e.path().string();
  std::string blob = *ReadFile(largest);
  blob[blob.size() / 2] = static_cast<char>(blob[blob.size() / 2] ^ 0x55);
  REQUIRE(WriteFileAtomic(largest, blob, 0644).ok());
  auto m = OciManifest("oci: oci:layout:t\n", f.dir.path() + "/image.yaml");
  REQUIRE(m.ok());
  auto source = CreateImageSource("oci", {});
  REQUIRE(source.ok());
  const std::string root = f.dir.path() + "/build/root";
  fs::create_directories(root);
  Status s = (*source)->Fetch(*m, root, {});
  REQUIRE(!s.ok());
  CAPTURE(s.message());
  CHECK(s.message().find("Digest did not match") != std::string::npos);
  CHECK(!fs::exists(root + "/etc/keep"));
}

}  // namespace prov
