// The mmdebstrap image source: mmdebstrap (as root, minbase) from the
// manifest's mirror. The mirror is checked first: a wrong suite or an
// unreachable mirror is said in seconds, not after mmdebstrap's retries.
#include "images/mmdebstrap_source.h"

#include "images/archive_key.h"

#include <unistd.h>

#include <curl/curl.h>

#include <filesystem>
#include <memory>
#include <regex>

#include "images/source.h"

namespace prov {
namespace fs = std::filesystem;

namespace {

// Names in a manifest, checked character by character: std::regex recursed
// once per character of a name and overflowed the stack on a long one.
constexpr std::string_view kSuiteChars = "abcdefghijklmnopqrstuvwxyz0123456789-";
constexpr std::string_view kPpaChars = "abcdefghijklmnopqrstuvwxyz0123456789.+-";

// A key file's name: a word, no directory, ending in .gpg or .asc.
bool IsKeyFileName(const std::string& s) {
  constexpr std::string_view kChars =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-";
  return s.size() > 4 && s.size() < 200 && s[0] != '.' &&
         s.find_first_not_of(kChars) == std::string::npos &&
         (s.ends_with(".gpg") || s.ends_with(".asc"));
}

// One or more characters, all of `chars`.
bool IsManifestWord(std::string_view s, std::string_view chars) {
  return !s.empty() && s.find_first_not_of(chars) == std::string_view::npos;
}

// [a-z0-9.+-]+/[a-z0-9.+-]+ (owner/name).
bool IsPpaName(std::string_view p) {
  const size_t slash = p.find('/');
  return slash != std::string_view::npos && IsManifestWord(p.substr(0, slash), kPpaChars) &&
         IsManifestWord(p.substr(slash + 1), kPpaChars);
}

}  // namespace

std::string AptSource::Render(const std::string& suite) const {
  const std::string options =
      signed_by.empty() ? "" : "[signed-by=/etc/apt/keyrings/" + signed_by + "] ";
  if (!line.empty()) return "deb " + options + line.substr(4);
  return "deb " + options + "http://ppa.launchpadcontent.net/" + ppa + "/ubuntu " + suite + " main";
}

void ParseMmdebstrapManifest(MapReader& top, ImageManifest& m) {
  auto settings = std::make_shared<AptSettings>();
  AptSettings& a = *settings;
  if (top.GetString("distribution", a.distribution, true) && a.distribution != "debian" &&
      a.distribution != "ubuntu")
    top.errors().Add(top.Raw("distribution"),
                     "distribution must be debian or ubuntu, found '" + a.distribution + "'");
  if (top.GetString("suite", a.suite, true) && !IsManifestWord(a.suite, kSuiteChars))
    top.errors().Add(top.Raw("suite"),
                     "suite '" + a.suite + "' must be a release name like bookworm");
  if (top.GetString("mirror", a.mirror, true) && a.mirror.rfind("http://", 0) != 0 &&
      a.mirror.rfind("https://", 0) != 0 && a.mirror.rfind("file://", 0) != 0)
    top.errors().Add(top.Raw("mirror"), "mirror must be an http://, https:// or file:// URL");
  if (!top.GetStringList("components", a.components)) a.components = {"main"};
  ReadPackageKeys(top, m, a.packages, /*kernel_required=*/true);
  top.GetMapList("apt_sources", [&](MapReader& entry) {
    AptSource src;
    bool has_ppa = entry.GetString("ppa", src.ppa), has_line = entry.GetString("line", src.line);
    if (has_ppa == has_line)
      entry.errors().Add(entry.node(), "an apt source needs exactly one of 'ppa' or 'line'");
    if (has_ppa) {
      if (src.ppa.rfind("ppa:", 0) == 0) src.ppa = src.ppa.substr(4);
      if (!IsPpaName(src.ppa))
        entry.errors().Add(entry.Raw("ppa"), "ppa '" + src.ppa + "' must be owner/name");
      if (a.distribution == "debian")
        entry.errors().Add(entry.Raw("ppa"), "PPAs are for Ubuntu; this image is Debian");
    }
    if (has_line && src.line.rfind("deb ", 0) != 0)
      entry.errors().Add(entry.Raw("line"), "an apt source line starts with 'deb '");
    if (entry.GetString("signed_by", src.signed_by)) {
      if (!IsKeyFileName(src.signed_by))
        entry.errors().Add(entry.Raw("signed_by"),
                           "signed_by '" + src.signed_by + "' must be the name " +
                               "of a .gpg or .asc file beside the manifest");
      if (has_line && src.line.find('[') != std::string::npos)
        entry.errors().Add(entry.Raw("signed_by"),
                           "the line has its own [options]: put signed-by there, or drop them");
    }
    a.apt_sources.push_back(std::move(src));
  });
  if (top.GetString("keyring", a.keyring) && !IsKeyFileName(a.keyring))
    top.errors().Add(top.Raw("keyring"),
                     "keyring '" + a.keyring +
                         "' must be the name of a .gpg or .asc file (beside the "
                         "manifest, in /usr/share/keyrings, or keyring_url)");
  if (std::string f; top.GetString("keyring_fingerprint", f)) {
    a.keyring_fingerprint = NormalizeFingerprint(f);
    if (a.keyring_fingerprint.empty())
      top.errors().Add(top.Raw("keyring_fingerprint"),
                       "keyring_fingerprint '" + f + "' is not a key fingerprint (40 hex digits)");
  }
  if (top.GetString("keyring_url", a.keyring_url)) {
    if (a.keyring_url.rfind("https://", 0) != 0 && a.keyring_url.rfind("http://", 0) != 0)
      top.errors().Add(top.Raw("keyring_url"), "keyring_url must be an http(s) URL");
    if (a.keyring_fingerprint.empty())
      top.errors().Add(top.Raw("keyring_url"),
                       "a downloaded key needs keyring_fingerprint (the distribution publishes "
                       "its archive keys' fingerprints): nothing fetched is trusted unpinned");
  }
  if (a.keyring.empty() && (!a.keyring_fingerprint.empty() || !a.keyring_url.empty()))
    top.errors().Add(top.Raw(a.keyring_url.empty() ? "keyring_fingerprint" : "keyring_url"),
                     "keyring_fingerprint and keyring_url go with keyring (the key file's name)");
  m.settings = std::move(settings);
}

const AptSettings& AptSettingsOf(const ImageManifest& m) {
  static const AptSettings kNone;
  const auto* apt = dynamic_cast<const AptSettings*>(m.settings.get());
  return apt ? *apt : kNone;
}

Status CheckMirror(const ImageManifest& m, int timeout_s) {
  const AptSettings& a = AptSettingsOf(m);
  const std::string url =
      a.mirror + (a.mirror.back() == '/' ? "" : "/") + "dists/" + a.suite + "/Release";
  if (a.mirror.rfind("file://", 0) == 0) {
    if (!fs::exists(url.substr(7)))
      return Status::Error(Code::kUnavailable, "mirror " + a.mirror + " has no " + url.substr(7));
    return Status::Ok();
  }
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), &curl_easy_cleanup);
  if (!curl) return Status::Internal("curl_easy_init failed");
  curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_NOBODY, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT, static_cast<long>(timeout_s));
  curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
  CURLcode rc = curl_easy_perform(curl.get());
  if (rc != CURLE_OK)
    return Status::Error(Code::kUnavailable, "mirror " + a.mirror + " cannot be reached: " +
                                                 curl_easy_strerror(rc) + " (" + url + ")");
  long code = 0;
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &code);
  if (code != 200)
    return Status::Error(Code::kUnavailable, "mirror " + a.mirror + " has no suite '" + a.suite +
                                                 "': " + url + " answered HTTP " +
                                                 std::to_string(code));
  return Status::Ok();
}

