#include "client.h"

#include <curl/curl.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cstdlib>
#include <filesystem>
#include <ostream>
#include <sstream>
#include <stdexcept>

#include "base/file_util.h"
#include "base/strings.h"

namespace prov::ctl {
namespace {

// The Status code for an HTTP error status, the inverse of the daemon's
// HttpStatusFor.
Code CodeForHttp(long status) {
  switch (status) {
    case 400:
      return Code::kInvalid;
    case 401:
      return Code::kUnauthorized;
    case 403:
      return Code::kForbidden;
    case 404:
      return Code::kNotFound;
    case 409:
      return Code::kConflict;
    case 502:
    case 503:
    case 504:
      return Code::kUnavailable;
    default:
      return status >= 500 ? Code::kInternal : Code::kInvalid;
  }
}

size_t AppendBody(char* data, size_t size, size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

// Called by libcurl about once a second while a request waits; a non-zero
// return abandons it.
int CheckCancel(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  const auto* flag = static_cast<const std::atomic<bool>*>(user);
  return flag && flag->load() ? 1 : 0;
}

struct SlistDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
using Headers = std::unique_ptr<curl_slist, SlistDeleter>;

void AddHeader(Headers& headers, const std::string& line) {
  curl_slist* grown = curl_slist_append(headers.get(), line.c_str());
  if (!grown) throw std::bad_alloc();
  if (!headers) headers.reset(grown);  // appending keeps the head of a non-empty list
}

std::string FirstLine(const std::string& text, size_t max) {
  std::string line = text.substr(0, text.find('\n'));
  if (line.size() > max) line = line.substr(0, max) + "...";
  return line;
}

// The leaf certificate's SHA-256, "AB:CD:...", as provisiond logs it.
std::string Fingerprint(X509* cert) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!cert || X509_digest(cert, EVP_sha256(), md, &len) != 1) return "";
  return ColonHex(std::string_view(reinterpret_cast<const char*>(md), len));
}

// What the handshake checks: the leaf's fingerprint against `expected` (any,
// when empty: a first-use probe); `seen` records it either way.
struct PinCheck {
  const std::string* expected;
  std::string* seen;
};

int VerifyPin(X509_STORE_CTX* store, void* arg) {
  const auto* check = static_cast<const PinCheck*>(arg);
  *check->seen = Fingerprint(X509_STORE_CTX_get0_cert(store));
  return !check->seen->empty() && (check->expected->empty() || *check->seen == *check->expected);
}

CURLcode InstallPinCheck(CURL*, void* ssl_ctx, void* arg) {
  SSL_CTX_set_cert_verify_callback(static_cast<SSL_CTX*>(ssl_ctx), &VerifyPin, arg);
  return CURLE_OK;
}

// The fingerprint pinned for `url` in `file`, or "".
std::string PinnedFor(const std::string& file, const std::string& url) {
  auto text = ReadFile(file);
  if (!text.ok()) return "";
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string u, fp;
    if (words >> u >> fp && u == url) return fp;
  }
  return "";
}

std::string NormalizeFingerprint(std::string fp) {
  if (fp.rfind("sha256:", 0) == 0 || fp.rfind("SHA256:", 0) == 0) fp = fp.substr(7);
  for (char& c : fp) c = static_cast<char>(toupper(static_cast<unsigned char>(c)));
  return fp;
}

}  // namespace

std::string DefaultKnownServersFile() {
  if (const char* f = getenv("PROVISIONCTL_KNOWN_SERVERS"); f && *f) return f;
  const char* home = getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.config/provisionctl/known_servers";
}

std::string QueryString(std::initializer_list<std::pair<const char*, std::string>> params) {
  std::string out;
  for (const auto& [name, value] : params) {
    if (value.empty()) continue;
    out += out.empty() ? '?' : '&';
    out += std::string(name) + "=" + UrlEncode(value);
  }
  return out;
}

Result<std::string> ParseTokenFile(const std::string& text, const std::string& file) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string token;
    if (words >> token) return token;
  }
  return Status::Invalid(file +
                         ": no token in it (expected a line '<token> [name]'; provisiond "
                         "creates <data_dir>/tokens with one on first start)");
}

