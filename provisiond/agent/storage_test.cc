#include "storage.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace prov::agent {
namespace {
namespace fs = std::filesystem;
using json = nlohmann::json;

void PutTree(const fs::path& p, const std::string& s) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << s;
}

std::string Blank() {
  return std::string(70 * 1024, '\0');
}
std::string WithMagic(size_t offset, const std::string& magic) {
  std::string b = Blank();
  b.replace(offset, magic.size(), magic);
  return b;
}

// A node's tree with two virtio disks, and a runner that answers as the
// tools would and records every command.
struct Node {
  fs::path root = fs::temp_directory_path() / ("provision-storage-" + std::to_string(getpid()));
  std::vector<std::vector<std::string>> commands;
  std::map<std::string, std::string> blkid;    // device: its blkid -o export output
  std::map<std::string, std::string> md_name;  // member: MD_NAME

  Node() {
    fs::remove_all(root);
    for (const char* name : {"vdb", "vdc"}) {
      const std::string sys =
          "sys/devices/pci0000:00/0000:00:0" + std::string(name + 2) + ".0/virtio/block/" + name;
      PutTree(root / sys / "size", "2097152\n");
      PutTree(root / sys / "queue/rotational", "0\n");
      fs::create_directories(root / "sys/block");
      fs::create_symlink("../" + sys.substr(4), root / "sys/block" / name);
      PutTree(root / "dev" / name, Blank());
      fs::create_directories(root / "dev/disk/by-id");
      fs::create_symlink(std::string("../../") + name,
                         root / "dev/disk/by-id" / ("virtio-scratch-" + std::string(name)));
    }
    PutTree(root / "proc/self/mounts", "node:/img / nfs ro 0 0\n");
    PutTree(root / "etc/passwd",
            "root:x:0:0::/root:/bin/sh\ncompute:x:1000:1000::/home/compute:/bin/bash\n");
  }
  ~Node() { fs::remove_all(root); }

  StorageContext Context() {
    return {root.string(), [this](const std::vector<std::string>& argv) {
              commands.push_back(argv);
              const std::string& tool = argv[0];
              if (tool == "mdadm" && argv[1] == "--examine") {
                auto it = md_name.find(argv.back());
                if (it == md_name.end()) return CommandOutput{1, "no md superblock"};
                return CommandOutput{0, "MD_LEVEL=raid0\nMD_NAME=" + it->second + "\n"};
              }
              if (tool == "blkid") {
                auto it = blkid.find(argv.back());
                return it == blkid.end() ? CommandOutput{2, ""} : CommandOutput{0, it->second};
              }
              if (tool == "mkfs.ext4") blkid[argv.back()] = "LABEL=" + argv[4] + "\nUUID=u-1\n";
              return CommandOutput{0, ""};
            }};
  }
  bool Ran(const std::string& tool, const std::string& arg = "") const {
    for (const auto& c : commands)
      if (c[0] == tool && (arg.empty() || std::find(c.begin(), c.end(), arg) != c.end()))
        return true;
    return false;
  }
};

json Spec(const std::string& layout = "raid0", json wipe = json::array()) {
  return {{"volumes",
           {{{"name", "scratch"},
             {"disks", {{"transport", "virtio"}}},
             {"layout", layout},
             {"filesystem", "ext4"},
             {"mount", "/mnt/scratch"},
             {"binds",
              {{{"path", "/home/compute/.cache"}, {"owner", "compute"}, {"mode", "0700"}},
               {{"path", "/var/lib/docker"}}}}}}},
          {"wipe", wipe}};
}

}  // namespace

TEST_CASE("storage: blank disks become the volume; the next boot mounts it, never formats it") {
  Node node;
  json first = SetUpStorage(Spec(), node.Context());
  INFO(first.dump(2));
  CHECK(first["state"] == "ready");
  REQUIRE(first["volumes"].size() == 1);
  CHECK(first["volumes"][0]["state"] == "created");
  CHECK(first["volumes"][0]["device"] == "/dev/md/scratch");
  CHECK(first["volumes"][0]["uuid"] == "u-1");
  CHECK(first["volumes"][0]["disks"] ==
        json{"/dev/disk/by-id/virtio-scratch-vdb", "/dev/disk/by-id/virtio-scratch-vdc"});
  CHECK(node.commands.end() !=
        std::find(node.commands.begin(), node.commands.end(),
                  std::vector<std::string>{
                      "mdadm", "--create", "/dev/md/scratch", "--run", "--metadata=1.2",
                      "--level=0", "--raid-devices=2", "--homehost=provision", "--name=scratch",
                      "/dev/disk/by-id/virtio-scratch-vdb", "/dev/disk/by-id/virtio-scratch-vdc"}));
  CHECK(node.Ran("mkfs.ext4", "pv-scratch"));
  CHECK(node.Ran("mount", "/mnt/scratch"));
  CHECK(node.Ran("chown", "compute"));
  CHECK(node.Ran("mount", "/var/lib/docker"));
  CHECK_FALSE(node.Ran("wipefs"));

  // The next boot: the disks carry the array (md superblocks), the array its
  // filesystem.
  for (const char* d : {"vdb", "vdc"}) {
    PutTree(node.root / "dev" / d, WithMagic(4096, "\xfc\x4e\x2b\xa9"));
    node.md_name["/dev/disk/by-id/virtio-scratch-" + std::string(d)] = "provision:scratch";
  }
  node.commands.clear();
  json second = SetUpStorage(Spec(), node.Context());
  INFO(second.dump(2));
  CHECK(second["state"] == "ready");
  CHECK(second["volumes"][0]["state"] == "mounted");
  CHECK(second["volumes"][0]["uuid"] == "u-1");
  CHECK(node.Ran("mdadm", "--assemble"));
  CHECK_FALSE(node.Ran("mdadm", "--create"));
  CHECK_FALSE(node.Ran("mkfs.ext4"));
  CHECK_FALSE(node.Ran("wipefs"));
}

