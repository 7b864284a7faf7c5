#include "base/file_util.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace prov {

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot read " + path + ": " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Status::Internal("error reading " + path);
  return ss.str();
}

Status WriteAll(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::Internal("cannot write " + path + ": " + std::strerror(errno));
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

Status WriteFileAtomic(const std::string& path, const std::string& content, int mode) {
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return Status::Internal("cannot create " + tmp + ": " + std::strerror(errno));
  if (Status s = WriteAll(fd, content, tmp); !s.ok()) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return s;
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmp.c_str());
    return Status::Internal("cannot flush " + tmp + ": " + std::strerror(errno));
  }
  ::chmod(tmp.c_str(), mode);  // open's mode is masked by umask
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Status s =
        Status::Internal("cannot rename " + tmp + " to " + path + ": " + std::strerror(errno));
    ::unlink(tmp.c_str());
    return s;
  }
  return Status::Ok();
}

Status MakeDirs(const std::string& path, int mode) {
  if (path.empty()) return Status::Invalid("cannot create a directory with an empty name");
  std::string prefix;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    prefix = path.substr(0, pos);
    if (prefix.empty() || prefix == "/") continue;
    if (mkdir(prefix.c_str(), static_cast<mode_t>(mode)) == 0) {
      // mkdir(2) masks the mode with the umask; the caller asked for exactly it.
      if (chmod(prefix.c_str(), static_cast<mode_t>(mode)) != 0)
        return Status::Internal("cannot set the mode of " + prefix + ": " + strerror(errno));
      continue;
    }
    if (errno != EEXIST)
      return Status::Internal("cannot create directory " + prefix + ": " + strerror(errno));
    struct stat st {};
    if (stat(prefix.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      return Status::Internal("cannot create directory " + path + ": " + prefix +
                              " exists and is not a directory");
  }
  return Status::Ok();
}

std::string HexEncode(std::string_view bytes) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += hex[c >> 4];
    out += hex[c & 15];
  }
  return out;
}

std::string Sha256Hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr);
  return HexEncode(std::string_view(reinterpret_cast<const char*>(digest), len));
}

Sha256::Sha256() : ctx_(EVP_MD_CTX_new(), EVP_MD_CTX_free) {
  if (!ctx_ || EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("cannot start a SHA-256 digest");
}

Sha256::~Sha256() = default;

void Sha256::Update(std::string_view data) {
  EVP_DigestUpdate(ctx_.get(), data.data(), data.size());
}

std::string Sha256::HexDigest() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx_.get(), digest, &len);
  return HexEncode(std::string_view(reinterpret_cast<const char*>(digest), len));
}

Result<std::string> Sha256File(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot read " + path + ": " + strerror(errno));
  Sha256 hash;
  std::string buf(1 << 16, '\0');
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    hash.Update(std::string_view(buf.data(), static_cast<size_t>(in.gcount())));
  }
  if (in.bad()) return Status::Internal("cannot read " + path);
  return hash.HexDigest();
}

