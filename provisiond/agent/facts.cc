#include "facts.h"

#include <sys/utsname.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string_view>

namespace prov::agent {
namespace fs = std::filesystem;

namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\0')) s.pop_back();
  return s;
}

std::string StripHex(std::string s) {
  if (s.rfind("0x", 0) == 0) s = s.substr(2);
  std::transform(s.begin(), s.end(), s.begin(), ::tolower);
  return s;
}

nlohmann::json Cpu(const std::string& root) {
  std::ifstream in(root + "/proc/cpuinfo");
  std::string line, model;
  std::set<std::string> cores;
  int threads = 0;
  std::string physical = "0";
  while (std::getline(in, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "processor") ++threads;
    if (key == "model name" && model.empty()) model = value;
    if (key == "physical id") physical = value;
    if (key == "core id") cores.insert(physical + ":" + value);
  }
  return {{"model", model},
          {"threads", threads},
          {"cores", cores.empty() ? threads : static_cast<int>(cores.size())}};
}

uint64_t MemoryBytes(const std::string& root) {
  std::ifstream in(root + "/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  while (in >> key) {
    if (key == "MemTotal:") {
      in >> kb;
      return kb * 1024;
    }
    std::string rest;
    std::getline(in, rest);
  }
  return 0;
}

nlohmann::json Pci(const std::string& root, const std::string& pci_ids) {
  nlohmann::json list = nlohmann::json::array();
  std::vector<fs::path> devices;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root + "/sys/bus/pci/devices", ec))
    devices.push_back(e.path());
  std::sort(devices.begin(), devices.end());
  for (const auto& d : devices) {
    std::string vendor = StripHex(Read(d / "vendor")), device = StripHex(Read(d / "device"));
    std::string klass = StripHex(Read(d / "class"));
    if (vendor.empty() || device.empty()) continue;
    PciNames names = LookupPciNames(pci_ids, vendor, device);
    std::string driver;
    std::error_code lec;
    auto target = fs::read_symlink(d / "driver", lec);
    if (!lec) driver = target.filename().string();
    list.push_back({{"slot", d.filename().string()},
                    {"vendor_id", vendor},
                    {"device_id", device},
                    {"class", klass.substr(0, 4)},
                    {"vendor", names.vendor},
                    {"device", names.device},
                    {"driver", driver}});
  }
  return list;
}

nlohmann::json Nics(const std::string& root) {
  nlohmann::json list = nlohmann::json::array();
  std::error_code ec;
  std::vector<fs::path> nics;
  for (const auto& e : fs::directory_iterator(root + "/sys/class/net", ec))
    nics.push_back(e.path());
  std::sort(nics.begin(), nics.end());
  for (const auto& n : nics) {
    std::string name = n.filename().string();
    if (name == "lo") continue;
    std::string speed = Read(n / "speed");
    nlohmann::json nic = {
        {"name", name}, {"mac", Read(n / "address")}, {"operstate", Read(n / "operstate")}};
    if (!speed.empty() && speed[0] != '-') nic["speed_mbps"] = std::atoi(speed.c_str());
    list.push_back(nic);
  }
  return list;
}

// What the first 68 KiB of a disk hold, by the signatures at the offsets the
// formats define: "empty" when all of it is zero.
std::string DiskContent(const std::string& device) {
  std::ifstream in(device, std::ios::binary);
  if (!in) return "unknown";
  std::string b(68 * 1024, '\0');
  in.read(b.data(), static_cast<std::streamsize>(b.size()));
  b.resize(static_cast<size_t>(in.gcount()));
  auto at = [&](size_t off, std::string_view sig) {
    return b.size() >= off + sig.size() && b.compare(off, sig.size(), sig) == 0;
  };
  if (at(4096, "\xfc\x4e\x2b\xa9")) return "md";  // md superblock 1.2
  if (at(512, "EFI PART")) return "gpt";
  if (at(512, "LABELONE") || at(536, "LVM2 001")) return "lvm";
  if (at(0, "XFSB")) return "xfs";
  if (at(1080, "\x53\xef")) return "ext4";
  if (at(65600, "_BHRfS_M")) return "btrfs";
  if (at(3, "NTFS    ")) return "ntfs";
  if (at(4086, "SWAPSPACE2")) return "swap";
  if (at(510, "\x55\xaa")) return "mbr";
  if (b.empty()) return "unknown";
  return b.find_first_not_of('\0') == std::string::npos ? "empty" : "data";
}

