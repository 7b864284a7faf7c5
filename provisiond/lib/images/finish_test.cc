#include "images/finish.h"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "base/file_util.h"

namespace prov {
namespace {

namespace fs = std::filesystem;

// Writes a file, making its directory first.
void Put(const std::string& path, const std::string& content, int mode = 0644) {
  REQUIRE(MakeDirs(fs::path(path).parent_path().string()).ok());
  REQUIRE(WriteFileAtomic(path, content, mode).ok());
}

// What a build needs besides a root (stand-ins for the agent, the static
// tools and the initrd builder) and an image store.
struct FinishFixture {
  fs::path dir = fs::temp_directory_path() / ("provision-finish-" + std::to_string(getpid()));
  std::unique_ptr<ImageCatalog> catalog;
  ImageBuildOptions options;
  ImageManifest manifest;
  std::vector<std::string> said;
  BuildProgress progress = [this](const std::string& line) { said.push_back(line); };

  FinishFixture() {
    fs::remove_all(dir);
    fs::create_directories(dir);
    options.tools_dir = (dir / "tools").string();
    options.agent_dir = (dir / "agent").string();
    options.initrd_builder = (dir / "build-initrd.sh").string();
    Put(options.tools_dir + "/provision-facts", "FACTS", 0755);
    Put(options.tools_dir + "/provision-mount", "MOUNT", 0755);
    Put(options.tools_dir + "/provision-fetch", "FETCH", 0755);
    Put(options.agent_dir + "/provision-hello", "HELLO", 0755);
    Put(options.agent_dir + "/provision-hello.service", "[Unit]\n");
    Put(options.agent_dir + "/provision-console", "CONSOLE", 0755);
    Put(options.agent_dir + "/provision-console.service", "[Unit]\n");
    Put(options.agent_dir + "/provision-storage.service", "[Unit]\n");
    // The real builder packs busybox and the kernel's modules; this one
    // writes what it was given, and fails when the root has no modules.
    Put(options.initrd_builder,
        "set -e\n"
        "ls \"$1/lib/modules\" >/dev/null\n"
        "echo \"initrd for $(ls \"$1/lib/modules\") with $PROVISION_MOUNT\" > \"$2\"\n",
        0755);
    catalog = std::make_unique<ImageCatalog>((dir / "store").string());
    manifest.name = "tiny";
    manifest.kernel_package = "linux-image-amd64";
    manifest.sha256 = "manifest-hash";
    manifest.files = {{"/etc/motd", "hello\n", "0644"}};
  }
  ~FinishFixture() { fs::remove_all(dir); }

  // A root as a source leaves it: two kernels, an initramfs-tools initrd,
  // modules, and the build host's identity.
  static void FakeRoot(const std::string& root) {
    Put(root + "/boot/vmlinuz-6.1.0-1-amd64", "OLD KERNEL");
    Put(root + "/boot/vmlinuz-6.1.0-2-amd64", "KERNEL");
    Put(root + "/boot/initrd.img-6.1.0-2-amd64", "INITRAMFS-TOOLS");
    Put(root + "/lib/modules/6.1.0-2-amd64/modules.dep", "");
    Put(root + "/etc/hostname", "buildhost\n");
    Put(root + "/etc/machine-id", "0123456789abcdef\n");
    Put(root + "/etc/ssh/ssh_host_ed25519_key", "PRIVATE", 0600);
    fs::create_symlink("vmlinuz-6.1.0-2-amd64", root + "/boot/vmlinuz");
  }

  Result<ImageVersion> Finish(BuildDir& build) {
    return FinishImage(build, manifest, {{"suite", "bookworm"}}, *catalog, options, progress,
                       std::chrono::steady_clock::now());
  }

  // What is in the image's directory of the store besides finished versions.
  std::vector<std::string> Leftovers() {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir / "store" / "tiny", ec))
      if (e.path().filename().string().rfind(".build-", 0) == 0)
        out.push_back(e.path().filename().string());
    return out;
  }
};

}  // namespace

