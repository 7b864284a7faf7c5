// The secrets store: what a profile's playbooks need and no one may read
// back (a MUNGE key, a cluster SSH key pair, passwords). One file per secret
// under <data_dir>/secrets (directory 0700, files 0600 from their creation,
// written then renamed), made on first use as the profile declares
// (SecretDecl) or set by the operator. Values leave this class only into the
// extra vars of a run, whose recorder hides them (RunOptions::secret_values):
// no API answer, event, log line or stored task output carries one.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/strings.h"
#include "profiles/profile.h"

namespace prov {

class SecretStore {
 public:
  // Creates `dir` (0700) when missing.
  static Result<std::unique_ptr<SecretStore>> Open(const std::string& dir);

  // The value `ref` names (NAME, or NAME.pub for the public half of an
  // ssh-ed25519 secret), made per `decl` when the store has none yet. Thread-
  // safe: concurrent first uses make it once.
  Result<std::string> Get(const SecretDecl& decl, const std::string& ref);

  // The operator's own value for `name` (replaces a made one).
  Status Set(const std::string& name, const std::string& value);
  Status Remove(const std::string& name);

  struct Info {
    std::string name;
    int64_t bytes = 0;
    int64_t modified_ms = 0;
    bool has_public = false;  // NAME.pub exists (an ssh-ed25519 pair)
  };
  // Names and sizes only, sorted by name.
  std::vector<Info> List() const;

  const std::string& dir() const { return dir_; }

 private:
  explicit SecretStore(std::string dir) : dir_(std::move(dir)) {}
  Status Make(const SecretDecl& decl);

  const std::string dir_;
  mutable std::mutex mu_;  // one writer at a time, so a first use makes a secret once
};

// A playbook's extra vars with every {"secret": NAME} value replaced from
// the store, and what the run must hide: the names of those vars (a task
// that uses one is no_log) and the values.
struct ResolvedVars {
  nlohmann::json vars;
  std::vector<std::string> secret_vars;
  std::vector<std::string> secret_values;
};
Result<ResolvedVars> ResolveSecretVars(const Profile& profile, const nlohmann::json& vars,
                                       SecretStore* store);

// RedactSecrets (base/strings.h) hides their values in what runs record.

}  // namespace prov
