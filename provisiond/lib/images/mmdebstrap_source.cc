// The mmdebstrap image source: mmdebstrap (as root, minbase) from the
// manifest's mirror. The mirror is checked first: a wrong suite or an
// unreachable mirror is said in seconds, not after mmdebstrap's retries.
#include "images/mmdebstrap_source.h"

#include <unistd.h>

#include <curl/curl.h>

#include <filesystem>
#include <memory>

#include "images/source.h"

namespace prov {
namespace fs = std::filesystem;

Status CheckMirror(const ImageManifest& m, int timeout_s) {
  const std::string url =
      m.mirror + (m.mirror.back() == '/' ? "" : "/") + "dists/" + m.suite + "/Release";
  if (m.mirror.rfind("file://", 0) == 0) {
    if (!fs::exists(url.substr(7)))
      return Status::Error(Code::kUnavailable, "mirror " + m.mirror + " has no " + url.substr(7));
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
    return Status::Error(Code::kUnavailable, "mirror " + m.mirror + " cannot be reached: " +
                                                 curl_easy_strerror(rc) + " (" + url + ")");
  long code = 0;
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &code);
  if (code != 200)
    return Status::Error(Code::kUnavailable, "mirror " + m.mirror + " has no suite '" + m.suite +
                                                 "': " + url + " answered HTTP " +
                                                 std::to_string(code));
  return Status::Ok();
}

ProcessSpec MmdebstrapCommand(const ImageManifest& m, const std::string& mmdebstrap,
                              const std::string& root) {
  std::string components;
  for (const auto& c : m.components) components += (components.empty() ? "" : ",") + c;
  std::string include = m.kernel_package;
  for (const auto& p : m.packages) include += "," + p;
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
               m.suite,
               root,
               m.mirror};
  // Keys, copied in before apt's first update: the archive key into
  // trusted.gpg.d, the sources' own keys where their lines name them.
  std::vector<std::string> hooks;
  if (!m.keyring.empty())
    hooks.push_back("--setup-hook=copy-in " + m.Beside(m.keyring) + " /etc/apt/trusted.gpg.d/");
  for (const auto& src : m.apt_sources)
    if (!src.signed_by.empty())
      hooks.push_back("--setup-hook=copy-in " + m.Beside(src.signed_by) + " /etc/apt/keyrings/");
  if (!hooks.empty()) {
    hooks.insert(hooks.begin(),
                 "--setup-hook=mkdir -p \"$1/etc/apt/trusted.gpg.d\" \"$1/etc/apt/keyrings\"");
    spec.argv.insert(spec.argv.begin() + 6, hooks.begin(), hooks.end());
  }
  for (const auto& src : m.apt_sources) spec.argv.push_back(src.Render(m.suite));
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
    // Keys the manifest names must be there before anything is fetched.
    std::vector<std::string> keys;
    if (!m.keyring.empty()) keys.push_back(m.keyring);
    for (const auto& src : m.apt_sources)
      if (!src.signed_by.empty()) keys.push_back(src.signed_by);
    for (const auto& k : keys)
      if (access(m.Beside(k).c_str(), R_OK) != 0)
        return Status::NotFound(m.file + ": key file " + m.Beside(k) +
                                " is missing (put the repository's public key there; " +
                                (m.distribution == "ubuntu"
                                     ? "Ubuntu's archive key is in its ubuntu-keyring package"
                                     : "its publisher documents where it is") +
                                ")");
    if (progress) progress("checking mirror " + m.mirror + " for " + m.suite);
    return CheckMirror(m, options_.mirror_check_timeout_s);
  }

  Status Fetch(const ImageManifest& m, const std::string& root,
               const BuildProgress& progress) const override {
    if (progress)
      progress("mmdebstrap " + m.suite + " with " + std::to_string(m.packages.size() + 1) +
               " package(s)");
    return RunBuildStep(MmdebstrapCommand(m, options_.mmdebstrap, root), options_.timeout_s,
                        progress, "mmdebstrap", options_.cancel);
  }

  nlohmann::json Provenance(const ImageManifest& m) const override {
    return {{"suite", m.suite}, {"mirror", m.mirror}, {"packages", m.packages}};
  }

 private:
  ImageBuildOptions options_;
};

}  // namespace

std::unique_ptr<ImageSource> CreateMmdebstrapSource(const ImageBuildOptions& options) {
  return std::make_unique<Mmdebstrap>(options);
}

}  // namespace prov
