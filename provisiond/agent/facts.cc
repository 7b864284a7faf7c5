#include "facts.h"

#include <sys/utsname.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

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

nlohmann::json Disks(const std::string& root) {
  nlohmann::json list = nlohmann::json::array();
  std::error_code ec;
  std::vector<fs::path> disks;
  for (const auto& e : fs::directory_iterator(root + "/sys/block", ec)) disks.push_back(e.path());
  std::sort(disks.begin(), disks.end());
  for (const auto& d : disks) {
    std::string name = d.filename().string();
    if (name.rfind("loop", 0) == 0 || name.rfind("ram", 0) == 0 || name.rfind("zram", 0) == 0)
      continue;
    uint64_t sectors = std::strtoull(Read(d / "size").c_str(), nullptr, 10);
    list.push_back({{"name", name},
                    {"size_bytes", sectors * 512},
                    {"model", Read(d / "device/model")},
                    {"rotational", Read(d / "queue/rotational") == "1"}});
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
  return facts;
}

}  // namespace prov::agent