CurlGlobal::CurlGlobal() {
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
    throw std::runtime_error("curl_global_init failed");
}
CurlGlobal::~CurlGlobal() {
  curl_global_cleanup();
}

void Client::CurlDeleter::operator()(void* curl) const {
  curl_easy_cleanup(curl);
}

Client::Client(ClientOptions options) : options_(std::move(options)), curl_(curl_easy_init()) {
  if (!curl_) throw std::runtime_error("curl_easy_init failed");
  std::string list = options_.url;
  for (size_t start = 0; start <= list.size();) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    std::string one = Trim(list.substr(start, comma - start));
    while (!one.empty() && one.back() == '/') one.pop_back();
    if (!one.empty()) urls_.push_back(one);
    start = comma + 1;
  }
  if (urls_.empty()) urls_.push_back("");
  options_.url = urls_[0];
}

Client::~Client() = default;

Status Client::PrepareTls() {
  if (tls_ready_) return Status::Ok();
  if (!options_.ca_file.empty()) {
    tls_ready_ = true;
    return Status::Ok();
  }
  if (!options_.fingerprint.empty()) {
    pinned_ = NormalizeFingerprint(options_.fingerprint);
    tls_ready_ = true;
    return Status::Ok();
  }
  const std::string file =
      options_.known_servers.empty() ? DefaultKnownServersFile() : options_.known_servers;
  pinned_ = PinnedFor(file, options_.url);
  if (pinned_.empty()) {
    // First use: a handshake alone (no request, no token) learns the
    // certificate, which is then pinned for this URL.
    CURL* curl = curl_.get();
    curl_easy_reset(curl);
    PinCheck probe{&pinned_, &seen_};
    char error[CURL_ERROR_SIZE] = {0};
    curl_easy_setopt(curl, CURLOPT_URL, options_.url.c_str());
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
    curl_easy_setopt(curl, CURLOPT_CONNECT_ONLY, 1L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, options_.connect_timeout_s);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
    curl_easy_setopt(curl, CURLOPT_SSL_CTX_FUNCTION, &InstallPinCheck);
    curl_easy_setopt(curl, CURLOPT_SSL_CTX_DATA, &probe);
    CURLcode rc = curl_easy_perform(curl);
    curl_easy_reset(curl);
    // The probe's connection is not reused: the real request shakes hands anew.
    curl_.reset(curl_easy_init());
    if (!curl_) throw std::runtime_error("curl_easy_init failed");
    if (rc != CURLE_OK || seen_.empty())
      return Status::Error(Code::kUnavailable, "cannot reach provisiond at " + options_.url + ": " +
                                                   (error[0] ? error : curl_easy_strerror(rc)));
    pinned_ = seen_;
    std::string text;
    if (auto old = ReadFile(file); old.ok()) text = *old;
    if (!text.empty() && text.back() != '\n') text += '\n';
    text += options_.url + " " + pinned_ + "\n";
    Status s = MakeDirs(std::filesystem::path(file).parent_path().string(), 0700);
    if (s.ok()) s = WriteFileAtomic(file, text, 0600);
    if (!s.ok()) return s;
    if (options_.notices)
      *options_.notices << "provisionctl: first connection to " << options_.url
                        << ": certificate SHA-256 " << pinned_ << " pinned in " << file
                        << " (compare it with provisiond's log or `provisionctl status`)\n";
  }
  tls_ready_ = true;
  return Status::Ok();
}

Result<nlohmann::json> Client::Call(std::string_view method, const std::string& path,
                                    const nlohmann::json* body, long timeout_s) {
  for (size_t tried = 1;; ++tried) {
    auto r = CallOne(method, path, body, timeout_s);
    if (r.ok() || !nothing_sent_ || tried >= urls_.size()) return r;
    // Not sent: the next control node of the list (its own pin, if https).
    current_ = (current_ + 1) % urls_.size();
    options_.url = urls_[current_];
    tls_ready_ = false;
    pinned_.clear();
    seen_.clear();
  }
}

