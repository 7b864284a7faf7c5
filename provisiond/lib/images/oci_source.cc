// The oci image source (see oci_source.h): skopeo copies, umoci unpacks, the
// tree's apt adds what a node needs.
#include "images/oci_source.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <filesystem>
#include <memory>

#include "base/file_util.h"
#include "base/strings.h"
#include "base/temp_dir.h"
#include "base/unique_fd.h"
#include "images/finish.h"
#include "images/source.h"
#include "playbook/remote.h"
#include "profiles/profile.h"

namespace prov {
namespace fs = std::filesystem;

namespace {

// Raised when what the source does to a tree changes: a version imported by
// an older provisiond is then imported again.
constexpr int kOciRecipe = 1;

constexpr std::string_view kTransports[] = {"docker://", "oci-archive:", "docker-archive:", "oci:"};

// Characters of a registry reference: repository, tag and digest.
constexpr std::string_view kReferenceChars =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._/:@-";

// The transport `reference` starts with, or empty.
std::string_view TransportOf(const std::string& reference) {
  for (auto t : kTransports)
    if (reference.rfind(t, 0) == 0) return t;
  return {};
}

// Why `reference` cannot be read, or empty.
std::string CheckReference(const std::string& reference) {
  const std::string_view transport = TransportOf(reference);
  if (transport.empty())
    return "oci '" + reference +
           "' must start with docker://, oci-archive:, docker-archive: or oci: (skopeo's names)";
  const std::string rest = reference.substr(transport.size());
  if (rest.empty() || rest.size() > 1024) return "oci '" + reference + "' names no image";
  if (transport == "docker://") {
    if (rest.find_first_not_of(kReferenceChars) != std::string::npos || rest[0] == '/' ||
        rest.find("//") != std::string::npos)
      return "oci '" + reference + "' is not a registry reference (REPO:TAG or REPO@sha256:...)";
    return "";
  }
  for (char c : rest)
    if (static_cast<unsigned char>(c) < 0x21 || c == 0x7f)
      return "oci '" + reference + "': a path without spaces or control characters";
  for (const auto& part : fs::path(rest))
    if (part == "..") return "oci '" + reference + "': a path without '..'";
  return "";
}

// `path` inside the tree at `root_fd`, its links resolved there: whether it
// is there.
bool InTree(int root_fd, const std::string& path) {
  struct open_how how {};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  const long fd = syscall(SYS_openat2, root_fd, path.c_str(), &how, sizeof how);
  if (fd < 0) return false;
  close(static_cast<int>(fd));
  return true;
}

// skopeo's registry login for `reference`, as an auth file: written into
// `dir` (private), never on a command line every user of this machine reads.
Result<std::string> WriteAuthFile(const std::string& dir, const std::string& reference,
                                  const std::string& credentials) {
  const std::string path = dir + "/auth.json";
  Status s = WriteFileAtomic(path, OciAuthJson(reference, credentials), 0600);
  if (!s.ok()) return s;
  return path;
}

}  // namespace

void ParseOciManifest(MapReader& top, ImageManifest& m) {
  auto settings = std::make_shared<OciSettings>();
  OciSettings& o = *settings;
  if (top.GetString("oci", o.reference, true)) {
    const std::string why = CheckReference(o.reference);
    if (!why.empty()) top.errors().Add(top.Raw("oci"), why);
  }
  if (top.GetString("credentials", o.credentials) && TransportOf(o.reference) != "docker://")
    top.errors().Add(top.Raw("credentials"),
                     "credentials are for an image in a registry (docker://)");
  if (!o.credentials.empty())
    if (Status name = ValidateSecretName(o.credentials); !name.ok())
      top.errors().Add(top.Raw("credentials"),
                       "credentials: " + name.message() + " (the name of a provisionctl secret)");
  ReadPackageKeys(top, m, o.packages, /*kernel_required=*/false);
  m.settings = std::move(settings);
}

const OciSettings& OciSettingsOf(const ImageManifest& m) {
  static const OciSettings kNone;
  const auto* oci = dynamic_cast<const OciSettings*>(m.settings.get());
  return oci ? *oci : kNone;
}

std::string OciSkopeoReference(const ImageManifest& m) {
  const std::string& ref = OciSettingsOf(m).reference;
  const std::string_view transport = TransportOf(ref);
  if (transport.empty() || transport == "docker://") return ref;
  const std::string path = ref.substr(transport.size());
  if (path[0] == '/') return ref;
  return std::string(transport) + m.Beside(path);
}

std::string OciRegistryOf(const std::string& reference) {
  std::string rest = reference.rfind("docker://", 0) == 0 ? reference.substr(9) : reference;
  const size_t slash = rest.find('/');
  if (slash == std::string::npos) return "docker.io";
  const std::string first = rest.substr(0, slash);
  if (first.find_first_of(".:") != std::string::npos || first == "localhost") return first;
  return "docker.io";
}

std::string OciAuthJson(const std::string& reference, const std::string& credentials) {
  const nlohmann::json auth = {
      {"auths", {{OciRegistryOf(reference), {{"auth", Base64Encode(credentials)}}}}}};
  return auth.dump();
}

std::vector<std::string> MissingForNode(const std::string& root,
                                        const std::string& kernel_package) {
  std::vector<std::string> missing;
  UniqueFd dir(open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) return {"no root tree at " + root};
  bool kernel = false;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root + "/boot", ec))
    kernel = kernel || e.path().filename().string().rfind("vmlinuz-", 0) == 0;
  if (!kernel)
    missing.push_back(kernel_package.empty()
                          ? "no kernel in /boot and no kernel_package"
                          : "no kernel in /boot (kernel_package " + kernel_package + " put none)");
  if (!InTree(dir.get(), "/sbin/init") || (!InTree(dir.get(), "/lib/systemd/systemd") &&
                                           !InTree(dir.get(), "/usr/lib/systemd/systemd")))
    missing.push_back("no systemd (add systemd-sysv to packages)");
  if (!InTree(dir.get(), "/usr/sbin/sshd"))
    missing.push_back("no sshd (add openssh-server to packages)");
  if (!InTree(dir.get(), "/usr/bin/curl"))
    missing.push_back("no curl (the phone-home agent's: add curl to packages)");
  return missing;
}