ProcessSpec MmdebstrapCommand(const ImageManifest& m, const std::string& mmdebstrap,
                              const std::string& root, const std::string& archive_key) {
  const AptSettings& a = AptSettingsOf(m);
  std::string components;
  for (const auto& c : a.components) components += (components.empty() ? "" : ",") + c;
  std::string include = m.kernel_package;
  for (const auto& p : a.packages) include += "," + p;
  ProcessSpec spec;
  spec.argv = {mmdebstrap,
               "--mode=root",
               "--variant=minbase",
               "--architectures=" + m.architecture,
               "--components=" + components,
               "--include=" + include,
               "--aptopt=Acquire::Languages \"none\"",
               "--dpkgopt=path-exclude=/usr/share/man/*",
               "--dpkgopt=path-exclude=/usr/share/doc/*",
               "--dpkgopt=path-include=/usr/share/doc/*/copyright",
               "--dpkgopt=path-exclude=/usr/share/locale/*",
               a.suite,
               root,
               a.mirror};
  // Keys, copied in before apt's first update: the archive key into
  // trusted.gpg.d, the sources' own keys where their lines name them.
  std::vector<std::string> hooks;
  if (!a.keyring.empty())
    hooks.push_back("--setup-hook=copy-in " +
                    (archive_key.empty() ? m.Beside(a.keyring) : archive_key) +
                    " /etc/apt/trusted.gpg.d/");
  for (const auto& src : a.apt_sources)
    if (!src.signed_by.empty())
      hooks.push_back("--setup-hook=copy-in " + m.Beside(src.signed_by) + " /etc/apt/keyrings/");
  if (!hooks.empty()) {
    hooks.insert(hooks.begin(),
                 "--setup-hook=mkdir -p \"$1/etc/apt/trusted.gpg.d\" \"$1/etc/apt/keyrings\"");
    spec.argv.insert(spec.argv.begin() + 6, hooks.begin(), hooks.end());
  }
  for (const auto& src : a.apt_sources) spec.argv.push_back(src.Render(a.suite));
  // The kernel's postinst would build an initramfs-tools initrd we never use.
  spec.env = {"INITRD=No"};
  return spec;
}