// The bus a block device hangs off, from its place under /sys/devices.
std::string Transport(const std::string& sys_path) {
  if (sys_path.find("/nvme") != std::string::npos) return "nvme";
  if (sys_path.find("/usb") != std::string::npos) return "usb";
  if (sys_path.find("/virtio") != std::string::npos) return "virtio";
  if (sys_path.find("/mmc") != std::string::npos) return "mmc";
  if (sys_path.find("/ata") != std::string::npos) return "sata";
  if (sys_path.find("/sas") != std::string::npos ||
      sys_path.find("/end_device") != std::string::npos)
    return "sas";
  if (sys_path.find("/host") != std::string::npos) return "scsi";
  return "";
}

// Kernel names of the block devices the running system stands on: mounted
// at /, /boot, /usr or /var, or swap (a partition's disk counts).
std::set<std::string> SystemDevices(const std::string& root) {
  std::set<std::string> out;
  std::ifstream mounts(root + "/proc/self/mounts");
  std::string dev, dir, rest;
  while (mounts >> dev >> dir && std::getline(mounts, rest))
    if (dev.rfind("/dev/", 0) == 0 &&
        (dir == "/" || dir == "/boot" || dir == "/boot/efi" || dir == "/usr" || dir == "/var"))
      out.insert(fs::path(dev).filename().string());
  std::ifstream swaps(root + "/proc/swaps");
  std::getline(swaps, rest);  // the header
  while (swaps >> dev && std::getline(swaps, rest))
    if (dev.rfind("/dev/", 0) == 0) out.insert(fs::path(dev).filename().string());
  return out;
}

nlohmann::json Disks(const std::string& root) {
  nlohmann::json list = nlohmann::json::array();
  std::error_code ec;
  std::vector<fs::path> disks;
  for (const auto& e : fs::directory_iterator(root + "/sys/block", ec)) disks.push_back(e.path());
  std::sort(disks.begin(), disks.end());
  // /dev/disk/by-id: the stable names, by the device they point at.
  std::map<std::string, std::vector<std::string>> ids;
  for (const auto& e : fs::directory_iterator(root + "/dev/disk/by-id", ec)) {
    std::error_code lec;
    auto target = fs::read_symlink(e.path(), lec);
    if (!lec) ids[target.filename().string()].push_back(e.path().filename().string());
  }
  const std::set<std::string> system = SystemDevices(root);
  for (const auto& d : disks) {
    std::string name = d.filename().string();
    if (name.rfind("loop", 0) == 0 || name.rfind("ram", 0) == 0 || name.rfind("zram", 0) == 0 ||
        name.rfind("md", 0) == 0 || name.rfind("dm-", 0) == 0 || name.rfind("sr", 0) == 0 ||
        name.rfind("nbd", 0) == 0)
      continue;
    uint64_t sectors = std::strtoull(Read(d / "size").c_str(), nullptr, 10);
    std::vector<std::string> mine = ids[name];
    std::sort(mine.begin(), mine.end());
    // The name to keep: the model-and-serial one (nvme-, ata-, scsi-,
    // usb-, virtio-) before the wwn-/eui. ones that only some disks have.
    std::string by_id;
    for (const auto& id : mine)
      if (id.rfind("wwn-", 0) != 0 && id.find(".") == std::string::npos &&
          id.rfind("nvme-nvme.", 0) != 0) {
        by_id = id;
        break;
      }
    if (by_id.empty() && !mine.empty()) by_id = mine.front();
    std::string serial = Read(d / "device/serial");
    if (serial.empty()) serial = Read(d / "serial");
    if (serial.empty() && by_id.find('_') != std::string::npos)
      serial = by_id.substr(by_id.rfind('_') + 1);
    else if (serial.empty() && by_id.rfind("virtio-", 0) == 0)
      serial = by_id.substr(7);  // virtio-SERIAL
    std::string model = Read(d / "device/model");
    std::error_code lec;
    std::string sys_path = fs::read_symlink(d, lec).string();
    if (lec) sys_path = fs::read_symlink(d / "device", lec).string();
    bool on_system = system.count(name) > 0;
    int partitions = 0;
    for (const auto& p : fs::directory_iterator(d, ec)) {
      const std::string part = p.path().filename().string();
      if (part.rfind(name, 0) != 0 || !fs::exists(p.path() / "partition", lec)) continue;
      ++partitions;
      if (system.count(part)) on_system = true;
    }
    nlohmann::json disk = {{"name", name},
                           {"size_bytes", sectors * 512},
                           {"model", model},
                           {"serial", serial},
                           {"rotational", Read(d / "queue/rotational") == "1"},
                           {"removable", Read(d / "removable") == "1"},
                           {"transport", Transport(sys_path)},
                           {"partitions", partitions},
                           {"content", DiskContent(root + "/dev/" + name)},
                           {"system", on_system}};
    if (!by_id.empty()) {
      disk["by_id"] = "/dev/disk/by-id/" + by_id;
      disk["ids"] = mine;
    }
    list.push_back(disk);
  }
  return list;
}

