#include "facts.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

namespace prov::agent {
namespace {
namespace fs = std::filesystem;
void Put(const fs::path& p, const std::string& s) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << s;
}
}  // namespace

TEST_CASE("facts from a fake node: CPU, memory, PCI with names, NICs, disks, host key") {
  fs::path r = fs::temp_directory_path() / ("provision-facts-" + std::to_string(getpid()));
  fs::remove_all(r);
  Put(r / "proc/cpuinfo",
      "processor\t: 0\nmodel name\t: Intel(R) Core(TM) Ultra 9 285K\nphysical id\t: 0\ncore id\t: "
      "0\n\n"
      "processor\t: 1\nmodel name\t: Intel(R) Core(TM) Ultra 9 285K\nphysical id\t: 0\ncore id\t: "
      "1\n");
  Put(r / "proc/meminfo", "MemTotal:       131072000 kB\nMemFree: 1 kB\n");
  Put(r / "proc/sys/kernel/osrelease", "6.1.0-26-amd64\n");
  Put(r / "proc/sys/kernel/hostname", "node0\n");
  Put(r / "proc/sys/kernel/random/boot_id", "0f6c1d3e-8b2a-4c59-9e07-4d1f2a3b5c6d\n");
  Put(r / "proc/cmdline", "initrd=initrd.img provision.image=ubuntu-arc@0123456789abcdef quiet\n");
  Put(r / "sys/bus/pci/devices/0000:03:00.0/vendor", "0x8086\n");
  Put(r / "sys/bus/pci/devices/0000:03:00.0/device", "0x56a0\n");
  Put(r / "sys/bus/pci/devices/0000:03:00.0/class", "0x030000\n");
  Put(r / "sys/bus/pci/devices/0000:00:1f.0/vendor", "0x8086\n");
  Put(r / "sys/bus/pci/devices/0000:00:1f.0/device", "0x7a06\n");
  Put(r / "sys/bus/pci/devices/0000:00:1f.0/class", "0x060100\n");
  Put(r / "usr/share/misc/pci.ids",
      "# comment\n10de  NVIDIA Corporation\n\t2c02  GB203 [GeForce RTX 5080]\n"
      "8086  Intel Corporation\n\t56a0  DG2 [Arc A770]\n\t\t1234 5678  Some subsystem\n\t7a06  "
      "Z690 LPC\n");
  Put(r / "sys/class/net/enp3s0/address", "52:54:00:12:34:56\n");
  Put(r / "sys/class/net/enp3s0/speed", "2500\n");
  Put(r / "sys/class/net/enp3s0/operstate", "up\n");
  Put(r / "sys/class/net/lo/address", "00:00:00:00:00:00\n");
  Put(r / "sys/block/nvme0n1/size", "3907029168\n");
  Put(r / "sys/block/nvme0n1/device/model", "Samsung SSD 990 PRO 2TB\n");
  Put(r / "sys/block/loop0/size", "0\n");
  Put(r / "etc/ssh/ssh_host_ed25519_key.pub", "ssh-ed25519 AAAAC3Nza root@node0\n");
  Put(r / "etc/os-release",
      "NAME=\"Ubuntu\"\nPRETTY_NAME=\"Ubuntu 24.04.1 LTS\"\nID=ubuntu\nID_LIKE=debian\n"
      "VERSION_ID=\"24.04\"\nVERSION_CODENAME=noble\n# ID=not-this\n");
  Put(r / "proc/sys/kernel/arch", "x86_64\n");

  auto f = CollectFacts(r.string());
  CHECK(f["cpu"]["model"] == "Intel(R) Core(TM) Ultra 9 285K");
  CHECK(f["cpu"]["threads"] == 2);
  CHECK(f["cpu"]["cores"] == 2);
  CHECK(f["memory_bytes"] == 131072000ULL * 1024);
  CHECK(f["kernel"] == "6.1.0-26-amd64");
  CHECK(f["boot_id"] == "0f6c1d3e-8b2a-4c59-9e07-4d1f2a3b5c6d");
  CHECK(f["image"] == "ubuntu-arc@0123456789abcdef");
  REQUIRE(f["pci"].size() == 2);
  CHECK(f["pci"][1]["slot"] == "0000:03:00.0");
  CHECK(f["pci"][1]["vendor_id"] == "8086");
  CHECK(f["pci"][1]["device_id"] == "56a0");
  CHECK(f["pci"][1]["class"] == "0300");
  CHECK(f["pci"][1]["device"] == "DG2 [Arc A770]");
  CHECK(f["pci"][1]["vendor"] == "Intel Corporation");
  REQUIRE(f["nics"].size() == 1);
  CHECK(f["nics"][0]["speed_mbps"] == 2500);
  REQUIRE(f["disks"].size() == 1);
  CHECK(f["disks"][0]["size_bytes"] == 3907029168ULL * 512);
  CHECK(f["ssh_host_key"] == "ssh-ed25519 AAAAC3Nza root@node0");
  CHECK(f["os"] == "Ubuntu 24.04.1 LTS");
  CHECK(f["os_release"] == nlohmann::json{{"name", "Ubuntu"},
                                          {"id", "ubuntu"},
                                          {"id_like", "debian"},
                                          {"version_id", "24.04"},
                                          {"version_codename", "noble"}});
  CHECK(f["arch"] == "x86_64");
  CHECK(f["firmware"] == nlohmann::json{{"uefi", false}, {"secure_boot", false}});  // BIOS

  // UEFI: the SecureBoot variable's last byte (after 4 bytes of attributes).
  const fs::path var =
      r / "sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c";
  fs::create_directories(r / "sys/firmware/efi");
  CHECK(CollectFacts(r.string())["firmware"]["secure_boot"].is_null());  // no efivars: unknown
  Put(var, std::string("\x06\x00\x00\x00\x01", 5));
  CHECK(CollectFacts(r.string())["firmware"] ==
        nlohmann::json{{"uefi", true}, {"secure_boot", true}});
  Put(var, std::string("\x06\x00\x00\x00\x00", 5));
  CHECK(CollectFacts(r.string())["firmware"]["secure_boot"] == false);
  fs::remove_all(r);
}

