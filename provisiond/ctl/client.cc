#include "client.h"

#include <curl/curl.h>

#include <sstream>
#include <stdexcept>

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

}  // namespace

std::string UrlEncode(std::string_view text) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
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
  while (!options_.url.empty() && options_.url.back() == '/') options_.url.pop_back();
}

Client::~Client() = default;

Result<nlohmann::json> Client::Call(std::string_view method, const std::string& path,
                                    const nlohmann::json* body, long timeout_s) {
  CURL* curl = curl_.get();
  last_http_status_ = 0;
  // Reset options but keep the connection: node set over 100 nodes reuses it.
  curl_easy_reset(curl);
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
