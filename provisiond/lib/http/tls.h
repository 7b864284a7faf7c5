// The HTTPS listener's certificate: the operator's, or one made self-signed
// at first start (an ECDSA P-256 key, 0600 from its creation, valid for ten
// years, naming this host and its listen address). Clients that have no CA
// for it pin it on first use by its fingerprint, as ssh pins host keys.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"

namespace prov {

struct TlsMaterial {
  std::string cert_pem;
  std::string key_pem;
  // SHA-256 of the certificate (DER), "AB:CD:..." as browsers and openssl
  // x509 -fingerprint -sha256 show it.
  std::string fingerprint;
  // SHA-256 of its public key (DER), "sha256//BASE64" as libcurl pins a
  // server's key (CURLOPT_PINNEDPUBLICKEY): what another control node checks.
  std::string key_pin;
};

// Loads `cert_path` and `key_path`; when neither exists and `make` is set,
// makes a self-signed pair first, naming `names` (DNS names or IP addresses)
// as subject alternative names.
Result<TlsMaterial> EnsureTlsMaterial(const std::string& cert_path, const std::string& key_path,
                                      bool make, const std::vector<std::string>& names);

// The fingerprint and key pin of a PEM certificate.
Result<TlsMaterial> DescribeCertificate(const std::string& cert_pem);

}  // namespace prov
