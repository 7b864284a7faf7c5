// The mmdebstrap image source: mmdebstrap (as root, minbase) from the
// manifest's mirror. The mirror is checked first: a wrong suite or an
// unreachable mirror is said in seconds, not after mmdebstrap's retries.
#include "images/mmdebstrap_source.h"

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