TEST_CASE("storage: a disk holding something else is left alone until a wipe is allowed") {
  Node node;
  PutTree(node.root / "dev/vdc", WithMagic(512, "EFI PART"));  // a GPT partition table
  json refused = SetUpStorage(Spec(), node.Context());
  CHECK(refused["state"] == "failed");
  const std::string reason = refused["reason"];
  CHECK(reason.find("/dev/disk/by-id/virtio-scratch-vdc") != std::string::npos);
  CHECK(reason.find("holds gpt") != std::string::npos);
  CHECK(reason.find("provisionctl node storage wipe") != std::string::npos);
  for (const char* changes : {"wipefs", "mkfs.ext4", "mount", "mkdir"})
    CHECK_FALSE(node.Ran(changes));
  CHECK_FALSE(node.Ran("mdadm", "--create"));

  // Allowed for that disk: it is wiped, then the volume made.
  node.commands.clear();
  json wiped = SetUpStorage(Spec("raid0", {"virtio-scratch-vdc"}), node.Context());
  INFO(wiped.dump(2));
  CHECK(wiped["state"] == "ready");
  CHECK(wiped["volumes"][0]["wiped"] == json{"/dev/disk/by-id/virtio-scratch-vdc"});
  CHECK(node.Ran("wipefs", "/dev/disk/by-id/virtio-scratch-vdc"));
  CHECK_FALSE(node.Ran("wipefs", "/dev/disk/by-id/virtio-scratch-vdb"));
  CHECK(node.Ran("mdadm", "--create"));
}

TEST_CASE("storage: too few disks, or one disk of a volume missing, fail with the reason") {
  Node node;
  json spec = Spec();
  spec["volumes"][0]["disks"] = {{"transport", "nvme"}};
  json none = SetUpStorage(spec, node.Context());
  CHECK(none["state"] == "failed");
  CHECK(none["reason"].get<std::string>().find("needs 2 disks (transport nvme), found 0") !=
        std::string::npos);
  CHECK(node.commands.empty());

  // One disk carries the array, the other is blank (replaced): incomplete.
  PutTree(node.root / "dev/vdb", WithMagic(4096, "\xfc\x4e\x2b\xa9"));
  node.md_name["/dev/disk/by-id/virtio-scratch-vdb"] = "provision:scratch";
  json half = SetUpStorage(Spec(), node.Context());
  CHECK(half["state"] == "failed");
  CHECK(half["reason"].get<std::string>().find("incomplete") != std::string::npos);
  CHECK_FALSE(node.Ran("mkfs.ext4"));
}

TEST_CASE("storage: a single disk carries the filesystem itself, found by its label") {
  Node node;
  json spec = Spec("single");
  spec["volumes"][0]["disks"]["count"] = 1;
  json first = SetUpStorage(spec, node.Context());
  INFO(first.dump(2));
  CHECK(first["volumes"][0]["state"] == "created");
  CHECK(first["volumes"][0]["device"] == "/dev/disk/by-id/virtio-scratch-vdb");
  CHECK_FALSE(node.Ran("mdadm"));
  PutTree(node.root / "dev/vdb", WithMagic(1080, "\x53\xef"));
  node.commands.clear();
  json second = SetUpStorage(spec, node.Context());
  CHECK(second["volumes"][0]["state"] == "mounted");
  CHECK_FALSE(node.Ran("mkfs.ext4"));
  // Another ext4 (a label not ours) is foreign.
  node.blkid["/dev/disk/by-id/virtio-scratch-vdb"] = "LABEL=data\nUUID=x\n";
  json foreign = SetUpStorage(spec, node.Context());
  CHECK(foreign["state"] == "failed");
  CHECK(foreign["reason"].get<std::string>().find("holds ext4") != std::string::npos);
}

}  // namespace prov::agent
