#include "images/archive_key.h"

#include <curl/curl.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <sstream>

#include "base/file_util.h"
#include "base/process.h"
#include "base/strings.h"
#include "base/temp_dir.h"

namespace prov {

std::string NormalizeFingerprint(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == ' ') continue;
    if (!isxdigit(static_cast<unsigned char>(c))) return "";
    out += static_cast<char>(toupper(static_cast<unsigned char>(c)));
  }
  return out.size() == 40 ? out : "";
}

Result<std::vector<std::string>> KeyFingerprints(const std::string& file, const std::string& gpg) {
  // A throwaway home: nothing is imported anywhere, the build host's keys
  // are not consulted.
  TempDir home("provisiond-gpg");
  ProcessSpec spec;
  spec.argv = {gpg, "--homedir", home.path(), "--batch", "--with-colons", "--show-keys", file};
  auto r = RunProcess(spec, 30000);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0)
    return Status::Invalid(file + " is not an OpenPGP key file (" + DescribeCommand(spec) +
                           " exit " + std::to_string(r->exit_code) + ")");
  std::vector<std::string> out;
  std::istringstream lines(r->output);
  std::string line;
  bool primary = false;
  while (std::getline(lines, line)) {
    // "pub:..." starts a key; its first "fpr:" line is the key's own.
    if (line.rfind("pub:", 0) == 0) primary = true;
    if (line.rfind("fpr:", 0) == 0 && primary) {
      std::vector<std::string> fields;
      std::istringstream f(line);
      for (std::string field; std::getline(f, field, ':');) fields.push_back(field);
      if (fields.size() > 9) out.push_back(NormalizeFingerprint(fields[9]));
      primary = false;
    }
  }
  if (out.empty()) return Status::Invalid(file + " holds no OpenPGP key");
  return out;
}

namespace {

// Downloads `url` into `path`.
Status Download(const std::string& url, const std::string& path, int timeout_s) {
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), &curl_easy_cleanup);
  if (!curl) return Status::Internal("curl_easy_init failed");
  std::string body;
  curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl.get(), CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT, static_cast<long>(timeout_s));
  curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(
      curl.get(), CURLOPT_WRITEFUNCTION, +[](char* d, size_t s, size_t n, void* out) -> size_t {
        auto* b = static_cast<std::string*>(out);
        if (b->size() + s * n > (1u << 20)) return 0;  // a key is not a megabyte
        b->append(d, s * n);
        return s * n;
      });
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &body);
  CURLcode rc = curl_easy_perform(curl.get());
  long code = 0;
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &code);
  if (rc != CURLE_OK) return Status::Error(Code::kUnavailable, url + ": " + curl_easy_strerror(rc));
  if (code != 200)
    return Status::Error(Code::kUnavailable, url + " answered HTTP " + std::to_string(code));
  return WriteFileAtomic(path, body, 0644);
}

}  // namespace

Result<std::string> FindArchiveKey(const ArchiveKeyRequest& r) {
  std::vector<std::string> dirs = {r.beside};
  dirs.insert(dirs.end(), r.system_dirs.begin(), r.system_dirs.end());
  if (!r.cache_dir.empty()) dirs.push_back(r.cache_dir);
  std::vector<std::string> looked, mismatched;
  for (const std::string& dir : dirs) {
    if (dir.empty()) continue;
    const std::string path = dir + "/" + r.name;
    looked.push_back(path);
    if (access(path.c_str(), R_OK) != 0) continue;
    if (r.fingerprint.empty()) return path;
    auto fprs = KeyFingerprints(path, r.gpg);
    if (fprs.ok() && std::find(fprs->begin(), fprs->end(), r.fingerprint) != fprs->end())
      return path;
    mismatched.push_back(path + " (" + (fprs.ok() ? Join(*fprs, ", ") : fprs.status().message()) +
                         ")");
  }
  const std::string expected = r.fingerprint.empty() ? "" : " with fingerprint " + r.fingerprint;
  if (!r.url.empty() && !r.cache_dir.empty()) {
    Status dir = MakeDirs(r.cache_dir, 0700);
    if (!dir.ok()) return dir;
    const std::string fetched = r.cache_dir + "/." + r.name + ".download";
    Status got = Download(r.url, fetched, r.timeout_s);
    if (!got.ok()) {
      unlink(fetched.c_str());
      return Status::Error(got.code(), "archive key " + r.name + expected +
                                           ": not found (looked in " + Join(looked, ", ") +
                                           "), and the download failed: " + got.message());
    }
    auto fprs = KeyFingerprints(fetched, r.gpg);
    if (!fprs.ok() || (!r.fingerprint.empty() &&
                       std::find(fprs->begin(), fprs->end(), r.fingerprint) == fprs->end())) {
      unlink(fetched.c_str());
      return Status::Invalid("archive key " + r.name + " from " + r.url + " refused: expected " +
                             (r.fingerprint.empty() ? "a key" : "fingerprint " + r.fingerprint) +
                             ", it holds " +
                             (fprs.ok() ? Join(*fprs, ", ") : fprs.status().message()));
    }
    const std::string kept = r.cache_dir + "/" + r.name;
    if (rename(fetched.c_str(), kept.c_str()) != 0)
      return Status::Internal("rename " + fetched + ": " + strerror(errno));
    return kept;
  }
  return Status::NotFound(
      "archive key " + r.name + expected + " not found: looked in " + Join(looked, ", ") +
      (mismatched.empty() ? "" : "; other keys in " + Join(mismatched, ", ")) +
      (r.url.empty() ? "; install the distribution's keyring package (ubuntu-keyring for Ubuntu) "
                       "or put the key beside the manifest, or give keyring_url"
                     : ""));
}

}  // namespace prov
