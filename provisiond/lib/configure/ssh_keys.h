// The control node's own SSH key (ed25519), made at first start. Its public
// half goes into every node's overlay; provisiond logs in with it.
#pragma once

#include <string>

#include "base/result.h"

namespace prov {

struct ControlKey {
  std::string private_key_path;
  std::string public_key;  // "ssh-ed25519 AAAA... provisiond@<host>"
};

// Loads <dir>/id_ed25519 (and .pub), creating both (mode 0600/0644) when
// missing.
Result<ControlKey> EnsureControlKey(const std::string& dir);

struct KeyPair {
  std::string private_key;  // OpenSSH PEM, newline-terminated
  std::string public_key;   // "ssh-ed25519 AAAA... <comment>"
};
// A new ed25519 key pair, in memory only.
Result<KeyPair> NewEd25519KeyPair(const std::string& comment);

}  // namespace prov