namespace {

class Oci final : public ImageSource {
 public:
  explicit Oci(const ImageBuildOptions& options) : options_(options) {}

  std::string_view name() const override { return "oci"; }

  Status Check(const ImageManifest& m, const BuildProgress& progress) const override {
    for (const std::string& tool : {options_.skopeo, options_.umoci})
      if (access(tool.c_str(), X_OK) != 0)
        return Status::NotFound(m.file + ": the oci source needs " + tool +
                                " (Debian's skopeo and umoci packages)");
    const OciSettings& o = OciSettingsOf(m);
    const std::string ref = OciSkopeoReference(m);
    const std::string_view transport = TransportOf(ref);
    if (transport != "docker://") {
      std::string path = ref.substr(transport.size());
      // oci:DIR:TAG names a tag after the folder.
      if (transport == "oci:" && !fs::exists(path) && path.rfind(':') != std::string::npos)
        path = path.substr(0, path.rfind(':'));
      if (!fs::exists(path))
        return Status::NotFound(m.file + ": " + std::string(transport) + " " + path +
                                " does not exist");
    }
    if (!o.credentials.empty()) {
      auto secret = Credentials(m);
      if (!secret.ok())
        return Status::Error(secret.status().code(), m.file + ": " + secret.status().message());
    }
    if (progress) progress("oci image " + o.reference);
    return Status::Ok();
  }