std::string ColonHex(std::string_view bytes) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : bytes) {
    if (!out.empty()) out += ':';
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

std::string RandomHex(size_t bytes) {
  return HexEncode(RandomBytes(bytes));
}

std::string RandomBytes(size_t bytes) {
  std::string raw(bytes, '\0');
  size_t got = 0;
  while (got < bytes) {
    ssize_t n = getrandom(raw.data() + got, bytes - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("getrandom failed");
    }
    got += static_cast<size_t>(n);
  }
  return raw;
}

namespace {

std::string NormalPath(const std::string& path) {
  std::string out = std::filesystem::path(path).lexically_normal().string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

}  // namespace

FileSet FileSet::InMemory(const std::map<std::string, std::string>& files) {
  FileSet set;
  set.in_memory_ = true;
  for (const auto& [path, text] : files) set.AddFile(path, text);
  return set;
}

void FileSet::AddFile(const std::string& path, std::string text) {
  const std::string key = NormalPath(path);
  Entry& e = entries_[key];
  e = Entry{};
  e.kind = Kind::kFile;
  e.digest = Sha256Hex(text);
  e.text = std::move(text);
  for (auto p = std::filesystem::path(key).parent_path(); !p.empty() && p != p.parent_path();
       p = p.parent_path()) {
    Entry& dir = entries_[p.string()];
    dir.kind = Kind::kDirectory;
    if (in_memory_) {
      if (!dir.tree) dir.tree.emplace();
      dir.tree->insert(std::lower_bound(dir.tree->begin(), dir.tree->end(), key), key);
    }
  }
}

FileSet::Entry& FileSet::Ask(const std::string& path) {
  Entry& e = entries_[NormalPath(path)];
  if (e.kind == Kind::kUnknown) {
    if (in_memory_)
      e.kind = Kind::kAbsent;
    else
      wanted_ = true;
  }
  return e;
}

bool FileSet::IsFile(const std::string& path) {
  return Ask(path).kind == Kind::kFile;
}

bool FileSet::IsDirectory(const std::string& path) {
  return Ask(path).kind == Kind::kDirectory;
}

bool FileSet::Exists(const std::string& path) {
  Kind k = Ask(path).kind;
  return k == Kind::kFile || k == Kind::kDirectory;
}

const std::string* FileSet::Text(const std::string& path, std::string* error) {
  Entry& e = Ask(path);
  if (e.text) return &*e.text;
  if (!e.want_text && !in_memory_) {
    e.want_text = true;
    wanted_ = true;
  }
  if (error)
    *error = !e.error.empty()             ? e.error
             : e.kind == Kind::kDirectory ? "cannot read " + path + ": it is a folder"
                                          : "cannot read " + path + ": No such file or directory";
  return nullptr;
}

const std::string* FileSet::Digest(const std::string& path, std::string* error) {
  Entry& e = Ask(path);
  if (e.digest) return &*e.digest;
  if (!e.want_digest && !in_memory_) {
    e.want_digest = true;
    wanted_ = true;
  }
  if (error) *error = !e.error.empty() ? e.error : "cannot read " + path;
  return nullptr;
}

const std::vector<std::string>& FileSet::Tree(const std::string& dir) {
  static const std::vector<std::string> kNone;
  Entry& e = Ask(dir);
  if (e.tree) return *e.tree;
  if (!e.want_tree && !in_memory_) {
    e.want_tree = true;
    wanted_ = true;
  }
  return kNone;
}

void FileSet::Read(const std::string& path, Entry& e) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (e.kind == Kind::kUnknown) {
    auto st = fs::status(path, ec);
    e.kind = fs::is_regular_file(st) ? Kind::kFile
             : fs::is_directory(st)  ? Kind::kDirectory
                                     : Kind::kAbsent;
  }
  if (e.want_text && !e.text && e.error.empty() && e.kind == Kind::kFile) {
    auto size = fs::file_size(path, ec);
    if (!ec && size > kMaxText) {
      e.error = path + " is larger than " + std::to_string(kMaxText >> 20) + " MiB";
    } else if (auto text = ReadFile(path); text.ok()) {
      e.digest = Sha256Hex(*text);
      e.text = std::move(*text);
    } else {
      e.error = text.status().message();
    }
  }
  if (e.want_digest && !e.digest && e.error.empty() && e.kind == Kind::kFile) {
    if (auto sha = Sha256File(path); sha.ok())
      e.digest = std::move(*sha);
    else
      e.error = sha.status().message();
  }
  if (e.want_tree && !e.tree) {
    e.tree.emplace();
    if (e.kind == Kind::kDirectory) {
      for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::end(it);
           it.increment(ec))
        if (it->is_regular_file(ec)) e.tree->push_back(it->path().string());
      std::sort(e.tree->begin(), e.tree->end());
    }
  }
}

bool FileSet::ReadWanted() {
  if (!wanted_) return false;
  wanted_ = false;
  for (auto& [path, e] : entries_)
    if (e.kind == Kind::kUnknown || (e.want_text && !e.text) || (e.want_digest && !e.digest) ||
        (e.want_tree && !e.tree))
      Read(path, e);
  ++rounds_;
  return true;
}

}  // namespace prov