std::string CmdlineValue(const std::string& cmdline, const std::string& key) {
  std::istringstream in(cmdline);
  std::string word;
  while (in >> word)
    if (word.rfind(key + "=", 0) == 0) return word.substr(key.size() + 1);
  return "";
}

// How the machine booted: UEFI or BIOS, and whether Secure Boot was on (the
// last byte of the SecureBoot variable; the first four are its attributes).
nlohmann::json Firmware(const std::string& root) {
  std::error_code ec;
  const bool uefi = fs::exists(root + "/sys/firmware/efi", ec);
  nlohmann::json out = {{"uefi", uefi}, {"secure_boot", false}};
  if (!uefi) return out;
  std::ifstream in(
      root + "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c",
      std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() == 5)
    out["secure_boot"] = bytes[4] == 1;
  else
    out["secure_boot"] = nullptr;  // unknown: no efivars
  return out;
}

}  // namespace

PciNames LookupPciNames(const std::string& text, const std::string& vendor_id,
                        const std::string& device_id) {
  PciNames out;
  std::istringstream in(text);
  std::string line;
  bool in_vendor = false;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] != '\t') {
      if (in_vendor) break;  // past our vendor's devices
      if (line.size() > 6 && line.compare(0, 4, vendor_id) == 0 && line[4] == ' ') {
        out.vendor = line.substr(6);
        in_vendor = true;
      }
      continue;
    }
    if (in_vendor && line.size() > 7 && line[1] != '\t' && line.compare(1, 4, device_id) == 0 &&
        line[5] == ' ') {
      out.device = line.substr(7);
      break;
    }
  }
  return out;
}

nlohmann::json CollectDisks(const std::string& root) {
  return Disks(root);
}

nlohmann::json CollectFacts(const std::string& root) {
  std::string pci_ids;
  for (const char* p : {"/usr/share/misc/pci.ids", "/usr/share/hwdata/pci.ids"}) {
    pci_ids = Read(root + p);
    if (!pci_ids.empty()) break;
  }
  const std::string cmdline = Read(root + "/proc/cmdline");
  std::string kernel = Read(root + "/proc/sys/kernel/osrelease");
  nlohmann::json facts = {{"cpu", Cpu(root)},
                          {"memory_bytes", MemoryBytes(root)},
                          {"kernel", kernel},
                          {"hostname", Read(root + "/proc/sys/kernel/hostname")},
                          {"pci", Pci(root, pci_ids)},
                          {"nics", Nics(root)},
                          {"disks", Disks(root)},
                          {"firmware", Firmware(root)},
                          {"image", CmdlineValue(cmdline, "provision.image")},
                          {"ssh_host_key", Read(root + "/etc/ssh/ssh_host_ed25519_key.pub")}};
  // Which boot this is: a heartbeat that reads another one knows the machine
  // has rebooted (installed machines, which ask provisiond for nothing at boot).
  if (std::string boot_id = Read(root + "/proc/sys/kernel/random/boot_id"); !boot_id.empty())
    facts["boot_id"] = boot_id;
  // os-release: the pretty name for people, and the fields the playbooks'
  // distribution facts (ansible_distribution, ...) are derived from.
  std::string os = Read(root + "/etc/os-release");
  std::istringstream in(os);
  std::string line;
  nlohmann::json release = nlohmann::json::object();
  while (std::getline(in, line)) {
    size_t eq = line.find('=');
    if (eq == std::string::npos || line[0] == '#') continue;
    std::string key = line.substr(0, eq), v = line.substr(eq + 1);
    if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front())
      v = v.substr(1, v.size() - 2);
    if (key == "PRETTY_NAME") facts["os"] = v;
    for (const char* k : {"ID", "ID_LIKE", "NAME", "VERSION_ID", "VERSION_CODENAME"})
      if (key == k) {
        std::transform(key.begin(), key.end(), key.begin(), ::tolower);
        release[key] = v;
      }
  }
  if (!release.empty()) facts["os_release"] = release;
  // The machine's architecture, as uname says it (x86_64, aarch64).
  std::string arch = Read(root + "/proc/sys/kernel/arch");
  struct utsname u {};
  if (arch.empty() && (root.empty() || root == "/") && uname(&u) == 0) arch = u.machine;
  if (!arch.empty()) facts["arch"] = arch;
  // What provision-storage did at this boot (storage.h), for the hello.
  std::ifstream storage(root + "/run/provision/storage.json");
  if (storage) {
    auto outcome = nlohmann::json::parse(storage, nullptr, false);
    facts["storage"] = outcome.is_discarded()
                           ? nlohmann::json{{"state", "failed"},
                                            {"reason", "run/provision/storage.json does not parse"}}
                           : outcome;
  }
  return facts;
}

}  // namespace prov::agent
