// Versioned hardware profiles: profiles/<version>/profile.yaml. A profile
// names the hardware it expects per node, the image, kernel arguments,
// per-node overlay files, the playbooks to run in order with their variables,
// the health checks that gate `ready`, and the nodes it covers. A profile is
// identified by the SHA-256 of everything it is made of: its file, every
// playbook it names and every template and file those reach, so a changed
// template is a changed profile.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "playbook/playbook.h"
#include "playbook/runner_choice.h"
#include "profiles/storage.h"

namespace prov {

// One file a profile is made of: its path inside an applied snapshot
// ("profile.yaml", "playbooks/lab-node.yml", "playbooks/templates/motd.j2"),
// its SHA-256, and where it was read from.
struct ProfileFile {
  std::string path;
  std::string sha256;
  std::string source;
};

struct AcceleratorSpec {
  std::string vendor;                // nvidia | amd | intel
  std::string model;                 // "Arc A770", matched in PCI device names
  std::vector<std::string> pci_ids;  // "8086:56a0"; any of them matches
  long count = 1;                    // per node
};

struct OverlayFile {
  std::string path;  // absolute path on the node
  std::string content;
  std::string mode = "0644";
};

// Where a profile's playbook runs. Image stage (`bake:`): once, when the
// derived image is built, inside a copy of the base image's root tree on the
// control node; what it installs is in every boot of every node. Node stage
// (`playbooks:`): on the node over SSH at every boot, into its RAM overlay.
enum class PlaybookStage { kImage, kNode };

struct PlaybookRef {
  std::string file;  // relative to playbooks_dir
  // Extra vars; a value {"secret": NAME} is filled from the secrets store
  // when the playbook runs (see SecretDecl).
  nlohmann::json vars = nlohmann::json::object();
  int line = 0;      // where the profile names it, for messages
  std::string path;  // the file it was loaded from
  PlaybookStage stage = PlaybookStage::kNode;
  // The snapshot paths of the files it is made of ("playbooks/slurm.yml",
  // its templates, files, roles, vars files), sorted: what a derived image's
  // version covers.
  std::vector<std::string> files;
  // `runner:` as the profile asks (auto when absent), the runner chosen, and
  // why (runner_choice.h).
  PlaybookRunner runner = PlaybookRunner::kAuto;
  PlaybookRunner runs_on = PlaybookRunner::kNative;
  std::string runner_reason;
  // Parsed once with the profile; what nodes run natively. Null when the
  // playbook runs on ansible-playbook.
  std::shared_ptr<const Playbook> parsed;
};

// A secret the profile's playbooks use (`secrets:`), kept by provisiond in
// its secrets store and made there on first use. A playbook's vars refer to
// it by a vars entry that names it: `munge_key_b64: {secret: munge_key}`
// (`{secret: NAME.pub}`: the public half of an ssh-ed25519 secret).
struct SecretDecl {
  std::string name;
  // random: `bytes` random bytes, base64; password: 24 letters and digits;
  // ssh-ed25519: an OpenSSH private key (NAME.pub its public line); none:
  // never made, set by the operator (`provisionctl secret set`).
  std::string generate = "random";
  long bytes = 32;
  int line = 0;
};

// What provisiond does for a ready node of the profile that stops answering
// (no boot id read over SSH for `silent_for_s`): power-cycle it through its
// power driver, at most `cycles` times within `window_s`; once more and it is
// `failed` with the reason. Off (silent_for_s 0) unless the profile says.
struct Recovery {
  long silent_for_s = 0;
  long cycles = 3;
  long window_s = 3600;
  bool on() const { return silent_for_s > 0; }
};

struct HealthCheck {
  std::string name;
  std::string command;
  long timeout_s = 60;
};

struct NodeSelector {
  std::vector<std::string> hostnames;  // expanded from `hostlist`
  std::string hostlist;                // as written
  std::vector<std::string> macs;       // normalized
  std::string pattern;                 // shell glob on hostnames
};

struct Profile {
  std::string version;
  std::string description;
  std::vector<AcceleratorSpec> accelerators;
  long min_memory_gib = 0;
  std::string image_name;
  std::string image_version;  // empty: the newest build of image_name
  std::vector<std::string> kernel_args;
  // The loader its nodes' UEFI firmware is given (a LoaderName); empty:
  // dhcp.uefi_loader. A node's own choice comes first (NodeRecord).
  std::string uefi_loader;
  std::vector<OverlayFile> overlay;
  // Local disks its nodes assemble and mount at every boot (storage.h).
  std::vector<StorageVolume> storage;
  // Image stage (`bake:`), in order: they make the derived image its nodes
  // boot (bake/derived_image.h); empty: the nodes boot image_name itself.
  std::vector<PlaybookRef> bake;
  // Node stage (`playbooks:`), in order.
  std::vector<PlaybookRef> playbooks;
  std::vector<SecretDecl> secrets;
  std::vector<HealthCheck> health_checks;
  // A node that stops answering is power-cycled (watch/heartbeat.h).
  Recovery recovery;
  // Where the nodes keep their checks' results (seed 002): a line per check
  // appended to this file, the status in <file>.status; empty: not kept on
  // the node (provisiond keeps them all the same).
  std::string health_log;
  // A command run on the node after each round of checks (configure and
  // `node check`), as root, with PROVISION_HEALTH_STATUS (ok | failed),
  // PROVISION_HEALTH_REASON (the first failing check and why) and
  // PROVISION_NODE in its environment: how a node's health reaches its
  // scheduler (slurm.yml's provisiond-slurm-health drains and resumes it).
  // Empty: none.
  std::string health_hook;
  // How long (seconds) a node's configure run waits for the profile's other
  // nodes to phone home before its playbooks run, so that cluster playbooks
  // (known hosts, slurm.conf) see every node's address, host key and facts;
  // 0: no wait. After it, the run goes on with the nodes there are.
  long wait_for_peers_s = 0;
  NodeSelector nodes;
  std::vector<ProfileFile> files;  // everything it is made of, by path
  std::string sha256;              // of `files` (HashProfileFiles)
  std::string file;                // where it was loaded from

