#include "http/tls.h"

#include <arpa/inet.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <filesystem>
#include <memory>

#include "base/file_util.h"
#include "base/strings.h"

namespace prov {
namespace {

struct OpensslFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(BIO* p) const { BIO_free(p); }
  void operator()(GENERAL_NAMES* p) const { GENERAL_NAMES_free(p); }
};
template <typename T>
using Owned = std::unique_ptr<T, OpensslFree>;

std::string BioText(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(n));
}

Result<std::pair<std::string, std::string>> MakeSelfSigned(const std::vector<std::string>& names) {
  Owned<EVP_PKEY> key(EVP_EC_gen("P-256"));
  Owned<X509> cert(X509_new());
  if (!key || !cert) return Status::Internal("cannot make a TLS key");
  X509_set_version(cert.get(), 2);
  std::string serial = RandomBytes(16);
  serial[0] = static_cast<char>(serial[0] & 0x7f);
  BIGNUM* bn = BN_bin2bn(reinterpret_cast<const unsigned char*>(serial.data()), 16, nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 10L * 365 * 24 * 3600);
  X509_set_pubkey(cert.get(), key.get());
  X509_NAME* name = X509_get_subject_name(cert.get());
  const std::string cn = names.empty() ? "provisiond" : names.front();
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("provisiond"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(cert.get(), name);
  Owned<GENERAL_NAMES> sans(GENERAL_NAMES_new());
  for (const auto& n : names) {
    unsigned char ip[16];
    GENERAL_NAME* gn = nullptr;
    if (inet_pton(AF_INET, n.c_str(), ip) == 1 || inet_pton(AF_INET6, n.c_str(), ip) == 1) {
      int len = n.find(':') == std::string::npos ? 4 : 16;
      ASN1_OCTET_STRING* os = ASN1_OCTET_STRING_new();
      ASN1_OCTET_STRING_set(os, ip, len);
      gn = GENERAL_NAME_new();
      GENERAL_NAME_set0_value(gn, GEN_IPADD, os);
    } else if (!n.empty()) {
      ASN1_IA5STRING* s = ASN1_IA5STRING_new();
      ASN1_STRING_set(s, n.c_str(), static_cast<int>(n.size()));
      gn = GENERAL_NAME_new();
      GENERAL_NAME_set0_value(gn, GEN_DNS, s);
    }
    if (gn) sk_GENERAL_NAME_push(sans.get(), gn);
  }
  if (sk_GENERAL_NAME_num(sans.get()) > 0)
    X509_add1_ext_i2d(cert.get(), NID_subject_alt_name, sans.get(), 0, X509V3_ADD_DEFAULT);
  if (X509_sign(cert.get(), key.get(), EVP_sha256()) <= 0)
    return Status::Internal("cannot sign the TLS certificate");
  Owned<BIO> key_bio(BIO_new(BIO_s_mem())), cert_bio(BIO_new(BIO_s_mem()));
  if (!PEM_write_bio_PrivateKey(key_bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) ||
      !PEM_write_bio_X509(cert_bio.get(), cert.get()))
    return Status::Internal("cannot write the TLS certificate");
  return std::make_pair(BioText(cert_bio.get()), BioText(key_bio.get()));
}

}  // namespace

Result<TlsMaterial> DescribeCertificate(const std::string& cert_pem) {
  Owned<BIO> bio(BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size())));
  Owned<X509> cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (!cert) return Status::Invalid("not a PEM certificate");
  TlsMaterial out;
  out.cert_pem = cert_pem;
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  X509_digest(cert.get(), EVP_sha256(), md, &len);
  out.fingerprint = ColonHex(std::string_view(reinterpret_cast<const char*>(md), len));
  unsigned char* der = nullptr;
  const int der_len = i2d_PUBKEY(X509_get0_pubkey(cert.get()), &der);
  if (der_len <= 0) return Status::Invalid("a certificate without a public key");
  unsigned char key_md[EVP_MAX_MD_SIZE];
  unsigned int key_len = 0;
  EVP_Digest(der, static_cast<size_t>(der_len), key_md, &key_len, EVP_sha256(), nullptr);
  OPENSSL_free(der);
  out.key_pin =
      "sha256//" + Base64Encode(std::string(reinterpret_cast<const char*>(key_md), key_len));
  return out;
}

Result<TlsMaterial> EnsureTlsMaterial(const std::string& cert_path, const std::string& key_path,
                                      bool make, const std::vector<std::string>& names) {
  namespace fs = std::filesystem;
  if (make && !fs::exists(cert_path) && !fs::exists(key_path)) {
    auto made = MakeSelfSigned(names);
    if (!made.ok()) return made.status();
    Status s = MakeDirs(fs::path(key_path).parent_path().string(), 0700);
    if (s.ok()) s = WriteFileAtomic(key_path, made->second, 0600);
    if (s.ok()) s = WriteFileAtomic(cert_path, made->first, 0644);
    if (!s.ok()) return s;
  }
  auto cert = ReadFile(cert_path);
  if (!cert.ok()) return cert.status();
  auto key = ReadFile(key_path);
  if (!key.ok()) return key.status();
  auto out = DescribeCertificate(*cert);
  if (!out.ok()) return Status::Invalid(cert_path + ": " + out.status().message());
  out->key_pem = std::move(*key);
  return out;
}

}  // namespace prov
