#include "hello/facts.h"

#include <doctest/doctest.h>

namespace prov {

TEST_CASE("facts: what the agent sends passes; lines, markup carriers and wrong types do not") {
  using json = nlohmann::json;
  json good = {
      {"hostname", "node0"},
      {"cpu", {{"model", "AMD Ryzen 9 7950X 16-Core Processor"}, {"threads", 32}, {"cores", 16}}},
      {"memory_bytes", 68719476736ULL},
      {"ssh_host_key", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHq root@node0"},
      {"image", "lab@0123456789abcdef"},
      {"nics", {{{"name", "enp1s0"}, {"mac", "52:54:00:00:00:01"}, {"speed_mbps", 1000}}}},
      {"disks", {{{"name", "nvme0n1"}, {"size_bytes", 1000204886016ULL}}}},
      {"pci", {{{"vendor_id", "10de"}, {"device", "AD102 [GeForce RTX 4090] <b>"}}}},
      {"firmware", {{"uefi", true}, {"secure_boot", true}}},
      {"os_release", {{"id", "debian"}, {"version_id", "12"}, {"version_codename", "bookworm"}}},
      {"arch", "x86_64"},
      {"boot_id", "0f6c1d3e-8b2a-4c59-9e07-4d1f2a3b5c6d"}};
  CHECK(ValidateFacts(good).ok());

  auto refused = [&](json facts, const std::string& where) {
    Status s = ValidateFacts(facts);
    CHECK_FALSE(s.ok());
    CHECK_MESSAGE(s.message().find(where) == 0, s.message());
  };
  json f = good;
  f["ssh_host_key"] = "ssh-ed25519 AAAA root@node0\n@cert-authority * ssh-ed25519 AAAAevil";
  refused(f, "facts.ssh_host_key: has a control character");
  f = good;
  f["ssh_host_key"] = "not-a-key";
  refused(f, "facts.ssh_host_key");
  f = good;
  f["cpu"]["threads"] = "4\nNodeName=evil";
  refused(f, "facts.cpu.threads: has a control character");
  f["cpu"]["threads"] = "4";
  refused(f, "facts.cpu.threads: must be a non-negative integer");
  f = good;
  f["cpu"]["threads"] = -1;
  refused(f, "facts.cpu.threads");
  f = good;
  f["pci"][0]["device"] = "GPU\r\nevil";
  refused(f, "facts.pci[0].device: has a control character");
  f = good;
  f["pci"][0]["x\ny"] = 1;
  refused(f, "facts.pci[0] key: has a control character");
  f = good;
  f["hostname"] = std::string(5000, 'a');
  refused(f, "facts.hostname: longer than 4096 bytes");
  f = good;
  f["image"] = "lab; rm -rf /";
  refused(f, "facts.image");
  f = good;
  f["boot_id"] = "0F6C1D3E-8B2A-4C59-9E07-4D1F2A3B5C6D";
  refused(f, "facts.boot_id: must be a boot id");
  f["boot_id"] = "0f6c1d3e-8b2a-4c59-9e07-4d1f2a3b5c6d\n";
  refused(f, "facts.boot_id");
  f["boot_id"] = "0f6c1d3e8b2a4c599e074d1f2a3b5c6d";
  refused(f, "facts.boot_id");
  f = good;
  f["nics"] = "eth0";
  refused(f, "facts.nics: must be a list");
  f = good;
  f["disks"][0]["size_bytes"] = 1.5;
  refused(f, "facts.disks[0].size_bytes");
  f = good;
  f["disks"][0]["by_id"] = "/dev/disk/by-id/nvme-Samsung_SSD_990_PRO_S7DN";
  f["disks"][0]["ids"] = {"nvme-Samsung_SSD_990_PRO_S7DN", "nvme-eui.0025384c41a0b7d2"};
  f["disks"][0]["transport"] = "nvme";
  f["disks"][0]["content"] = "empty";
  f["disks"][0]["system"] = false;
  CHECK(ValidateFacts(f).ok());
  f["disks"][0]["by_id"] = "/dev/sda";
  refused(f, "facts.disks[0].by_id: must be /dev/disk/by-id/");
  f["disks"][0]["by_id"] = "/dev/disk/by-id/../../sda";
  refused(f, "facts.disks[0].by_id");
  f["disks"][0].erase("by_id");
  f["disks"][0]["ids"] = {"a b"};
  refused(f, "facts.disks[0].ids");
  f["disks"][0].erase("ids");
  f["disks"][0]["transport"] = "nvme; reboot";
  refused(f, "facts.disks[0].transport");
  f["disks"][0]["transport"] = "nvme";
  f["disks"][0]["system"] = "no";
  refused(f, "facts.disks[0].system: must be true or false");
  f = good;
  f["storage"] = {{"state", "fine"}};
  refused(f, "facts.storage.state: must be ready or failed");
  f["storage"] = {{"state", "failed"}, {"reason", "volume scratch: disk holds gpt"}};
  CHECK(ValidateFacts(f).ok());
  f = good;
  f["arch"] = "x86_64 evil";
  refused(f, "facts.arch: must be letters");
  f = good;
  f["os_release"]["version_id"] = 12;
  refused(f, "facts.os_release.version_id: must be a string");
  f = good;
  f["os_release"]["id"] = "../../etc/passwd";
  refused(f, "facts.os_release.id: must be letters");
  f = good;
  f["firmware"]["secure_boot"] = "yes";
  refused(f, "facts.firmware.secure_boot: must be true, false or null");
  f["firmware"] = "uefi";
  refused(f, "facts.firmware: must be an object");
  refused(json::array(), "facts: must be a JSON object");
}

}  // namespace prov
