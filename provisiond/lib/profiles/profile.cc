#include "profiles/profile.h"

#include <fnmatch.h>

#include <algorithm>
#include <filesystem>
#include <regex>

#include "base/file_util.h"
#include "base/hostlist.h"
#include "base/yaml_reader.h"
#include "playbook/playbook.h"
#include "playbook/runner_choice.h"
#include "store/boot_stage.h"
#include "store/node_state.h"

namespace prov {
namespace {

namespace fs = std::filesystem;

const std::regex kPciId("^[0-9a-f]{4}:[0-9a-f]{4}$");
const std::regex kVersion("^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$");

// One entry of `storage:` (profiles/storage.h).
void ParseStorageVolume(MapReader& m, Profile& p) {
  StorageVolume v;
  v.line = m.node().Mark().line + 1;
  m.GetString("name", v.name, true);
  std::string layout = "single";
  if (m.GetString("layout", layout)) {
    auto l = ParseStorageLayout(layout);
    if (l.ok())
      v.layout = *l;
    else
      m.errors().Add(m.Raw("layout"), l.status().message());
  }
  m.GetString("filesystem", v.filesystem);
  m.GetString("mount", v.mount, true);
  m.GetBool("wipe", v.wipe);
  m.GetMap(
      "disks",
      [&](MapReader& d) {
        d.GetStringList("ids", v.disks.ids);
        d.GetString("transport", v.disks.transport);
        d.GetString("model", v.disks.model);
        for (auto [key, out] : {std::pair<const char*, uint64_t*>{"min_size", &v.disks.min_bytes},
                                {"max_size", &v.disks.max_bytes}}) {
          std::string text;
          if (!d.GetString(key, text)) continue;
          auto bytes = ParseByteSize(text);
          if (bytes.ok())
            *out = *bytes;
          else
            d.errors().Add(d.Raw(key), bytes.status().message());
        }
        bool rotational = false;
        if (d.GetBool("rotational", rotational)) v.disks.rotational = rotational ? 1 : 0;
        YAML::Node count = d.Raw("count");
        if (count.IsDefined() && !(count.IsScalar() && count.Scalar() == "all")) {
          long n = 0;
          if (d.GetInt("count", n, false, 1, 64)) v.disks.count = static_cast<int>(n);
        }
        d.Finish();
      },
      true);
  YAML::Node binds = m.Raw("binds");
  if (binds.IsDefined() && !binds.IsNull()) {
    if (!binds.IsSequence()) {
      m.errors().Add(binds, "'binds' must be a list of paths or of {path, owner, mode}");
    } else {
      for (const auto& b : binds) {
        StorageVolume::Bind bind;
        if (b.IsScalar()) {
          bind.path = b.Scalar();
        } else if (b.IsMap()) {
          MapReader bm(b, m.errors(), "bind");
          bm.GetString("path", bind.path, true);
          bm.GetString("owner", bind.owner);
          bm.GetString("mode", bind.mode);
          bm.Finish();
        } else {
          m.errors().Add(b, "a bind must be a path or {path, owner, mode}");
          continue;
        }
        v.binds.push_back(std::move(bind));
      }
    }
  }
  m.Finish();
  if (v.name.empty() || v.mount.empty()) return;  // reported as missing
  if (Status valid = ValidateStorageVolume(v); !valid.ok()) {
    m.errors().Add(m.node(), valid.message());
    return;
  }
  for (const auto& other : p.storage)
    if (other.name == v.name)
      m.errors().Add(m.Raw("name"), "volume '" + v.name + "' is named twice");
    else if (other.mount == v.mount)
      m.errors().Add(m.Raw("mount"), "volume '" + v.name + "' mounts at " + v.mount +
                                         " like volume '" + other.name + "'");
  p.storage.push_back(std::move(v));
}

void ParseHardware(MapReader& hw, Profile& p) {
  hw.GetMapList("accelerators", [&](MapReader& a) {
    AcceleratorSpec spec;
    if (a.GetString("vendor", spec.vendor, true) && spec.vendor != "nvidia" &&
        spec.vendor != "amd" && spec.vendor != "intel")
      a.errors().Add(a.Raw("vendor"),
                     "vendor must be nvidia, amd or intel, found '" + spec.vendor + "'");
    a.GetString("model", spec.model, true);
    if (a.GetStringList("pci_ids", spec.pci_ids)) {
      for (auto& id : spec.pci_ids) {
        std::transform(id.begin(), id.end(), id.begin(), ::tolower);
        if (!std::regex_match(id, kPciId))
          a.errors().Add(a.Raw("pci_ids"),
                         "PCI id '" + id + "' must be vendor:device in hex, like 8086:56a0");
      }
    }
    a.GetInt("count", spec.count, false, 1, 64);
    p.accelerators.push_back(std::move(spec));
  });
  hw.GetInt("min_memory_gib", p.min_memory_gib, false, 0, 1 << 20);
}

void ParseNodes(MapReader& m, Profile& p) {
  auto& errors = m.errors();
  if (m.GetString("hostlist", p.nodes.hostlist)) {
    auto names = ExpandHostlist(p.nodes.hostlist);
    if (!names.ok()) {
      errors.Add(m.Raw("hostlist"), names.status().message());
    } else {
      for (const auto& n : *names) {
        Status s = ValidateHostname(n);
        if (!s.ok()) errors.Add(m.Raw("hostlist"), s.message());
      }
      p.nodes.hostnames = std::move(*names);
    }
  }
  std::vector<std::string> macs;
  if (m.GetStringList("macs", macs)) {
    for (const auto& mac : macs) {
      auto norm = NormalizeMac(mac);
      if (!norm.ok())
        errors.Add(m.Raw("macs"), norm.status().message());
      else
        p.nodes.macs.push_back(*norm);
    }
  }
  m.GetString("pattern", p.nodes.pattern);
  if (p.nodes.hostlist.empty() && p.nodes.macs.empty() && p.nodes.pattern.empty())
    errors.Add(m.node(), "'nodes' must name at least one of hostlist, macs or pattern");
}

// Adds `source` to the profile's files under "playbooks/<path inside
// playbooks_dir>"; a file outside the playbooks directory cannot be part of
// a snapshot.
void AddPlaybookFile(FileSet& disk, const std::string& source, const std::string& playbooks_dir,
                     std::map<std::string, ProfileFile>& files, std::vector<std::string>& errors,
                     std::vector<std::string>& reached) {
  fs::path rel = fs::path(source).lexically_normal().lexically_relative(
      fs::path(playbooks_dir).lexically_normal());
  if (rel.empty() || *rel.begin() == "..") {
    errors.push_back(source + " is outside the playbooks directory " + playbooks_dir +
                     ": a profile carries only files from there");
    return;
  }
  std::string path = "playbooks/" + rel.string();
  reached.push_back(path);
  if (files.count(path)) return;
  std::string error;
  const std::string* sha = disk.Digest(source, &error);
  if (!sha) {
    errors.push_back(error);
    return;
  }
  files[path] = ProfileFile{path, *sha, source};
}

}  // namespace

std::string HashProfileFiles(const std::vector<ProfileFile>& files) {
  std::vector<const ProfileFile*> sorted;
  for (const auto& f : files) sorted.push_back(&f);
  std::sort(sorted.begin(), sorted.end(),
            [](const ProfileFile* a, const ProfileFile* b) { return a->path < b->path; });
  Sha256 hash;
  for (const auto* f : sorted) {
    hash.Update(f->path);
    hash.Update(std::string_view("\0", 1));
    hash.Update(f->sha256);
    hash.Update("\n");
  }
  return hash.HexDigest();
}

std::vector<FileChange> DiffProfileFiles(const std::vector<ProfileFile>& from,
                                         const std::vector<ProfileFile>& to) {
  std::map<std::string, std::string> a, b;
  for (const auto& f : from) a[f.path] = f.sha256;
  for (const auto& f : to) b[f.path] = f.sha256;
  std::vector<FileChange> out;
  for (const auto& [path, sha] : b) {
    auto it = a.find(path);
    if (it == a.end())
      out.push_back({path, "added"});
    else if (it->second != sha)
      out.push_back({path, "changed"});
  }
  for (const auto& [path, sha] : a)
    if (!b.count(path)) out.push_back({path, "removed"});
  std::sort(out.begin(), out.end(),
            [](const FileChange& x, const FileChange& y) { return x.path < y.path; });
  return out;
}

nlohmann::json ToJson(const FileChange& c) {
  return {{"path", c.path}, {"change", c.change}};
}

bool Profile::Covers(const std::string& hostname, const std::string& mac) const {
  if (!hostname.empty() &&
      std::find(nodes.hostnames.begin(), nodes.hostnames.end(), hostname) != nodes.hostnames.end())
    return true;
  if (!mac.empty() && std::find(nodes.macs.begin(), nodes.macs.end(), mac) != nodes.macs.end())
    return true;
  return !hostname.empty() && !nodes.pattern.empty() &&
         fnmatch(nodes.pattern.c_str(), hostname.c_str(), 0) == 0;
}

Status ValidateSecretName(const std::string& name) {
  static const std::regex kSecretName("^[a-z][a-z0-9_-]{0,63}$");
  if (!std::regex_match(name, kSecretName))
    return Status::Invalid("secret name '" + name.substr(0, 80) +
                           "' must be 1-64 of a-z, 0-9, '_' or '-', starting with a letter");
  return Status::Ok();
}

Status ValidateUefiLoader(const std::string& name) {
  if (ParseLoaderName(name)) return Status::Ok();
  return Status::Invalid("uefi_loader '" + name.substr(0, 80) + "' must be " +
                         LoaderChoices(/*what=*/true));
}

std::optional<std::string> SecretRefOf(const nlohmann::json& value) {
  if (!value.is_object() || value.size() != 1 || !value.contains("secret") ||
      !value["secret"].is_string())
    return std::nullopt;
  return value["secret"].get<std::string>();
}

bool FindSecretRef(const nlohmann::json& vars, std::string& var, std::string& secret) {
  if (auto ref = SecretRefOf(vars)) {
    secret = *ref;
    return true;
  }
  if (!vars.is_object() && !vars.is_array()) return false;
  for (auto it = vars.begin(); it != vars.end(); ++it) {
    std::string inner;
    if (!FindSecretRef(*it, inner, secret)) continue;
    std::string key = vars.is_object() ? it.key() : "[]";
    var = inner.empty() ? key : key + (inner[0] == '[' ? "" : ".") + inner;
    return true;
  }
  return false;
}

const SecretDecl* FindSecret(const Profile& p, const std::string& ref) {
  bool pub = ref.ends_with(".pub");
  std::string name = pub ? ref.substr(0, ref.size() - 4) : ref;
  for (const auto& d : p.secrets)
    if (d.name == name && (!pub || d.generate == "ssh-ed25519")) return &d;
  return nullptr;
}

Result<Profile> ParseProfile(FileSet& disk, const std::string& file,
                             const std::string& expected_version, const std::string& playbooks_dir,
                             const std::string& roles_path) {
  std::string read_error;
  const std::string* read = disk.Text(file, &read_error);
  if (!read) return Status::NotFound(read_error);
  const std::string& text = *read;
  YamlErrors errors(file);
  YAML::Node root = ParseYaml(text, errors);
  if (!errors.empty()) return errors.ToStatus();
  Profile p;
  p.file = file;
  MapReader top(root, errors, "profile");
  if (!top.valid()) return errors.ToStatus();

  if (top.GetString("version", p.version, true)) {
    if (!std::regex_match(p.version, kVersion))
      errors.Add(top.Raw("version"),
                 "version '" + p.version + "' must be letters, digits, '.', '_' or '-'");
    else if (!expected_version.empty() && p.version != expected_version)
      errors.Add(top.Raw("version"), "version '" + p.version + "' does not match its directory '" +
                                         expected_version + "'");
  }
  top.GetString("description", p.description);
  if (top.GetString("health_log", p.health_log) &&
      (p.health_log.empty() || p.health_log[0] != '/' ||
       p.health_log.find_first_of("\n\r\t'\"\\$`") != std::string::npos))
    errors.Add(top.Raw("health_log"),
               "health_log '" + p.health_log.substr(0, 200) +
                   "' must be an absolute path without quotes, '$', '`' or whitespace other "
                   "than spaces");
  if (top.GetString("health_hook", p.health_hook) &&
      (p.health_hook.find_first_not_of(" \t") == std::string::npos ||
       p.health_hook.find_first_of(std::string("\n\r\0", 3)) != std::string::npos))
    errors.Add(top.Raw("health_hook"), "health_hook must be one command line (not empty)");
  top.GetInt("wait_for_peers", p.wait_for_peers_s, false, 0, 86400);
  top.GetMap("hardware", [&](MapReader& hw) { ParseHardware(hw, p); });
  top.GetMap(
      "image",
      [&](MapReader& img) {
        img.GetString("name", p.image_name, true);
        img.GetString("version", p.image_version);
      },
      true);
  top.GetStringList("kernel_args", p.kernel_args);
  if (top.GetString("uefi_loader", p.uefi_loader)) {
    if (Status v = ValidateUefiLoader(p.uefi_loader); !v.ok())
      errors.Add(top.Raw("uefi_loader"), v.message());
  }
  top.GetMapList("storage", [&](MapReader& m) { ParseStorageVolume(m, p); });
  top.GetMapList("overlay", [&](MapReader& o) {
    OverlayFile f;
    if (o.GetString("path", f.path, true) && (f.path.empty() || f.path[0] != '/'))
      o.errors().Add(o.Raw("path"), "overlay path '" + f.path + "' must be absolute");
    o.GetString("content", f.content, true);
    if (o.GetString("mode", f.mode) && !std::regex_match(f.mode, std::regex("^0?[0-7]{3}$")))
      o.errors().Add(o.Raw("mode"), "mode '" + f.mode + "' must be octal, like \"0644\"");
    p.overlay.push_back(std::move(f));
  });
  std::map<std::string, ProfileFile> files;
  files["profile.yaml"] = ProfileFile{"profile.yaml", Sha256Hex(text), file};
  std::vector<std::string> file_errors;
  // One entry of `bake` or `playbooks`: the same syntax at both stages.
  auto parse_playbook = [&](MapReader& pb, PlaybookStage stage) {
    PlaybookRef ref;
    ref.stage = stage;
    std::string runner;
    if (pb.GetString("runner", runner)) {
      auto wanted = ParsePlaybookRunner(runner);
      if (!wanted.ok())
        pb.errors().Add(pb.Raw("runner"), wanted.status().message());
      else
        ref.runner = *wanted;
    }
    if (pb.GetString("playbook", ref.file, true)) {
      ref.line = pb.Raw("playbook").Mark().line + 1;
      if (ref.file.find("..") != std::string::npos || ref.file.empty() || ref.file[0] == '/') {
        pb.errors().Add(pb.Raw("playbook"), "playbook '" + ref.file +
                                                "' must be a path inside the playbooks directory");
      } else {
        std::string path = playbooks_dir + "/" + ref.file;
        const std::string* content = disk.Text(path);
        if (!content) {
          pb.errors().Add(pb.Raw("playbook"),
                          "playbook '" + ref.file + "' not found (looked for " + path + ")");
        } else {
          // A profile with a broken playbook is a broken profile: the native
          // loader's errors (file:line:col) are the profile's here, Ansible's
          // in CheckProfileWithAnsible.
          auto choice = ChoosePlaybookRunner(disk, path, ref.runner, roles_path);
          if (!choice.ok()) {
            pb.errors().Add(pb.Raw("playbook"), "playbook '" + ref.file + "' does not load:\n" +
                                                    choice.status().message());
          } else {
            std::string name = "playbooks/" + fs::path(ref.file).lexically_normal().string();
            files[name] = ProfileFile{name, Sha256Hex(*content), path};
            ref.files.push_back(name);
            ref.path = path;
            ref.runs_on = choice->runner;
            ref.runner_reason = choice->reason;
            if (choice->native) {
              for (const auto& reached : choice->native->reached_files)
                AddPlaybookFile(disk, reached, playbooks_dir, files, file_errors, ref.files);
              for (const auto& dir : choice->native->reached_dirs)
                for (const auto& file : disk.Tree(dir))
                  AddPlaybookFile(disk, file, playbooks_dir, files, file_errors, ref.files);
              ref.parsed = choice->native;
            } else {
              for (const auto& reached : AnsibleReachedFiles(disk, path))
                AddPlaybookFile(disk, reached, playbooks_dir, files, file_errors, ref.files);
            }
          }
        }
      }
    }
    YAML::Node vars = pb.Raw("vars");
    if (vars.IsDefined() && !vars.IsNull()) {
      if (!vars.IsMap())
        pb.errors().Add(vars, "'vars' must be a mapping of names to values");
      else
        ref.vars = YamlToJson(vars);
    }
    std::sort(ref.files.begin(), ref.files.end());
    ref.files.erase(std::unique(ref.files.begin(), ref.files.end()), ref.files.end());
    (stage == PlaybookStage::kImage ? p.bake : p.playbooks).push_back(std::move(ref));
  };
  top.GetMapList("bake", [&](MapReader& pb) { parse_playbook(pb, PlaybookStage::kImage); });
  top.GetMapList("playbooks", [&](MapReader& pb) { parse_playbook(pb, PlaybookStage::kNode); });
  top.GetMapList("secrets", [&](MapReader& m) {
    SecretDecl d;
    if (m.GetString("name", d.name, true)) {
      d.line = m.Raw("name").Mark().line + 1;
      Status valid = ValidateSecretName(d.name);
      if (!valid.ok()) m.errors().Add(m.Raw("name"), valid.message());
      for (const auto& other : p.secrets)
        if (other.name == d.name)
          m.errors().Add(m.Raw("name"), "secret '" + d.name + "' is declared twice");
    }
    if (m.GetString("generate", d.generate) && d.generate != "random" && d.generate != "password" &&
        d.generate != "ssh-ed25519" && d.generate != "none")
      m.errors().Add(m.Raw("generate"),
                     "generate '" + d.generate + "' must be random, password, ssh-ed25519 or none");
    m.GetInt("bytes", d.bytes, false, 16, 65536);
    p.secrets.push_back(std::move(d));
  });
  // Every {secret: NAME} among the playbooks' vars names a declared secret.
  if (YAML::Node pbs = top.Raw("playbooks"); pbs.IsSequence()) {
    for (size_t i = 0; i < pbs.size() && i < p.playbooks.size(); ++i) {
      YAML::Node vars = pbs[i]["vars"];
      if (!vars.IsMap()) continue;
      for (const auto& kv : vars) {
        // A key that is not a scalar ("? {a: 1}") is the vars' own error
        // already; as<std::string> on it threw (found by fuzzing).
        if (!kv.first.IsScalar()) continue;
        auto ref = SecretRefOf(p.playbooks[i].vars.value(kv.first.Scalar(), nlohmann::json()));
        if (!ref) continue;
        if (!FindSecret(p, *ref))
          errors.Add(kv.second, "var '" + kv.first.Scalar() + "' names secret '" + *ref +
                                    "', which the profile's 'secrets' does not declare" +
                                    (ref->ends_with(".pub") ? " as ssh-ed25519" : ""));
      }
    }
  }
  // An image is readable by every node over NFS: nothing baked may carry a
  // secret. A bake entry's vars (at any depth) must not name one.
  if (YAML::Node pbs = top.Raw("bake"); pbs.IsSequence()) {
    for (size_t i = 0; i < pbs.size() && i < p.bake.size(); ++i) {
      std::string var, secret;
      if (!FindSecretRef(p.bake[i].vars, var, secret)) continue;
      errors.Add(pbs[i]["vars"], "bake playbook '" + p.bake[i].file + "' gets secret '" + secret +
                                     "' (var '" + var +
                                     "'): an image is readable by every node, so no secret "
                                     "is baked; give it to the playbook under 'playbooks' "
                                     "(node stage) instead");
    }
  }
  top.GetMapList("health_checks", [&](MapReader& h) {
    HealthCheck c;
    h.GetString("name", c.name, true);
    h.GetString("command", c.command, true);
    h.GetInt("timeout", c.timeout_s, false, 1, 86400);
    p.health_checks.push_back(std::move(c));
  });
  top.GetMap("recovery", [&](MapReader& m) {
    m.GetInt("silent_for", p.recovery.silent_for_s, true, 1, 86400);
    m.GetInt("cycles", p.recovery.cycles, false, 0, 100);
    m.GetInt("window", p.recovery.window_s, false, 60, 30 * 86400);
  });
  top.GetMap(
      "nodes", [&](MapReader& m) { ParseNodes(m, p); }, true);
  top.Finish();
  for (const auto& e : file_errors) errors.AddFileLevel(e);

  if (!errors.empty()) return errors.ToStatus();
  for (auto& [path, f] : files) p.files.push_back(std::move(f));
  p.sha256 = HashProfileFiles(p.files);
  return p;
}

Result<Profile> LoadProfile(const std::string& profiles_dir, const std::string& version,
                            const std::string& playbooks_dir, const std::string& roles_path) {
  if (!std::regex_match(version, kVersion))
    return Status::Invalid("'" + version + "' is not a profile version");
  std::string path = profiles_dir + "/" + version + "/profile.yaml";
  FileSet disk;
  if (!disk.Text(path) && disk.ReadWanted() && !disk.Text(path))
    return Status::NotFound("no profile '" + version + "' (looked for " + path + ")");
  return ReadThenParse(
      disk, [&](FileSet& f) { return ParseProfile(f, path, version, playbooks_dir, roles_path); });
}

Result<Profile> ParseProfile(const std::string& text, const std::string& file,
                             const std::string& expected_version, const std::string& playbooks_dir,
                             const std::string& roles_path) {
  FileSet disk;
  disk.AddFile(file, text);
  return ReadThenParse(disk, [&](FileSet& f) {
    return ParseProfile(f, file, expected_version, playbooks_dir, roles_path);
  });
}

std::map<std::string, Profile> LoadAllProfiles(const std::string& profiles_dir,
                                               const std::string& playbooks_dir,
                                               std::vector<std::string>& errors,
                                               const std::string& roles_path) {
  std::map<std::string, Profile> out;
  std::error_code ec;
  if (!fs::is_directory(profiles_dir, ec)) {
    errors.push_back(profiles_dir + ": profiles directory does not exist");
    return out;
  }
  std::vector<std::string> versions;
  for (const auto& entry : fs::directory_iterator(profiles_dir, ec))
    if (entry.is_directory() && fs::exists(entry.path() / "profile.yaml"))
      versions.push_back(entry.path().filename().string());
  std::sort(versions.begin(), versions.end());
  FileSet disk;  // one for all: a playbook two profiles name is read once
  for (const auto& v : versions) {
    if (!std::regex_match(v, kVersion)) {
      errors.push_back("'" + v + "' is not a profile version");
      continue;
    }
    const std::string path = profiles_dir + "/" + v + "/profile.yaml";
    auto p = ReadThenParse(
        disk, [&](FileSet& f) { return ParseProfile(f, path, v, playbooks_dir, roles_path); });
    if (p.ok())
      out.emplace(v, std::move(*p));
    else
      errors.push_back(p.status().message());
  }
  return out;
}

Status CheckProfileWithAnsible(Profile& profile, const AnsibleTool& tool) {
  std::string refusals;
  Code code = Code::kInvalid;
  for (auto* list : {&profile.bake, &profile.playbooks}) {
    for (auto& ref : *list) {
      RunnerChoice choice{.runner = ref.runs_on,
                          .forced = ref.runner != PlaybookRunner::kAuto,
                          .reason = ref.runner_reason,
                          .native = nullptr};
      Status s = CheckWithAnsible(ref.path, choice, tool);
      ref.runner_reason = choice.reason;
      if (s.ok()) continue;
      code = s.code();
      if (!refusals.empty()) refusals += "\n";
      refusals += profile.file + ":" + std::to_string(ref.line) + ": playbook '" + ref.file +
                  "' does not load:\n" + s.message();
    }
  }
  if (refusals.empty()) return Status::Ok();
  return Status::Error(code, refusals);
}

nlohmann::json ToJson(const Profile& p) {
  nlohmann::json accel = nlohmann::json::array();
  for (const auto& a : p.accelerators)
    accel.push_back(
        {{"vendor", a.vendor}, {"model", a.model}, {"pci_ids", a.pci_ids}, {"count", a.count}});
  nlohmann::json overlay = nlohmann::json::array();
  for (const auto& o : p.overlay) overlay.push_back({{"path", o.path}, {"mode", o.mode}});
  nlohmann::json storage = nlohmann::json::array();
  for (const auto& v : p.storage) storage.push_back(ToJson(v));
  nlohmann::json playbooks = nlohmann::json::array();
  for (const auto& pb : p.playbooks)
    playbooks.push_back({{"playbook", pb.file},
                         {"vars", pb.vars},
                         {"runner", ToString(pb.runs_on)},
                         {"runner_reason", pb.runner_reason}});
  nlohmann::json bake = nlohmann::json::array();
  for (const auto& pb : p.bake)
    bake.push_back({{"playbook", pb.file},
                    {"vars", pb.vars},
                    {"runner", ToString(pb.runs_on)},
                    {"runner_reason", pb.runner_reason},
                    {"files", pb.files}});
  nlohmann::json secrets = nlohmann::json::array();
  for (const auto& d : p.secrets)
    secrets.push_back({{"name", d.name}, {"generate", d.generate}, {"bytes", d.bytes}});
  nlohmann::json files = nlohmann::json::array();
  for (const auto& f : p.files) files.push_back({{"path", f.path}, {"sha256", f.sha256}});
  nlohmann::json checks = nlohmann::json::array();
  for (const auto& c : p.health_checks)
    checks.push_back({{"name", c.name}, {"command", c.command}, {"timeout", c.timeout_s}});
  return {{"version", p.version},
          {"description", p.description},
          {"sha256", p.sha256},
          {"hardware", {{"accelerators", accel}, {"min_memory_gib", p.min_memory_gib}}},
          {"image", {{"name", p.image_name}, {"version", p.image_version}}},
          {"kernel_args", p.kernel_args},
          {"uefi_loader", p.uefi_loader},
          {"health_log", p.health_log},
          {"health_hook", p.health_hook},
          {"wait_for_peers", p.wait_for_peers_s},
          {"recovery", p.recovery.on() ? nlohmann::json{{"silent_for", p.recovery.silent_for_s},
                                                        {"cycles", p.recovery.cycles},
                                                        {"window", p.recovery.window_s}}
                                       : nlohmann::json(nullptr)},
          {"overlay", overlay},
          {"storage", storage},
          {"bake", bake},
          {"playbooks", playbooks},
          {"secrets", secrets},
          {"health_checks", checks},
          {"files", files},
          {"nodes",
           {{"hostlist", p.nodes.hostlist},
            {"hostnames", p.nodes.hostnames},
            {"macs", p.nodes.macs},
            {"pattern", p.nodes.pattern}}}};
}

}  // namespace prov