TEST_CASE("disks: stable names, transport, what they hold, and the system's own") {
  fs::path r = fs::temp_directory_path() / ("provision-disks-" + std::to_string(getpid()));
  fs::remove_all(r);
  auto disk = [&](const std::string& name, const std::string& sys, uint64_t sectors,
                  const std::string& content) {
    Put(r / "sys/devices" / sys / name / "size", std::to_string(sectors) + "\n");
    Put(r / "sys/devices" / sys / name / "queue/rotational", "0\n");
    fs::create_directories(r / "sys/block");
    fs::create_symlink("../devices/" + sys + "/" + name, r / "sys/block" / name);
    Put(r / "dev" / name, content);
  };
  std::string gpt(70 * 1024, '\0');
  gpt.replace(512, 8, "EFI PART");
  std::string ext4(70 * 1024, '\0');
  ext4.replace(1080, 2, "\x53\xef");
  std::string md(70 * 1024, '\0');
  md.replace(4096, 4, "\xfc\x4e\x2b\xa9");
  disk("nvme0n1", "pci0000:00/0000:00:06.0/nvme/nvme0", 3907029168ULL,
       std::string(70 * 1024, '\0'));
  Put(r / "sys/devices/pci0000:00/0000:00:06.0/nvme/nvme0/nvme0n1/device/model",
      "Samsung SSD 990 PRO 2TB\n");
  Put(r / "sys/devices/pci0000:00/0000:00:06.0/nvme/nvme0/nvme0n1/device/serial", "S7DNNJ0X\n");
  disk("vda", "pci0000:00/0000:00:04.0/virtio1/block", 2097152, md);
  disk("sda", "pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block", 1000000, gpt);
  Put(r / "sys/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda/sda2/"
          "partition",
      "2\n");
  disk("sdb", "pci0000:00/0000:00:14.0/usb2/2-1/2-1:1.0/host1/target1:0:0/1:0:0:0/block", 1000,
       ext4);
  disk("loop0", "virtual/block", 100, "");
  disk("md127", "virtual/block", 100, "");
  fs::create_directories(r / "dev/disk/by-id");
  fs::create_symlink("../../nvme0n1", r / "dev/disk/by-id/nvme-Samsung_SSD_990_PRO_2TB_S7DNNJ0X");
  fs::create_symlink("../../nvme0n1", r / "dev/disk/by-id/nvme-eui.0025384c41a0b7d2");
  fs::create_symlink("../../vda", r / "dev/disk/by-id/virtio-lab-scratch-1");
  fs::create_symlink("../../sda", r / "dev/disk/by-id/ata-WDC_WD10_123");
  fs::create_symlink("../../sda2", r / "dev/disk/by-id/ata-WDC_WD10_123-part2");
  Put(r / "proc/self/mounts", "/dev/sda2 / ext4 rw 0 0\nnode:/img /usr nfs ro 0 0\n");

  auto disks = CollectFacts(r.string())["disks"];
  REQUIRE(disks.size() == 4);  // loop and md devices are not disks
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& d : disks) by_name[d["name"].get<std::string>()] = d;
  const auto& nvme = by_name.at("nvme0n1");
  CHECK(nvme["by_id"] == "/dev/disk/by-id/nvme-Samsung_SSD_990_PRO_2TB_S7DNNJ0X");
  CHECK(nvme["ids"].size() == 2);
  CHECK(nvme["transport"] == "nvme");
  CHECK(nvme["serial"] == "S7DNNJ0X");
  CHECK(nvme["model"] == "Samsung SSD 990 PRO 2TB");
  CHECK(nvme["size_bytes"] == 3907029168ULL * 512);
  CHECK(nvme["content"] == "empty");
  CHECK(nvme["system"] == false);
  CHECK(by_name.at("vda")["transport"] == "virtio");
  CHECK(by_name.at("vda")["content"] == "md");
  CHECK(by_name.at("vda")["serial"] == "lab-scratch-1");  // from its by-id name
  CHECK(by_name.at("sda")["transport"] == "sata");
  CHECK(by_name.at("sda")["content"] == "gpt");
  CHECK(by_name.at("sda")["partitions"] == 1);
  CHECK(by_name.at("sda")["system"] == true);  // its partition is /
  CHECK(by_name.at("sdb")["transport"] == "usb");
  CHECK(by_name.at("sdb")["content"] == "ext4");
  CHECK_FALSE(by_name.at("sdb").contains("by_id"));
  fs::remove_all(r);
}

TEST_CASE("pci.ids lookups stay within the vendor") {
  std::string ids = "1002  AMD\n\t1234  Other\n8086  Intel Corporation\n\t56a0  DG2 [Arc A770]\n";
  CHECK(LookupPciNames(ids, "8086", "56a0").device == "DG2 [Arc A770]");
  CHECK(LookupPciNames(ids, "8086", "1234").device.empty());
  CHECK(LookupPciNames(ids, "10de", "56a0").vendor.empty());
}

}  // namespace prov::agent