  Result<std::string> Identity(const ImageManifest& m,
                               const BuildProgress& progress) const override {
    TempDir tmp("provisiond-oci");
    auto auth = AuthFile(m, tmp.path());
    if (!auth.ok()) return auth.status();
    // skopeo's stdout is the manifest; its stderr stays for the error.
    ProcessSpec inspect;
    inspect.argv = {
        "/bin/sh", "-c",   "exec \"$@\" >\"$0\"", tmp.path() + "/manifest.json", options_.skopeo,
        "inspect", "--raw"};
    AddCommonArgs(m, *auth, inspect.argv);
    inspect.argv.push_back(OciSkopeoReference(m));
    if (progress) progress("reading the image's manifest");
    Status s = RunBuildStep(inspect, options_.mirror_check_timeout_s * 4, Hidden(progress, m),
                            "skopeo inspect", options_.cancel);
    if (!s.ok()) return Hide(s, m);
    auto raw = ReadFile(tmp.path() + "/manifest.json");
    if (!raw.ok() || raw->empty())
      return Status::Error(Code::kUnavailable,
                           "skopeo inspect printed no manifest for " + OciSettingsOf(m).reference);
    digest_ = "sha256:" + Sha256Hex(*raw);
    auto finishing = FinishingInputsKey(options_);
    if (!finishing.ok()) return finishing.status();
    if (progress) progress("image manifest " + digest_);
    return Sha256Hex("oci:" + std::to_string(kOciRecipe) + "\n" + digest_ + "\n" + m.sha256 + "\n" +
                     *finishing + "\n")
        .substr(0, 16);
  }

  Status Fetch(const ImageManifest& m, const std::string& root,
               const BuildProgress& progress) const override {
    const OciSettings& o = OciSettingsOf(m);
    const std::string work = fs::path(root).parent_path().string() + "/oci";
    const std::string layout = work + "/layout", bundle = work + "/bundle";
    TempDir tmp("provisiond-oci");
    auto auth = AuthFile(m, tmp.path());
    if (!auth.ok()) return auth.status();
    Status s = MakeDirs(work);
    if (!s.ok()) return s;
    ProcessSpec copy;
    copy.argv = {options_.skopeo, "copy"};
    AddCommonArgs(m, *auth, copy.argv);
    copy.argv.push_back(OciSkopeoReference(m));
    copy.argv.push_back("oci:" + layout + ":image");
    if (progress) progress("copying " + o.reference);
    s = RunBuildStep(copy, options_.timeout_s, Hidden(progress, m), "skopeo", options_.cancel);
    if (!s.ok()) return Hide(s, m);
    auto index = ReadFile(layout + "/index.json");
    const nlohmann::json j =
        index.ok() ? nlohmann::json::parse(*index, nullptr, false) : nlohmann::json();
    if (j.is_object() && j.contains("manifests") && j["manifests"].is_array() &&
        !j["manifests"].empty() && j["manifests"][0].is_object())
      copied_ = j["manifests"][0].value("digest", "");
    // Each blob is checked against its digest as it is read.
    ProcessSpec unpack;
    unpack.argv = {options_.umoci, "unpack", "--image", layout + ":image", bundle};
    if (progress) progress("unpacking the layers");
    s = RunBuildStep(unpack, options_.timeout_s, progress, "umoci", options_.cancel);
    if (!s.ok()) return s;
    std::error_code ec;
    fs::remove(root, ec);
    fs::rename(bundle + "/rootfs", root, ec);
    if (ec)
      return Status::Internal("cannot move the unpacked tree to " + root + ": " + ec.message());
    fs::remove_all(work, ec);
    // A container runtime's marks: the node is no container.
    for (const char* mark : {"/.dockerenv", "/run/.containerenv"}) fs::remove(root + mark, ec);

    // Without a kernel and no kernel_package nothing installed makes a node.
    auto missing = MissingForNode(root, m.kernel_package);
    if (!missing.empty() && m.kernel_package.empty() && missing[0].rfind("no kernel", 0) == 0)
      return NotANode(m, missing);
    if (!m.kernel_package.empty() || !o.packages.empty()) {
      s = InstallOnTop(m, root, progress);
      if (!s.ok()) return s;
      missing = MissingForNode(root, m.kernel_package);
    }
    if (!missing.empty()) return NotANode(m, missing);
    return Status::Ok();
  }

  nlohmann::json Provenance(const ImageManifest& m) const override {
    const OciSettings& o = OciSettingsOf(m);
    return {{"oci",
             {{"reference", o.reference},
              {"digest", digest_},
              {"copied_digest", copied_},
              {"packages", o.packages},
              {"recipe", kOciRecipe}}}};
  }

