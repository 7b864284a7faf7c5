// A distribution's archive key for an image build (Ubuntu's, which Debian
// does not ship), found and checked before anything is fetched: beside the
// manifest, where Debian and Ubuntu systems keep keyrings
// (/usr/share/keyrings, /etc/apt/keyrings, /etc/apt/trusted.gpg.d), or
// downloaded from the manifest's keyring_url. A manifest that pins the key's
// fingerprint (keyring_fingerprint, as the distribution publishes it) gets
// only a file holding that key; a download that does not is refused and not
// kept. Errors say which fingerprint was expected and where it looked.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"

namespace prov {

struct ArchiveKeyRequest {
  std::string name;         // the key file's name, "ubuntu-archive-keyring.gpg"
  std::string fingerprint;  // pinned (40 hex digits), or "" for none
  std::string url;          // where to download it from when no file has it, or ""
  std::string beside;       // the manifest's folder, looked in first
  std::vector<std::string> system_dirs = {"/usr/share/keyrings", "/etc/apt/keyrings",
                                          "/etc/apt/trusted.gpg.d"};
  std::string cache_dir;  // where a downloaded key is kept (made 0700)
  std::string gpg = "/usr/bin/gpg";
  int timeout_s = 30;
};

// The fingerprints of the keys in `file` (binary or armored), upper case.
Result<std::vector<std::string>> KeyFingerprints(const std::string& file, const std::string& gpg);

// "F6EC B376 ..." or "f6ecb376..." as 40 upper-case hex digits; "" when it is
// not a fingerprint.
std::string NormalizeFingerprint(const std::string& text);

// The path of the key file to use.
Result<std::string> FindArchiveKey(const ArchiveKeyRequest& request);

}  // namespace prov
