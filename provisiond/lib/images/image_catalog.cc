#include "images/image_catalog.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "store/store.h"

namespace prov {
namespace fs = std::filesystem;

namespace {

// Letters, digits, '.', '_', '-', starting with a letter or digit; checked by
// hand (it runs for every boot request).
bool IsName(const std::string& s) {
  if (s.empty() || s.size() > 64 || !isalnum(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') return false;
  return true;
}

// SHA-256 over several files, streamed.
Result<std::string> HashFiles(const std::vector<std::string>& paths) {
  Sha256 hash;
  std::vector<char> buf(1 << 20);
  for (const auto& p : paths) {
    std::ifstream in(p, std::ios::binary);
    if (!in) return Status::NotFound("cannot read " + p);
    while (in) {
      in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      hash.Update(std::string_view(buf.data(), static_cast<size_t>(in.gcount())));
    }
    hash.Update(std::string_view("\0", 1));
  }
  return hash.HexDigest();
}

}  // namespace

Status ValidateImageName(const std::string& name) {
  if (!IsName(name))
    return Status::Invalid("image name '" + name + "' must be letters, digits, '.', '_' or '-'");
  return Status::Ok();
}

ImageCatalog::ImageCatalog(std::string store_dir) : store_dir_(std::move(store_dir)) {}

Result<ImageVersion> ImageCatalog::Load(const std::string& name, const std::string& version) {
  const std::string ref = name + "@" + version;
  {
    std::lock_guard lock(mu_);
    auto it = cache_.find(ref);
    if (it != cache_.end()) return it->second;
  }
  if (!IsName(version)) return Status::Invalid("'" + version + "' is not an image version");
  ImageVersion v;
  v.name = name;
  v.version = version;
  v.dir = store_dir_ + "/" + name + "/" + version;
  auto meta = ReadFile(v.dir + "/image.json");
  if (!meta.ok()) return Status::NotFound("image " + ref + " is not in the image store");
  v.kernel = v.dir + "/vmlinuz";
  v.initrd = v.dir + "/initrd.img";
  struct stat st {};
  if (stat(v.kernel.c_str(), &st) != 0)
    return Status::NotFound("image " + ref + " has no kernel (" + v.kernel + ")");
  v.kernel_size = static_cast<uint64_t>(st.st_size);
  if (stat(v.initrd.c_str(), &st) != 0)
    return Status::NotFound("image " + ref + " has no initrd (" + v.initrd + ")");
  v.initrd_size = static_cast<uint64_t>(st.st_size);
  if (fs::is_directory(v.dir + "/root")) v.root = v.dir + "/root";
  auto j = nlohmann::json::parse(*meta, nullptr, false);
  if (j.is_object() && j.contains("created")) v.created_ms = j["created"].get<int64_t>();
  std::lock_guard lock(mu_);
  cache_[ref] = v;  // versions never change, so this never goes stale
  return v;
}

Result<ImageVersion> ImageCatalog::Resolve(const std::string& ref) {
  size_t at = ref.find('@');
  std::string name = ref.substr(0, at);
  Status s = ValidateImageName(name);
  if (!s.ok()) return s;
  std::string version;
  if (at != std::string::npos) {
    version = ref.substr(at + 1);
  } else {
    // `current` is replaced by rename: its inode and mtime tell whether the
    // cached answer still holds, for the price of one stat().
    const std::string path = store_dir_ + "/" + name + "/current";
    struct stat st {};
    if (stat(path.c_str(), &st) != 0)
      return Status::NotFound("image '" + name + "' has not been built or imported");
    const std::string stamp = std::to_string(st.st_ino) + ":" + std::to_string(st.st_mtim.tv_sec) +
                              "." + std::to_string(st.st_mtim.tv_nsec);
    {
      std::lock_guard lock(mu_);
      auto it = current_.find(name);
      if (it != current_.end() && it->second.first == stamp) version = it->second.second;
    }
    if (version.empty()) {
      auto current = ReadFile(path);
      if (!current.ok())
        return Status::NotFound("image '" + name + "' has not been built or imported");
      version = *current;
      while (!version.empty() && (version.back() == '\n' || version.back() == ' '))
        version.pop_back();
      std::lock_guard lock(mu_);
      current_[name] = {stamp, version};
    }
  }
  return Load(name, version);
}

std::vector<ImageVersion> ImageCatalog::List() {
  std::vector<ImageVersion> out;
  std::error_code ec;
  for (const auto& n : fs::directory_iterator(store_dir_, ec)) {
    if (!n.is_directory()) continue;
    for (const auto& v : fs::directory_iterator(n.path(), ec)) {
      if (!v.is_directory()) continue;
      auto img = Load(n.path().filename().string(), v.path().filename().string());
      if (img.ok()) out.push_back(std::move(*img));
    }
  }
  std::sort(out.begin(), out.end(), [](const ImageVersion& a, const ImageVersion& b) {
    return std::tie(a.name, a.created_ms) < std::tie(b.name, b.created_ms);
  });
  return out;
}

Status ImageCatalog::Remove(const ImageVersion& v) {
  {
    std::lock_guard lock(mu_);
    cache_.erase(v.ref());
    current_.erase(v.name);
  }
  // Renamed first, so the version disappears at once and never half-deleted.
  const std::string doomed = v.dir + ".deleting." + RandomHex(4);
  std::error_code ec;
  fs::rename(v.dir, doomed, ec);
  if (ec) return Status::Internal("cannot remove " + v.dir + ": " + ec.message());
  fs::remove_all(doomed, ec);
  auto current = ReadFile(store_dir_ + "/" + v.name + "/current");
  if (current.ok() && current->rfind(v.version, 0) == 0) {
    // The name now stands for the newest version left, if any.
    std::string newest;
    int64_t newest_ms = -1;
    for (const auto& other : List())
      if (other.name == v.name && other.created_ms > newest_ms) {
        newest = other.version;
        newest_ms = other.created_ms;
      }
    if (newest.empty()) {
      fs::remove(store_dir_ + "/" + v.name + "/current", ec);
    } else {
      Status s = WriteFileAtomic(store_dir_ + "/" + v.name + "/current", newest + "\n");
      if (!s.ok()) return s;
    }
  }
  return Status::Ok();
}

Result<ImageVersion> ImageCatalog::Import(const std::string& name, const std::string& kernel_path,
                                          const std::string& initrd_path) {
  Status s = ValidateImageName(name);
  if (!s.ok()) return s;
  auto hash = HashFiles({kernel_path, initrd_path});
  if (!hash.ok()) return hash.status();
  const std::string version = hash->substr(0, 16);
  const std::string dir = store_dir_ + "/" + name + "/" + version;
  if (!fs::exists(dir + "/image.json")) {
    // Build the version in a temporary directory and rename it into place:
    // a reader sees all of it or none of it.
    const std::string tmp = dir + ".tmp." + RandomHex(4);
    std::error_code ec;
    fs::create_directories(tmp, ec);
    if (ec) return Status::Internal("cannot create " + tmp + ": " + ec.message());
    fs::copy_file(kernel_path, tmp + "/vmlinuz", ec);
    if (!ec) fs::copy_file(initrd_path, tmp + "/initrd.img", ec);
    if (ec) {
      fs::remove_all(tmp);
      return Status::Internal("cannot copy into the image store: " + ec.message());
    }
    nlohmann::json meta = {{"name", name},
                           {"version", version},
                           {"sha256", *hash},
                           {"source", {{"kernel", kernel_path}, {"initrd", initrd_path}}},
                           {"created", NowMs()}};
    s = WriteFileAtomic(tmp + "/image.json", meta.dump(2) + "\n");
    if (!s.ok()) {
      fs::remove_all(tmp);
      return s;
    }
    fs::rename(tmp, dir, ec);
    if (ec) {
      fs::remove_all(tmp);
      if (!fs::exists(dir + "/image.json"))
        return Status::Internal("cannot move " + tmp + " to " + dir + ": " + ec.message());
    }
  }
  s = WriteFileAtomic(store_dir_ + "/" + name + "/current", version + "\n");
  if (!s.ok()) return s;
  return Load(name, version);
}

Status ImageCatalog::MakeCurrent(const ImageVersion& v) {
  return WriteFileAtomic(store_dir_ + "/" + v.name + "/current", v.version + "\n");
}

}  // namespace prov