namespace {

class Mmdebstrap final : public ImageSource {
 public:
  explicit Mmdebstrap(const ImageBuildOptions& options) : options_(options) {}

  std::string_view name() const override { return "mmdebstrap"; }

  Status Check(const ImageManifest& m, const BuildProgress& progress) const override {
    const AptSettings& a = AptSettingsOf(m);
    // Keys the manifest names must be there before anything is fetched.
    if (!a.keyring.empty()) {
      auto key = ArchiveKey(m);
      if (!key.ok())
        return Status::Error(key.status().code(), m.file + ": " + key.status().message());
      if (progress)
        progress(
            "archive key " + *key +
            (a.keyring_fingerprint.empty() ? "" : " (fingerprint " + a.keyring_fingerprint + ")"));
    }
    std::vector<std::string> keys;
    for (const auto& src : a.apt_sources)
      if (!src.signed_by.empty()) keys.push_back(src.signed_by);
    for (const auto& k : keys)
      if (access(m.Beside(k).c_str(), R_OK) != 0)
        return Status::NotFound(m.file + ": key file " + m.Beside(k) +
                                " is missing (put the repository's public key there; " +
                                (a.distribution == "ubuntu"
                                     ? "Ubuntu's archive key is in its ubuntu-keyring package"
                                     : "its publisher documents where it is") +
                                ")");
    if (progress) progress("checking mirror " + a.mirror + " for " + a.suite);
    return CheckMirror(m, options_.mirror_check_timeout_s);
  }

  Status Fetch(const ImageManifest& m, const std::string& root,
               const BuildProgress& progress) const override {
    const AptSettings& a = AptSettingsOf(m);
    if (progress)
      progress("mmdebstrap " + a.suite + " with " + std::to_string(a.packages.size() + 1) +
               " package(s)");
    std::string key;
    if (!a.keyring.empty()) {
      auto found = ArchiveKey(m);
      if (!found.ok()) return found.status();
      key = *found;
    }
    return RunBuildStep(MmdebstrapCommand(m, options_.mmdebstrap, root, key), options_.timeout_s,
                        progress, "mmdebstrap", options_.cancel);
  }

  nlohmann::json Provenance(const ImageManifest& m) const override {
    const AptSettings& a = AptSettingsOf(m);
    nlohmann::json p = {{"suite", a.suite}, {"mirror", a.mirror}, {"packages", a.packages}};
    if (!a.keyring_fingerprint.empty()) p["archive_key"] = a.keyring_fingerprint;
    return p;
  }

 private:
  Result<std::string> ArchiveKey(const ImageManifest& m) const {
    const AptSettings& a = AptSettingsOf(m);
    ArchiveKeyRequest r{.name = a.keyring,
                        .fingerprint = a.keyring_fingerprint,
                        .url = a.keyring_url,
                        .beside = m.Dir(),
                        .cache_dir = options_.key_cache_dir};
    return FindArchiveKey(r);
  }

  ImageBuildOptions options_;
};

}  // namespace

std::unique_ptr<ImageSource> CreateMmdebstrapSource(const ImageBuildOptions& options) {
  return std::make_unique<Mmdebstrap>(options);
}

}  // namespace prov
