#include "power/http_call.h"

#include <curl/curl.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <memory>

#include "base/strings.h"

namespace prov {
namespace {

constexpr size_t kMaxAnswer = 1 << 20;

size_t Collect(char* data, size_t size, size_t n, void* out) {
  auto* body = static_cast<std::string*>(out);
  if (body->size() + size * n > kMaxAnswer) return 0;  // ends the transfer: too long
  body->append(data, size * n);
  return size * n;
}

// "sha256//BASE64" of the public key in a PEM certificate, or "".
std::string KeyPinOf(const std::string& pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_mem_buf(pem.data(), int(pem.size())),
                                                &BIO_free);
  if (!bio) return "";
  std::unique_ptr<X509, decltype(&X509_free)> cert(
      PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr), &X509_free);
  if (!cert) return "";
  unsigned char* der = nullptr;
  int len = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(cert.get()), &der);
  if (len <= 0) return "";
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_len = 0;
  bool ok = EVP_Digest(der, static_cast<size_t>(len), digest, &digest_len, EVP_sha256(), nullptr);
  OPENSSL_free(der);
  if (!ok) return "";
  return "sha256//" + Base64Encode(std::string(reinterpret_cast<char*>(digest), digest_len));
}

// The server's own certificate (the first of the chain curl saw), as PEM.
std::string ServerCertificate(CURL* curl) {
  struct curl_certinfo* info = nullptr;
  if (curl_easy_getinfo(curl, CURLINFO_CERTINFO, &info) != CURLE_OK || !info ||
      info->num_of_certs < 1)
    return "";
  for (curl_slist* field = info->certinfo[0]; field; field = field->next) {
    std::string_view f(field->data);
    if (f.substr(0, 5) == "Cert:") return std::string(f.substr(5));
  }
  return "";
}

}  // namespace

Result<PowerHttpAnswer> PowerHttp(const PowerHttpRequest& r) {
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> handle(curl_easy_init(), &curl_easy_cleanup);
  if (!handle) return Status::Internal("curl_easy_init failed");
  CURL* curl = handle.get();
  PowerHttpAnswer answer;
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> headers(nullptr,
                                                                      &curl_slist_free_all);
  for (const std::string& h : r.headers)
    headers.reset(curl_slist_append(headers.release(), h.c_str()));
  curl_easy_setopt(curl, CURLOPT_URL, r.url.c_str());
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, r.method.c_str());
  if (r.method == "HEAD") curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  if (!r.body.empty() || r.method == "POST" || r.method == "PATCH" || r.method == "PUT") {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, r.body.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(r.body.size()));
  }
  if (headers) curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers.get());
  if (!r.user.empty()) {
    curl_easy_setopt(curl, CURLOPT_HTTPAUTH, CURLAUTH_BASIC | CURLAUTH_DIGEST);
    curl_easy_setopt(curl, CURLOPT_USERNAME, r.user.c_str());
    curl_easy_setopt(curl, CURLOPT_PASSWORD, r.password.c_str());
  }
  if (!r.pinned_key.empty()) {
    // The pin is the trust: a BMC's certificate is self-signed.
    curl_easy_setopt(curl, CURLOPT_PINNEDPUBLICKEY, r.pinned_key.c_str());
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
  } else if (r.insecure) {
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
  } else if (!r.ca_file.empty()) {
    curl_easy_setopt(curl, CURLOPT_CAINFO, r.ca_file.c_str());
  }
  if (r.learn_key) curl_easy_setopt(curl, CURLOPT_CERTINFO, 1L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Collect);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &answer.body);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(r.timeout_ms));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  const std::string shown = r.method + " " + (r.shown_url.empty() ? r.url : r.shown_url);
  CURLcode rc = curl_easy_perform(curl);
  if (rc != CURLE_OK) {
    std::string why = curl_easy_strerror(rc);
    if (rc == CURLE_SSL_PINNEDPUBKEYNOTMATCH)
      why = "its public key is not the one pinned (" + r.pinned_key + ")";
    else if (rc == CURLE_WRITE_ERROR)
      why = "its answer is over 1 MiB";
    return Status::Error(Code::kUnavailable, shown + ": " + why);
  }
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &answer.status);
  if (r.learn_key) {
    answer.key = KeyPinOf(ServerCertificate(curl));
    if (answer.key.empty())
      return Status::Error(Code::kUnavailable, shown + ": no certificate to pin (is it https?)");
  }
  return answer;
}

}  // namespace prov
