#include "configure/ssh_keys.h"

#include <libssh/libssh.h>
#include <unistd.h>

#include <filesystem>
#include <memory>

#include "base/file_util.h"
#include "base/netinfo.h"
#include "configure/libssh_ptr.h"

namespace prov {
namespace {

Result<std::string> PublicLine(ssh_key key, const std::string& comment) {
  char* b64 = nullptr;
  if (ssh_pki_export_pubkey_base64(key, &b64) != SSH_OK)
    return Status::Internal("cannot export the public key");
  std::string line = std::string("ssh-ed25519 ") + b64;
  ssh_string_free_char(b64);
  return line + " " + comment;
}

Result<std::string> PrivatePem(ssh_key key) {
  char* pem = nullptr;
  if (ssh_pki_export_privkey_base64(key, nullptr, nullptr, nullptr, &pem) != SSH_OK)
    return Status::Internal("cannot export an ed25519 private key");
  std::string text(pem);
  ssh_string_free_char(pem);
  if (text.empty() || text.back() != '\n') text += '\n';
  return text;
}

std::string ControlComment() {
  const std::string host = HostName();
  return "provisiond@" + (host.empty() ? std::string("control") : host);
}
}  // namespace

Result<KeyPair> NewEd25519KeyPair(const std::string& comment) {
  ssh_key raw = nullptr;
  if (ssh_pki_generate(SSH_KEYTYPE_ED25519, 0, &raw) != SSH_OK)
    return Status::Internal("cannot generate an ed25519 key");
  KeyPtr key(raw);
  auto pem = PrivatePem(key.get());
  if (!pem.ok()) return pem.status();
  auto pub = PublicLine(key.get(), comment);
  if (!pub.ok()) return pub.status();
  return KeyPair{std::move(*pem), std::move(*pub)};
}

Result<ControlKey> EnsureControlKey(const std::string& dir) {
  ControlKey out;
  out.private_key_path = dir + "/id_ed25519";
  Status s = MakeDirs(dir, 0700);
  if (!s.ok()) return s;
  ssh_key raw = nullptr;
  if (std::filesystem::exists(out.private_key_path)) {
    if (ssh_pki_import_privkey_file(out.private_key_path.c_str(), nullptr, nullptr, nullptr,
                                    &raw) != SSH_OK)
      return Status::Internal("cannot read the control key " + out.private_key_path);
  } else {
    if (ssh_pki_generate(SSH_KEYTYPE_ED25519, 0, &raw) != SSH_OK)
      return Status::Internal("cannot generate an ed25519 key");
    // Written 0600 from its creation (never widened, never chmodded after).
    auto text = PrivatePem(raw);
    s = text.ok() ? WriteFileAtomic(out.private_key_path, *text, 0600) : text.status();
    if (!s.ok()) {
      ssh_key_free(raw);
      return s;
    }
  }
  KeyPtr key(raw);
  auto pub = PublicLine(key.get(), ControlComment());
  if (!pub.ok()) return pub.status();
  out.public_key = *pub;
  s = WriteFileAtomic(out.private_key_path + ".pub", out.public_key + "\n", 0644);
  if (!s.ok()) return s;
  return out;
}

}  // namespace prov
