#include "base/file_util.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

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

}  // namespace prov