TEST_CASE("image finishing: a fake root becomes a committed version") {
  FinishFixture f;
  auto build = BuildDir::Create(*f.catalog, "tiny");
  REQUIRE(build.ok());
  const std::string work = build->path();
  FinishFixture::FakeRoot(build->root());
  auto v = f.Finish(*build);
  REQUIRE_MESSAGE(v.ok(), v.status().message());
  CHECK(v->name == "tiny");
  CHECK(v->version.size() == 16);
  CHECK(v->dir == (f.dir / "store" / "tiny" / v->version).string());
  // The newest kernel; the initrd from the builder, for the root's modules.
  CHECK(*ReadFile(v->kernel) == "KERNEL");
  CHECK(*ReadFile(v->initrd) ==
        "initrd for 6.1.0-2-amd64 with " + f.options.tools_dir + "/provision-mount\n");
  CHECK(*ReadFile(f.catalog->store_dir() + "/tiny/current") == v->version + "\n");
  CHECK(f.catalog->Resolve("tiny")->version == v->version);
  // Renamed, not copied: the build directory is gone.
  CHECK_FALSE(fs::exists(work));
  CHECK(f.Leftovers().empty());

  const std::string root = v->dir + "/root";
  CHECK(*ReadFile(root + "/etc/motd") == "hello\n");
  CHECK(*ReadFile(root + "/usr/local/sbin/provision-hello") == "HELLO");
  CHECK(*ReadFile(root + "/usr/local/sbin/provision-facts") == "FACTS");
  CHECK(fs::read_symlink(root +
                         "/etc/systemd/system/multi-user.target.wants/provision-hello.service") ==
        "/etc/systemd/system/provision-hello.service");
  CHECK(*ReadFile(root + "/usr/local/sbin/provision-console") == "CONSOLE");
  CHECK(fs::read_symlink(root +
                         "/etc/systemd/system/multi-user.target.wants/provision-console.service") ==
        "/etc/systemd/system/provision-console.service");
  CHECK(fs::read_symlink(root +
                         "/etc/systemd/system/local-fs.target.wants/provision-storage.service") ==
        "/etc/systemd/system/provision-storage.service");
  const auto keygen = ReadFile(root + "/etc/systemd/system/ssh.service.d/provision-hostkeys.conf");
  REQUIRE(keygen.ok());
  CHECK(keygen->find("-t ed25519") != std::string::npos);
  CHECK(keygen->find("ssh-keygen -A") == std::string::npos);  // no RSA key at every boot
  CHECK(*ReadFile(root + "/etc/ssh/sshd_config.d/provision-hostkey.conf") ==
        "# provisiond: nodes make and offer the Ed25519 host key only.\n"
        "HostKey /etc/ssh/ssh_host_ed25519_key\n");
  CHECK_FALSE(fs::exists(root + "/etc/hostname"));
  CHECK_FALSE(fs::exists(root + "/etc/ssh/ssh_host_ed25519_key"));
  CHECK(*ReadFile(root + "/etc/machine-id") == "");
  CHECK_FALSE(fs::exists(root + "/boot/initrd.img-6.1.0-2-amd64"));

  auto meta = nlohmann::json::parse(*ReadFile(v->dir + "/image.json"));
  CHECK(meta["name"] == "tiny");
  CHECK(meta["version"] == v->version);
  CHECK(meta["sha256"].get<std::string>().substr(0, 16) == v->version);
  CHECK(meta["manifest_sha256"] == "manifest-hash");
  CHECK(meta["kernel"] == "vmlinuz-6.1.0-2-amd64");
  CHECK(meta["suite"] == "bookworm");  // the source's part
  CHECK(meta["files"].get<int>() > 5);

  CHECK(f.said.front() == "adding files and the phone-home agent");
  CHECK(f.said.back().rfind("built tiny@" + v->version + ": ", 0) == 0);
}