 private:
  Result<std::string> Credentials(const ImageManifest& m) const {
    const OciSettings& o = OciSettingsOf(m);
    if (!options_.secret)
      return Status::Error(Code::kUnavailable,
                           "credentials '" + o.credentials + "': no secrets store here");
    return options_.secret(o.credentials);
  }

  // The auth file in `dir` when the manifest names credentials; else empty.
  Result<std::string> AuthFile(const ImageManifest& m, const std::string& dir) const {
    const OciSettings& o = OciSettingsOf(m);
    if (o.credentials.empty()) return std::string();
    auto secret = Credentials(m);
    if (!secret.ok()) return secret.status();
    secret_ = *secret;
    return WriteAuthFile(dir, o.reference, *secret);
  }

  // The platform the manifest asks for and the login, for inspect and copy.
  void AddCommonArgs(const ImageManifest& m, const std::string& auth,
                     std::vector<std::string>& argv) const {
    argv.insert(argv.end(), {"--override-os", "linux", "--override-arch", m.architecture});
    if (!auth.empty()) argv.insert(argv.end(), {"--authfile", auth});
  }

  // Progress and errors never carry the registry's password.
  BuildProgress Hidden(const BuildProgress& progress, const ImageManifest&) const {
    if (!progress) return progress;
    return [this, progress](const std::string& line) {
      progress(secret_.empty() ? line : RedactSecrets(line, Secrets()));
    };
  }
  Status Hide(const Status& s, const ImageManifest&) const {
    if (secret_.empty()) return s;
    return Status::Error(s.code(), RedactSecrets(s.message(), Secrets()));
  }
  std::vector<std::string> Secrets() const {
    std::vector<std::string> out = {secret_, Base64Encode(secret_)};
    const size_t colon = secret_.find(':');
    if (colon != std::string::npos && colon + 1 < secret_.size())
      out.push_back(secret_.substr(colon + 1));
    return out;
  }

  // kernel_package and packages with the tree's apt, no daemon started, the
  // kernel's initramfs-tools hook off (the node boots our initrd).
  Status InstallOnTop(const ImageManifest& m, const std::string& root,
                      const BuildProgress& progress) const {
    const OciSettings& o = OciSettingsOf(m);
    UniqueFd dir(open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!dir.valid() || !InTree(dir.get(), "/usr/bin/apt-get") || !InTree(dir.get(), "/bin/sh"))
      return Status::Invalid(m.file + ": " + o.reference +
                             " has no apt-get: packages on top need a Debian or Ubuntu base");
    std::vector<std::string> packages = o.packages;
    if (!m.kernel_package.empty()) packages.insert(packages.begin(), m.kernel_package);
    // (Without ": ", the image service's mark of a tool's output line.)
    if (progress) progress("installing " + Join(packages, " ") + " on top with the image's apt");
    Status s = BeginImageStage(root);
    if (!s.ok()) return s;
    ProcessSpec apt;
    apt.argv = ImageStageCommand(root);
    apt.argv.insert(apt.argv.end(),
                    {"/usr/sbin/chroot", root, "/bin/sh", "-c",
                     "set -e\n"
                     "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "
                     "HOME=/root LC_ALL=C DEBIAN_FRONTEND=noninteractive INITRD=No\n"
                     "apt-get -q update\n"
                     "apt-get -q -y --no-install-recommends -o Dpkg::Options::=--force-confold "
                     "install \"$@\"\n"
                     "apt-get clean\n",
                     "apt"});
    apt.argv.insert(apt.argv.end(), packages.begin(), packages.end());
    s = RunBuildStep(apt, options_.timeout_s, progress, "apt", options_.cancel);
    EndImageStage(root);
    return s;
  }

  Status NotANode(const ImageManifest& m, const std::vector<std::string>& missing) const {
    return Status::Invalid(m.file + ": " + OciSettingsOf(m).reference +
                           " is not yet a node's root: " + Join(missing, "; "));
  }

  ImageBuildOptions options_;
  // Learnt by Identity and Fetch (one source object per build).
  mutable std::string digest_, copied_, secret_;
};

}  // namespace

std::unique_ptr<ImageSource> CreateOciSource(const ImageBuildOptions& options) {
  return std::make_unique<Oci>(options);
}

}  // namespace prov
