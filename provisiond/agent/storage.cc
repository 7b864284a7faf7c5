#include "storage.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "base/json_fields.h"
#include "facts.h"
#include "profiles/storage.h"

namespace prov::agent {
namespace {

using json = nlohmann::json;

// KEY=VALUE lines (blkid -o export, mdadm --export) as a map.
std::map<std::string, std::string> ExportLines(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t eq = line.find('=');
    if (eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

std::string FirstLine(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  return line.size() > 300 ? line.substr(0, 300) : line;
}

class VolumeSetup {
 public:
  VolumeSetup(const StorageVolume& v, const std::vector<json>& disks,
              const std::set<std::string>& wipe_ids, bool wipe_all, const StorageContext& ctx)
      : v_(v), disks_(disks), wipe_ids_(wipe_ids), wipe_all_(wipe_all), ctx_(ctx) {}

  json Run() {
    out_ = {{"name", v_.name}, {"mount", v_.mount}, {"disks", json::array()}};
    for (const auto& d : disks_) out_["disks"].push_back(Device(d));
    if (!Prepare()) return out_;
    if (!Mount()) return out_;
    if (!Binds()) return out_;
    return out_;
  }

 private:
  static std::string Device(const json& d) {
    std::string id = JsonString(d, "by_id");
    return id.empty() ? "/dev/" + JsonString(d, "name") : id;
  }
  static std::string Describe(const json& d) {
    std::string model = JsonString(d, "model");
    return Device(d) + " (" + (model.empty() ? "" : model + ", ") +
           FormatByteSize(d.value("size_bytes", uint64_t{0})) + ")";
  }

  bool Fail(const std::string& reason) {
    out_["state"] = "failed";
    out_["reason"] = "volume " + v_.name + ": " + reason;
    return false;
  }

  CommandOutput Run(const std::vector<std::string>& argv) { return ctx_.run(argv); }
  bool Must(const std::vector<std::string>& argv, const std::string& what) {
    CommandOutput r = Run(argv);
    if (r.exit_code == 0) return true;
    return Fail(what + " failed (" + argv[0] +
                (r.exit_code == 127 ? " is not in the image"
                                    : " exit code " + std::to_string(r.exit_code)) +
                "): " + FirstLine(r.output));
  }

  // Whether the disk is a member of this volume's md array.
  bool OurMember(const std::string& dev) {
    CommandOutput r = Run({"mdadm", "--examine", "--export", dev});
    if (r.exit_code != 0) return false;
    std::string name = ExportLines(r.output)["MD_NAME"];
    return name == v_.name ||
           (name.size() > v_.name.size() &&
            name.compare(name.size() - v_.name.size() - 1, std::string::npos, ":" + v_.name) == 0);
  }
  std::map<std::string, std::string> Blkid(const std::string& dev) {
    CommandOutput r = Run({"blkid", "-o", "export", dev});
    return r.exit_code == 0 ? ExportLines(r.output) : std::map<std::string, std::string>{};
  }
  bool OurFilesystem(const std::string& dev) { return Blkid(dev)["LABEL"] == StorageLabel(v_); }

  bool WipeAllowed(const json& d) {
    if (wipe_all_ || v_.wipe) return true;
    if (wipe_ids_.count(Device(d))) return true;
    auto ids = d.find("ids");
    if (ids != d.end() && ids->is_array())
      for (const auto& i : *ids)
        if (i.is_string() && wipe_ids_.count("/dev/disk/by-id/" + i.get<std::string>()))
          return true;
    return false;
  }

  // Sorts the disks into ours, blank and foreign; wipes what may be wiped;
  // then makes or assembles the volume.
  bool Prepare() {
    const bool raid = v_.layout != StorageLayout::kSingle;
    std::vector<std::string> ours, blank;
    json wiped = json::array();
    for (const auto& d : disks_) {
      const std::string dev = Device(d), content = JsonString(d, "content");
      if (content == "empty") {
        blank.push_back(dev);
        continue;
      }
      if (raid ? content == "md" && OurMember(dev)
               : (content == "ext4" || content == "xfs") && OurFilesystem(dev)) {
        ours.push_back(dev);
        continue;
      }
      if (!WipeAllowed(d))
        return Fail("disk " + Describe(d) + " holds " +
                    (content == "data" ? "data provisiond did not write" : content) +
                    (content == "md" ? " (another array)" : "") +
                    "; it is left as it is. To let provisiond wipe it: provisionctl node storage "
                    "wipe NODE (or wipe: true in the profile's volume)");
      if (content == "md" && !Must({"mdadm", "--zero-superblock", dev}, "clearing " + dev))
        return false;
      if (!Must({"wipefs", "--all", "--force", dev}, "wiping " + dev)) return false;
      wiped.push_back(dev);
      blank.push_back(dev);
    }
    if (!wiped.empty()) out_["wiped"] = wiped;
    if (!ours.empty() && !blank.empty())
      return Fail(std::to_string(ours.size()) + " of its disks carry it and " +
                  std::to_string(blank.size()) +
                  " are blank: the volume is incomplete and is left as it is (a replaced disk "
                  "of a RAID-1 is added by hand: mdadm --add)");
    std::string device;
    if (!raid) {
      device = ours.empty() ? blank.front() : ours.front();
    } else {
      device = "/dev/md/" + v_.name;
      std::vector<std::string> members = ours.empty() ? blank : ours;
      if (!ours.empty()) {
        if (!ArrayActive() && !Must(Concat({"mdadm", "--assemble", device, "--run"}, members),
                                    "assembling " + device))
          return false;
      } else {
        const std::string level = v_.layout == StorageLayout::kRaid0 ? "0" : "1";
        if (!Must(Concat({"mdadm", "--create", device, "--run", "--metadata=1.2",
                          "--level=" + level, "--raid-devices=" + std::to_string(members.size()),
                          "--homehost=provision", "--name=" + v_.name},
                         members),
                  "creating " + device))
          return false;
      }
    }
    out_["device"] = device;
    bool fresh = ours.empty();
    if (!fresh && raid && !OurFilesystem(device)) {
      // An array of ours whose filesystem was never made (a boot that stopped
      // between the two): it is ours, so it is made now.
      if (!Blkid(device).empty())
        return Fail(device + " carries a filesystem provisiond did not make; left as it is");
      fresh = true;
    }
    if (fresh) {
      std::vector<std::string> mkfs =
          v_.filesystem == "xfs"
              ? std::vector<std::string>{"mkfs.xfs", "-q", "-f", "-L", StorageLabel(v_), device}
              : std::vector<std::string>{"mkfs.ext4", "-q", "-F", "-L", StorageLabel(v_), device};
      if (!Must(mkfs, "making the filesystem on " + device)) return false;
    }
    out_["state"] = fresh ? "created" : "mounted";
    out_["uuid"] = Blkid(device)["UUID"];
    return true;
  }

  bool ArrayActive() {
    std::error_code ec;
    return std::filesystem::exists(ctx_.root + "/dev/md/" + v_.name, ec);
  }

  static std::vector<std::string> Concat(std::vector<std::string> a,
                                         const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }

  bool Mounted(const std::string& dir) {
    std::ifstream in(ctx_.root + "/proc/self/mounts");
    std::string dev, at, rest;
    while (in >> dev >> at && std::getline(in, rest))
      if (at == dir) return true;
    return false;
  }

  bool Mount() {
    if (Mounted(v_.mount)) return true;  // a second run in the same boot
    if (!Must({"mkdir", "-p", v_.mount}, "making " + v_.mount)) return false;
    return Must(
        {"mount", "-t", v_.filesystem, "-o", "noatime", JsonString(out_, "device"), v_.mount},
        "mounting " + JsonString(out_, "device") + " at " + v_.mount);
  }

  // The user of an owner spec exists on this node (its /etc/passwd).
  bool UserExists(const std::string& owner) {
    const std::string user = owner.substr(0, owner.find(':'));
    std::ifstream in(ctx_.root + "/etc/passwd");
    std::string line;
    while (std::getline(in, line))
      if (line.rfind(user + ":", 0) == 0) return true;
    return false;
  }

  bool Binds() {
    json notes = json::array();
    for (const auto& b : v_.binds) {
      if (Mounted(b.path)) continue;
      const std::string source = v_.mount + "/.binds" + b.path;
      if (!Must({"mkdir", "-p", source, b.path}, "making " + source)) return false;
      if (!b.owner.empty()) {
        if (UserExists(b.owner)) {
          if (!Must({"chown", b.owner, source}, "chown " + b.owner + " " + source)) return false;
        } else {
          notes.push_back(b.path + ": user " + b.owner.substr(0, b.owner.find(':')) +
                          " does not exist yet; left to root");
        }
      }
      if (!Must({"chmod", b.mode.empty() ? "0755" : b.mode, source}, "chmod " + source))
        return false;
      if (!Must({"mount", "--bind", source, b.path}, "binding " + source + " onto " + b.path))
        return false;
    }
    if (!notes.empty()) out_["notes"] = notes;
    return true;
  }

  const StorageVolume& v_;
  const std::vector<json>& disks_;
  const std::set<std::string>& wipe_ids_;
  bool wipe_all_;
  const StorageContext& ctx_;
  json out_;
};

}  // namespace

CommandRunner SystemRunner() {
  return [](const std::vector<std::string>& argv) {
    CommandOutput out;
    int pipefd[2];
    if (pipe(pipefd) != 0) return CommandOutput{126, "pipe failed"};
    pid_t pid = fork();
    if (pid < 0) return CommandOutput{126, "fork failed"};
    if (pid == 0) {
      dup2(pipefd[1], 1);
      dup2(pipefd[1], 2);
      close(pipefd[0]);
      close(pipefd[1]);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execvp(args[0], args.data());
      _exit(127);
    }
    close(pipefd[1]);
    char buf[4096];
    ssize_t n;
    while ((n = read(pipefd[0], buf, sizeof buf)) > 0)
      out.output.append(buf, static_cast<size_t>(n));
    close(pipefd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return out;
  };
}

json SetUpStorage(const json& spec, const StorageContext& ctx) {
  json result = {{"state", "ready"}, {"volumes", json::array()}};
  auto fail = [&](const std::string& reason) {
    if (result["state"] != "failed") result["reason"] = reason;
    result["state"] = "failed";
  };
  std::vector<StorageVolume> volumes;
  for (const auto& j : spec.value("volumes", json::array())) {
    auto v = StorageVolumeFromJson(j);
    if (!v.ok()) {
      fail(v.status().message());
      return result;
    }
    volumes.push_back(std::move(*v));
  }
  std::set<std::string> wipe_ids;
  bool wipe_all = false;
  for (const auto& w : spec.value("wipe", json::array()))
    if (w.is_string()) {
      if (w == "*")
        wipe_all = true;
      else
        wipe_ids.insert(w.get<std::string>().rfind("/dev/", 0) == 0
                            ? w.get<std::string>()
                            : "/dev/disk/by-id/" + w.get<std::string>());
    }
  const json disks = CollectDisks(ctx.root);
  auto matched = MatchVolumes(volumes, disks);
  if (!matched.ok()) {
    fail(matched.status().message());
    for (const auto& v : volumes)
      result["volumes"].push_back(
          {{"name", v.name}, {"state", "failed"}, {"reason", matched.status().message()}});
    return result;
  }
  for (size_t i = 0; i < volumes.size(); ++i) {
    json out = VolumeSetup(volumes[i], (*matched)[i], wipe_ids, wipe_all, ctx).Run();
    if (out.value("state", "") == "failed") fail(out.value("reason", ""));
    result["volumes"].push_back(out);
  }
  return result;
}

}  // namespace prov::agent
