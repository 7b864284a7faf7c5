#include "images/image_archive.h"

#include <sys/stat.h>

#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "base/process.h"
#include "base/strings.h"
#include "images/finish.h"

namespace prov {
namespace fs = std::filesystem;

namespace {

std::mutex archive_mu;  // one archive made at a time

// GNU tar, as every control node (Debian) has it: numeric owners and extended
// attributes (security.capability) kept both ways.
const std::vector<std::string> kTarOptions = {"--numeric-owner", "--xattrs", "--xattrs-include=*",
                                              "--acls"};

Status RunTar(std::vector<std::string> args, const std::string& what) {
  ProcessSpec spec;
  spec.argv = {"/bin/tar"};
  spec.argv.insert(spec.argv.end(), kTarOptions.begin(), kTarOptions.end());
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  auto r = RunProcess(spec, 3600 * 1000);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0)
    return Status::Internal(what + ": tar failed (exit " + std::to_string(r->exit_code) +
                            "): " + r->output.substr(0, 2000));
  return Status::Ok();
}

}  // namespace

Result<ImageArchive> MakeImageArchive(const ImageVersion& v, const std::string& dir) {
  std::lock_guard lock(archive_mu);
  ImageArchive a;
  a.path = dir + "/" + v.ref() + ".tar";
  const std::string digest_file = a.path + ".sha256";
  // Made again when the version's folder changed after it (its erofs image
  // added, images/nfs.h).
  std::error_code stale_ec;
  const bool fresh = fs::exists(a.path) &&
                     fs::last_write_time(a.path, stale_ec) >= fs::last_write_time(v.dir, stale_ec);
  if (auto known = ReadFile(digest_file); known.ok() && fresh && !stale_ec) {
    a.sha256 = Trim(*known);
    a.size = fs::file_size(a.path);
    return a;
  }
  if (Status s = MakeDirs(dir, 0700); !s.ok()) return s;
  const std::string tmp = a.path + ".part";
  std::error_code ec;
  fs::remove(tmp, ec);
  if (Status s = RunTar({"--create", "--sparse", "--file", tmp, "--directory", v.dir, "."},
                        "archive of " + v.ref());
      !s.ok()) {
    fs::remove(tmp, ec);
    return s;
  }
  auto sha = Sha256File(tmp);
  if (!sha.ok()) return sha.status();
  fs::rename(tmp, a.path, ec);
  if (ec) return Status::Internal("cannot rename " + tmp + ": " + ec.message());
  if (Status s = WriteFileAtomic(digest_file, *sha + "\n", 0600); !s.ok()) return s;
  a.sha256 = *sha;
  a.size = fs::file_size(a.path);
  return a;
}

Result<ImageVersion> InstallImageArchive(ImageCatalog& catalog, const std::string& ref,
                                         const std::string& archive, const std::string& sha256) {
  const size_t at = ref.find('@');
  if (at == std::string::npos) return Status::Invalid("'" + ref + "' is not name@version");
  const std::string name = ref.substr(0, at), version = ref.substr(at + 1);
  if (Status s = ValidateImageName(name); !s.ok()) return s;
  if (Status s = ValidateImageName(version); !s.ok()) return s;
  if (auto there = catalog.Resolve(ref); there.ok()) return there;
  auto got = Sha256File(archive);
  if (!got.ok()) return got.status();
  if (*got != sha256)
    return Status::Invalid("the copy of " + ref + " is damaged: SHA-256 " + *got + ", expected " +
                           sha256);
  const std::string parent = catalog.store_dir() + "/" + name;
  const std::string tmp = parent + "/.incoming-" + version;
  std::error_code ec;
  fs::remove_all(tmp, ec);
  if (Status s = MakeDirs(tmp); !s.ok()) return s;
  auto drop = [&] { fs::remove_all(tmp, ec); };
  if (Status s = RunTar({"--extract", "--same-permissions", "--file", archive, "--directory", tmp},
                        "unpacking " + ref);
      !s.ok()) {
    drop();
    return s;
  }
  auto meta = ReadFile(tmp + "/image.json");
  auto j = meta.ok() ? nlohmann::json::parse(*meta, nullptr, false) : nlohmann::json();
  if (!j.is_object()) {
    drop();
    return Status::Invalid("the copy of " + ref + " has no image.json");
  }
  if (fs::is_directory(tmp + "/root") && j.contains("sha256") && j["sha256"].is_string()) {
    auto tree = HashTree(tmp + "/root");
    if (!tree.ok() || *tree != j["sha256"].get<std::string>()) {
      drop();
      return Status::Invalid("the copy of " + ref + "'s root tree hashes to " +
                             (tree.ok() ? *tree : tree.status().message()) + ", image.json says " +
                             j["sha256"].get<std::string>());
    }
  }
  fs::rename(tmp, parent + "/" + version, ec);
  if (ec) {
    drop();
    if (auto there = catalog.Resolve(ref); there.ok()) return there;  // made meanwhile
    return Status::Internal("cannot rename " + tmp + " into place: " + ec.message());
  }
  return catalog.Resolve(ref);
}

}  // namespace prov