TEST_CASE("image finishing: the same content twice is the same version, committed once") {
  FinishFixture f;
  auto first = BuildDir::Create(*f.catalog, "tiny");
  FinishFixture::FakeRoot(first->root());
  auto v1 = f.Finish(*first);
  REQUIRE_MESSAGE(v1.ok(), v1.status().message());
  const std::string stamp = *ReadFile(v1->dir + "/image.json");

  std::string work;
  {
    auto second = BuildDir::Create(*f.catalog, "tiny");
    FinishFixture::FakeRoot(second->root());
    work = second->path();
    f.said.clear();
    auto v2 = f.Finish(*second);
    REQUIRE_MESSAGE(v2.ok(), v2.status().message());
    CHECK(v2->version == v1->version);
    CHECK(std::count(f.said.begin(), f.said.end(),
                     "the same content exists already as tiny@" + v1->version) == 1);
    // The existing version is left as it was; the second build goes away
    // with its directory.
    CHECK(*ReadFile(v1->dir + "/image.json") == stamp);
    CHECK(fs::exists(work));
  }
  CHECK_FALSE(fs::exists(work));
  CHECK(f.Leftovers().empty());
}

TEST_CASE("image finishing: an initrd is reused when its kernel, modules and tools are the same") {
  FinishFixture f;
  auto first = BuildDir::Create(*f.catalog, "tiny");
  FinishFixture::FakeRoot(first->root());
  auto v1 = f.Finish(*first);
  REQUIRE_MESSAGE(v1.ok(), v1.status().message());
  auto meta = nlohmann::json::parse(*ReadFile(v1->dir + "/image.json"));
  REQUIRE(meta["initrd_inputs"].get<std::string>().size() == 64);
  // A derived tree (a copy that keeps modification times, as a bake's is)
  // with a new file outside the kernel's: v1's initrd serves it.
  f.options.initrd_from = v1->dir;
  auto copy = [&](BuildDir& b) {
    fs::remove(b.root());
    REQUIRE(std::system(("cp -a '" + v1->dir + "/root' '" + b.root() + "'").c_str()) == 0);
  };
  auto second = BuildDir::Create(*f.catalog, "tiny");
  copy(*second);
  Put(second->root() + "/etc/slurm/slurm.conf", "baked\n");
  // A file of the builder's folder changed (the initramfs scripts live there).
  Put(f.options.initrd_builder + ".note", "a changed initramfs script");
  f.said.clear();
  auto v2 = f.Finish(*second);
  REQUIRE_MESSAGE(v2.ok(), v2.status().message());
  CHECK(v2->version != v1->version);
  // The builder's folder changed (the note): built again.
  CHECK(std::count(f.said.begin(), f.said.end(), "building the netboot initrd") == 1);
  fs::remove(f.options.initrd_builder + ".note");

  auto third = BuildDir::Create(*f.catalog, "tiny");
  copy(*third);
  Put(third->root() + "/etc/slurm/slurm.conf", "baked again\n");
  f.said.clear();
  auto v3 = f.Finish(*third);
  REQUIRE_MESSAGE(v3.ok(), v3.status().message());
  CHECK(std::count(f.said.begin(), f.said.end(), "building the netboot initrd") == 0);
  CHECK(std::count(f.said.begin(), f.said.end(),
                   "initrd reused from tiny@" + v1->version +
                       " (the same kernel, modules, firmware and tools)") == 1);
  CHECK(*ReadFile(v3->initrd) == *ReadFile(v1->initrd));

  // A module added (DKMS at image stage): the initrd is built again.
  auto fourth = BuildDir::Create(*f.catalog, "tiny");
  copy(*fourth);
  Put(fourth->root() + "/lib/modules/6.1.0-2-amd64/updates/dkms/v4l2loopback.ko", "MODULE");
  f.said.clear();
  auto v4 = f.Finish(*fourth);
  REQUIRE_MESSAGE(v4.ok(), v4.status().message());
  CHECK(std::count(f.said.begin(), f.said.end(), "building the netboot initrd") == 1);
  CHECK(nlohmann::json::parse(*ReadFile(v4->dir + "/image.json"))["initrd_inputs"] !=
        meta["initrd_inputs"]);
}

