#include "configure/secrets.h"

#include <algorithm>
#include <filesystem>

#include "base/file_util.h"
#include "base/strings.h"
#include "configure/ssh_keys.h"

namespace fs = std::filesystem;

namespace prov {
namespace {

// 24 letters and digits, each uniform (bytes >= 248 are drawn again).
std::string Password() {
  static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::string out;
  while (out.size() < 24)
    for (unsigned char c : RandomBytes(32))
      if (c < 248 && out.size() < 24) out += kAlphabet[c % 62];
  return out;
}

}  // namespace

Result<std::unique_ptr<SecretStore>> SecretStore::Open(const std::string& dir) {
  Status s = MakeDirs(dir, 0700);
  if (!s.ok()) return s;
  return std::unique_ptr<SecretStore>(new SecretStore(dir));
}

Status SecretStore::Make(const SecretDecl& decl) {
  const std::string path = dir_ + "/" + decl.name;
  if (decl.generate == "none")
    return Status::NotFound("secret '" + decl.name +
                            "' is not set (the profile leaves it to the operator: provisionctl "
                            "secret set " +
                            decl.name + " --from-file FILE)");
  if (decl.generate == "ssh-ed25519") {
    auto pair = NewEd25519KeyPair(decl.name + "@provisiond");
    if (!pair.ok()) return pair.status();
    // The public half first: the private file's rename is what makes the
    // pair exist, so a crash between them leaves nothing half made.
    Status s = WriteFileAtomic(path + ".pub", pair->public_key + "\n", 0600);
    return s.ok() ? WriteFileAtomic(path, pair->private_key, 0600) : s;
  }
  std::string value = decl.generate == "password"
                          ? Password()
                          : Base64Encode(RandomBytes(static_cast<size_t>(decl.bytes)));
  return WriteFileAtomic(path, value + "\n", 0600);
}

Result<std::string> SecretStore::Get(const SecretDecl& decl, const std::string& ref) {
  Status valid = ValidateSecretName(decl.name);
  if (!valid.ok()) return valid;
  const bool pub = ref == decl.name + ".pub";
  if (!pub && ref != decl.name)
    return Status::Invalid("'" + ref + "' is not secret '" + decl.name + "'");
  std::lock_guard lock(mu_);
  const std::string path = dir_ + "/" + decl.name;
  if (!fs::exists(path)) {
    Status s = Make(decl);
    if (!s.ok()) return s;
  }
  auto text = ReadFile(pub ? path + ".pub" : path);
  if (!text.ok()) return text.status();
  // One trailing newline is the file's, not the value's (a PEM keeps its own).
  if (!pub && decl.generate == "ssh-ed25519") return *text;
  if (!text->empty() && text->back() == '\n') text->pop_back();
  return *text;
}

Status SecretStore::Set(const std::string& name, const std::string& value) {
  Status valid = ValidateSecretName(name);
  if (!valid.ok()) return valid;
  if (value.empty()) return Status::Invalid("secret '" + name + "': the value is empty");
  std::lock_guard lock(mu_);
  return WriteFileAtomic(dir_ + "/" + name, value.back() == '\n' ? value : value + "\n", 0600);
}

Status SecretStore::Remove(const std::string& name) {
  Status valid = ValidateSecretName(name);
  if (!valid.ok()) return valid;
  std::lock_guard lock(mu_);
  std::error_code ec;
  bool removed = fs::remove(dir_ + "/" + name, ec);
  fs::remove(dir_ + "/" + name + ".pub", ec);
  return removed ? Status::Ok() : Status::NotFound("no secret '" + name + "'");
}

std::vector<SecretStore::Info> SecretStore::List() const {
  std::lock_guard lock(mu_);
  std::vector<Info> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    std::string name = e.path().filename().string();
    if (!e.is_regular_file() || name.ends_with(".pub") || !ValidateSecretName(name).ok()) continue;
    Info info;
    info.name = name;
    info.bytes = static_cast<int64_t>(e.file_size(ec));
    auto mtime = e.last_write_time(ec);
    info.modified_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::file_clock::to_sys(mtime).time_since_epoch())
                           .count();
    info.has_public = fs::exists(dir_ + "/" + name + ".pub", ec);
    out.push_back(std::move(info));
  }
  std::sort(out.begin(), out.end(), [](const Info& a, const Info& b) { return a.name < b.name; });
  return out;
}

Result<ResolvedVars> ResolveSecretVars(const Profile& profile, const nlohmann::json& vars,
                                       SecretStore* store) {
  ResolvedVars out{vars, {}, {}};
  if (!vars.is_object()) return out;
  for (auto& [key, value] : out.vars.items()) {
    auto ref = SecretRefOf(value);
    if (!ref) continue;
    const SecretDecl* decl = FindSecret(profile, *ref);
    if (!decl)
      return Status::Invalid("var '" + key + "' names secret '" + *ref + "', which profile " +
                             profile.version + " does not declare");
    if (!store)
      return Status::Error(Code::kUnavailable, "no secrets store to fill var '" + key + "' from");
    auto secret = store->Get(*decl, *ref);
    if (!secret.ok())
      return Status::Error(secret.status().code(),
                           "var '" + key + "': " + secret.status().message());
    out.secret_vars.push_back(key);
    if (!ref->ends_with(".pub")) out.secret_values.push_back(*secret);
    value = std::move(*secret);
  }
  return out;
}

}  // namespace prov