  // True when the profile covers a node with this hostname and MAC.
  bool Covers(const std::string& hostname, const std::string& mac) const;
};

nlohmann::json ToJson(const Profile& p);

// A secret's name: 1-64 of [a-z0-9_-], starting with a letter (it is a file
// name in the secrets store).
Status ValidateSecretName(const std::string& name);
// A loader UEFI firmware can be given (store/boot_stage.h: ParseLoaderName).
Status ValidateUefiLoader(const std::string& name);
// The NAME of a vars value {"secret": NAME}; nothing for any other value.
std::optional<std::string> SecretRefOf(const nlohmann::json& value);
// The first {"secret": NAME} anywhere in `vars`: true with the var's path
// ("munge.key") and the NAME.
bool FindSecretRef(const nlohmann::json& vars, std::string& var, std::string& secret);
// The declaration `ref` (NAME, or NAME.pub of an ssh-ed25519 secret) refers
// to, or null.
const SecretDecl* FindSecret(const Profile& p, const std::string& ref);

// The content hash of a profile: SHA-256 over each file's path and hash, in
// path order.
std::string HashProfileFiles(const std::vector<ProfileFile>& files);

// What changed from one set of files to another, by path.
struct FileChange {
  std::string path;
  std::string change;  // added | removed | changed
};
std::vector<FileChange> DiffProfileFiles(const std::vector<ProfileFile>& from,
                                         const std::vector<ProfileFile>& to);
nlohmann::json ToJson(const FileChange& c);

// Parses the profile `file` and the playbooks it names, from `disk` alone:
// no I/O (what the set lacks is noted as wanted: ReadThenParse reads it and
// parses again). `expected_version` is the name of the directory it sits in
// (they must agree); playbooks are looked up in `playbooks_dir`, roles beside
// them and then in `roles_path`. All errors are reported at once, each with
// file:line:col. Runs no program: a playbook that goes to ansible-playbook is
// judged by CheckProfileWithAnsible.
Result<Profile> ParseProfile(FileSet& disk, const std::string& file,
                             const std::string& expected_version, const std::string& playbooks_dir,
                             const std::string& roles_path = "");
// The same for profile text said to be at `file`, what it reaches read from
// disk first.
Result<Profile> ParseProfile(const std::string& text, const std::string& file,
                             const std::string& expected_version, const std::string& playbooks_dir,
                             const std::string& roles_path = "");

// Loads <profiles_dir>/<version>/profile.yaml.
Result<Profile> LoadProfile(const std::string& profiles_dir, const std::string& version,
                            const std::string& playbooks_dir, const std::string& roles_path = "");

// Loads every profile under `profiles_dir`. Profiles with errors are left out
// and their errors returned in `errors` (one entry per profile).
std::map<std::string, Profile> LoadAllProfiles(const std::string& profiles_dir,
                                               const std::string& playbooks_dir,
                                               std::vector<std::string>& errors,
                                               const std::string& roles_path = "");

// Ansible's verdict on each of the profile's playbooks that runs on
// ansible-playbook (runner_choice.h, CheckWithAnsible): OK, or every refusal
// at once, each at the line of the profile that names the playbook; a forced
// one left unchecked (no Ansible here) says so in its runner_reason. Takes
// seconds per such playbook.
Status CheckProfileWithAnsible(Profile& profile, const AnsibleTool& tool);

}  // namespace prov