TEST_CASE("image finishing: the tree's hash is stable and sees modes, contents and links") {
  FinishFixture f;
  const std::string a = (f.dir / "a").string(), b = (f.dir / "b").string();
  FinishFixture::FakeRoot(a);
  FinishFixture::FakeRoot(b);
  auto ha = HashTree(a);
  REQUIRE(ha.ok());
  CHECK(ha->size() == 64);
  CHECK(*HashTree(a) == *ha);  // the same tree again
  CHECK(*HashTree(b) == *ha);  // the same content elsewhere, written at another time
  chmod((b + "/etc/hostname").c_str(), 0600);
  const std::string mode = *HashTree(b);
  CHECK(mode != *ha);
  chmod((b + "/etc/hostname").c_str(), 0644);
  CHECK(*HashTree(b) == *ha);
  REQUIRE(WriteFileAtomic(b + "/etc/hostname", "buildhosT\n").ok());
  CHECK(*HashTree(b) != *ha);
  REQUIRE(WriteFileAtomic(b + "/etc/hostname", "buildhost\n").ok());
  fs::remove(b + "/boot/vmlinuz");
  fs::create_symlink("vmlinuz-6.1.0-1-amd64", b + "/boot/vmlinuz");
  CHECK(*HashTree(b) != *ha);
  // An extended attribute (a file capability is one) is content too.
  const std::string c = (f.dir / "c").string();
  FinishFixture::FakeRoot(c);
  REQUIRE(*HashTree(c) == *ha);
  if (setxattr((c + "/etc/hostname").c_str(), "user.provisiond", "1", 1, 0) == 0)
    CHECK(*HashTree(c) != *ha);
  else
    MESSAGE("skipped the xattr check: this file system takes no user xattrs");
}

TEST_CASE("image finishing: no kernel, or a failing initrd build, leaves nothing behind") {
  FinishFixture f;
  {
    auto build = BuildDir::Create(*f.catalog, "tiny");
    FinishFixture::FakeRoot(build->root());
    for (const char* k : {"vmlinuz-6.1.0-1-amd64", "vmlinuz-6.1.0-2-amd64", "vmlinuz"})
      fs::remove(build->root() + "/boot/" + k);
    auto v = f.Finish(*build);
    CHECK(v.status().code() == Code::kNotFound);
    CHECK(v.status().message() ==
          "the image has no /boot/vmlinuz-*: is 'linux-image-amd64' a kernel package?");
  }
  {
    auto build = BuildDir::Create(*f.catalog, "tiny");
    FinishFixture::FakeRoot(build->root());
    fs::remove_all(build->root() + "/lib/modules");
    auto v = f.Finish(*build);
    CHECK(v.status().code() == Code::kUnavailable);
    CHECK(v.status().message().rfind("initrd failed (exit ", 0) == 0);
  }
  CHECK(f.Leftovers().empty());
  CHECK_FALSE(fs::exists(f.catalog->store_dir() + "/tiny/current"));
  CHECK(f.catalog->List().empty());
}

TEST_CASE("image finishing: what every image gets is checked before a build starts") {
  FinishFixture f;
  CHECK(CheckFinishingInputs(f.options).ok());
  fs::remove(f.options.agent_dir + "/provision-hello");
  Status s = CheckFinishingInputs(f.options);
  CHECK(s.code() == Code::kNotFound);
  CHECK(s.message().rfind("image builds need " + f.options.agent_dir + "/provision-hello", 0) == 0);
}

}  // namespace prov