Result<nlohmann::json> Client::CallOne(std::string_view method, const std::string& path,
                                       const nlohmann::json* body, long timeout_s) {
  last_http_status_ = 0;
  nothing_sent_ = false;
  const bool https = options_.url.rfind("https://", 0) == 0;
  if (https) {
    Status s = PrepareTls();
    // A handshake that failed sent nothing (a pin mismatch is not that).
    nothing_sent_ = !s.ok() && s.code() == Code::kUnavailable;
    if (!s.ok()) return s;
  }
  CURL* curl = curl_.get();
  // Reset options but keep the connection: node set over 100 nodes reuses it.
  curl_easy_reset(curl);
  PinCheck pin{&pinned_, &seen_};
  if (https && options_.ca_file.empty()) {
    // The pin is the server's identity: no CA, no host name to match.
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
    curl_easy_setopt(curl, CURLOPT_SSL_CTX_FUNCTION, &InstallPinCheck);
    curl_easy_setopt(curl, CURLOPT_SSL_CTX_DATA, &pin);
  } else if (https) {
    curl_easy_setopt(curl, CURLOPT_CAINFO, options_.ca_file.c_str());
  }
  const std::string url = options_.url + path;
  const std::string method_str(method);
  std::string request_body = body ? body->dump() : "";
  std::string reply;
  char error[CURL_ERROR_SIZE] = {0};

  Headers headers;
  AddHeader(headers, "Accept: application/json");
  if (body) AddHeader(headers, "Content-Type: application/json");
  // Every API route but the node-facing ones needs a token, reads included.
  if (!options_.token.empty()) AddHeader(headers, "Authorization: Bearer " + options_.token);

  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, options_.connect_timeout_s);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, timeout_s > 0 ? timeout_s : options_.timeout_s);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &AppendBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &reply);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "provisionctl/" PROVISION_VERSION);
  if (cancel_) {
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, &CheckCancel);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, cancel_);
  }
  if (method == "POST") {
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request_body.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(request_body.size()));
  } else if (method != "GET") {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method_str.c_str());
    if (body) {
      curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request_body.c_str());
      curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(request_body.size()));
    }
  }

  CURLcode rc = curl_easy_perform(curl);
  if (rc != CURLE_OK) {
    if (rc == CURLE_ABORTED_BY_CALLBACK) return Status::Error(Code::kUnavailable, "interrupted");
    long sent = 0;
    curl_easy_getinfo(curl, CURLINFO_REQUEST_SIZE, &sent);
    nothing_sent_ = sent == 0;
    if (https && options_.ca_file.empty() && !seen_.empty() && seen_ != pinned_)
      return Status::Error(
          Code::kForbidden,
          "the certificate of " + options_.url + " is not the one pinned: pinned " + pinned_ +
              ", offered " + seen_ +
              (options_.fingerprint.empty()
                   ? " (if provisiond's certificate was replaced, remove its line from " +
                         (options_.known_servers.empty() ? DefaultKnownServersFile()
                                                         : options_.known_servers) +
                         ")"
                   : " (--fingerprint / PROVISIOND_FINGERPRINT)") +
              "; nothing was sent");
    std::string why = error[0] ? error : curl_easy_strerror(rc);
    return Status::Error(Code::kUnavailable, "cannot reach provisiond at " + options_.url + ": " +
                                                 why + " (is it running? set PROVISIOND_URL)");
  }
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  last_http_status_ = status;

  nlohmann::json parsed = nlohmann::json::parse(reply, nullptr, /*allow_exceptions=*/false);
  if (status >= 400) {
    if (parsed.is_object() && parsed.contains("error") && parsed["error"].is_string())
      return Status::Error(CodeForHttp(status), parsed["error"].get<std::string>());
    return Status::Error(
        CodeForHttp(status),
        method_str + " " + path + ": HTTP " + std::to_string(status) + " " + FirstLine(reply, 200));
  }
  if (parsed.is_discarded())
    return Status::Internal(method_str + " " + url + " answered HTTP " + std::to_string(status) +
                            " with a reply that is not JSON: " + FirstLine(reply, 200) +
                            " (is PROVISIOND_URL provisiond's address?)");
  return parsed;
}

}  // namespace prov::ctl
