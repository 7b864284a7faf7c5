#include "images/archive_key.h"

#include <doctest/doctest.h>

#include <filesystem>

#include "base/file_util.h"
#include "base/temp_dir.h"
#include "http/http_server.h"

namespace prov {
namespace {

namespace fs = std::filesystem;
const std::string kKeys = PROVISION_SOURCE_DIR "/tests/data/keys";
constexpr const char* kA = "C29FEFCA65A2884015919AD99357B0F01FC632CC";
constexpr const char* kB = "C6427ADFF54BC4D6C2081CFEDE2EF0D4C1C4F5D2";

// A manifest's folder, a "system" keyring folder and a cache, empty.
struct Dirs {
  TempDir root{"archive-key"};
  std::string beside = root.path() + "/manifest", system = root.path() + "/keyrings",
              cache = root.path() + "/cache";
  Dirs() {
    fs::create_directories(beside);
    fs::create_directories(system);
  }
  ArchiveKeyRequest Request(const std::string& fingerprint) const {
    return {.name = "archive.gpg",
            .fingerprint = fingerprint,
            .url = "",
            .beside = beside,
            .system_dirs = {system},
            .cache_dir = cache};
  }
};

}  // namespace

TEST_CASE("archive keys: fingerprints of binary and armored key files") {
  CHECK(*KeyFingerprints(kKeys + "/test-a.gpg", "/usr/bin/gpg") == std::vector<std::string>{kA});
  CHECK(*KeyFingerprints(kKeys + "/test-a.asc", "/usr/bin/gpg") == std::vector<std::string>{kA});
  CHECK_FALSE(KeyFingerprints(kKeys + "/README.md", "/usr/bin/gpg").ok());
  CHECK(NormalizeFingerprint("c29f efca 65a2 8840 1591  9ad9 9357 b0f0 1fc6 32cc") == kA);
  CHECK(NormalizeFingerprint("C29FEFCA").empty());
  CHECK(NormalizeFingerprint("Z29FEFCA65A2884015919AD99357B0F01FC632CC").empty());
}

TEST_CASE("archive keys: found beside the manifest or where systems keep them, by fingerprint") {
  Dirs d;
  // Missing: the error names the fingerprint and every place looked in.
  auto missing = FindArchiveKey(d.Request(kA));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == Code::kNotFound);
  CHECK(missing.status().message().find(std::string("archive key archive.gpg with fingerprint ") +
                                        kA + " not found: looked in " + d.beside +
                                        "/archive.gpg, " + d.system + "/archive.gpg") == 0);
  // In the system folder: found there.
  fs::copy_file(kKeys + "/test-a.gpg", d.system + "/archive.gpg");
  CHECK(*FindArchiveKey(d.Request(kA)) == d.system + "/archive.gpg");
  // Beside the manifest, another key: a mismatch there, the match found on.
  fs::copy_file(kKeys + "/test-b.gpg", d.beside + "/archive.gpg");
  CHECK(*FindArchiveKey(d.Request(kA)) == d.system + "/archive.gpg");
  CHECK(*FindArchiveKey(d.Request(kB)) == d.beside + "/archive.gpg");
  CHECK(*FindArchiveKey(d.Request("")) == d.beside + "/archive.gpg");  // unpinned: the first
  // Only the wrong key anywhere: refused, saying what each file holds.
  fs::remove(d.system + "/archive.gpg");
  auto wrong = FindArchiveKey(d.Request(kA));
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.status().message().find(std::string("other keys in ") + d.beside + "/archive.gpg (" +
                                      kB + ")") != std::string::npos);
}

TEST_CASE("archive keys: a download is kept only when it holds the pinned key") {
  Dirs d;
  Router router{nullptr};
  router.Add("GET", "/keys/{name}", Router::Access::kOpen, [](const HttpRequest& r) {
    auto key = ReadFile(kKeys + "/" + r.Param("name"));
    if (!key.ok()) return HttpResponse::Text(404, "no such key");
    return HttpResponse::Text(200, *key);
  });
  HttpServerOptions o;
  o.host = "127.0.0.1";
  o.port = 0;
  auto server = HttpServer::Start(o, router);
  REQUIRE(server.ok());
  const std::string base = "http://127.0.0.1:" + std::to_string((*server)->port()) + "/keys/";

  ArchiveKeyRequest r = d.Request(kA);
  r.url = base + "test-b.gpg";  // serves another key than the one pinned
  auto refused = FindArchiveKey(r);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message() == "archive key archive.gpg from " + r.url +
                                          " refused: expected fingerprint " + kA + ", it holds " +
                                          kB);
  CHECK_FALSE(fs::exists(d.cache + "/archive.gpg"));
  CHECK(fs::is_empty(d.cache));  // nothing of the download is left

  r.url = base + "missing.gpg";
  CHECK(FindArchiveKey(r).status().message().find("the download failed: " + r.url +
                                                  " answered HTTP 404") != std::string::npos);

  r.url = base + "test-a.asc";
  auto kept = FindArchiveKey(r);
  REQUIRE_MESSAGE(kept.ok(), kept.status().message());
  CHECK(*kept == d.cache + "/archive.gpg");
  // The next build finds it in the cache, without the server.
  server->reset();
  CHECK(*FindArchiveKey(r) == d.cache + "/archive.gpg");
}

}  // namespace prov
