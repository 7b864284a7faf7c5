// provisionctl's only way to the inventory: provisiond's REST API over HTTP
// (libcurl). The CLI never opens the database. Every request goes through
// Client::Call, which turns transport failures and API errors ({"error": ...})
// into a Status a verb can print as it is.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/strings.h"

namespace prov::ctl {

inline constexpr const char* kDefaultUrl = "http://127.0.0.1:8080";

// UrlEncode (base/strings.h) encodes a path segment or a query value.

// "?a=1&b=x%20y" from the pairs whose value is not empty; "" when none is.
std::string QueryString(std::initializer_list<std::pair<const char*, std::string>> params);

// The token in a tokens file's text: the first word of the first line that is
// not blank or a '#' comment (provisiond's tokens file has "<token> [name]").
// `file` names the file in the error.
Result<std::string> ParseTokenFile(const std::string& text, const std::string& file);

// The default known servers file: $PROVISIONCTL_KNOWN_SERVERS, else
// $HOME/.config/provisionctl/known_servers.
std::string DefaultKnownServersFile();

// libcurl's process-wide state; one instance lives in main() while requests
// are made.
class CurlGlobal {
 public:
  CurlGlobal();
  ~CurlGlobal();
  CurlGlobal(const CurlGlobal&) = delete;
  CurlGlobal& operator=(const CurlGlobal&) = delete;
};

// https:// URLs without a CA file are trusted as ssh trusts hosts: the
// certificate's SHA-256 fingerprint is pinned on first use, per URL, in the
// known servers file, and a different certificate is refused before the
// request (and its token) is sent.
struct ClientOptions {
  // Base URL, without /api/v1; or several, comma-separated: the control
  // nodes sharing one inventory (docs/ha.md), tried in turn.
  std::string url = kDefaultUrl;
  std::string token;                // sent as a bearer token; may be empty
  std::string ca_file;              // https: verify against this CA instead of pinning
  std::string fingerprint;          // https: the certificate's SHA-256 ("AB:CD:..."), pinned
  std::string known_servers;        // https: where first-use pins are kept
  std::ostream* notices = nullptr;  // where a first-use pin is announced
  long connect_timeout_s = 5;
  long timeout_s = 60;  // per request, unless a call asks for more
};

// One connection to provisiond, reused across requests (keep-alive). Not
// thread-safe: one Client per thread.
class Client {
 public:
  explicit Client(ClientOptions options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Sends `method` to base URL + `path` (already encoded, starting with '/')
  // with `body` as JSON when given, and returns the reply's parsed JSON.
  // Failures come back as a Status whose message a user can act on:
  //  - kUnavailable: provisiond could not be reached (names the URL), or the
  //    request was interrupted; last_http_status() is then 0;
  //  - the code matching the HTTP status, with the API's "error" text (a 503
  //    answer is kUnavailable too: a peer of provisiond, such as a BMC,
  //    failed);
  //  - kInternal: a reply that is not JSON.
  // `timeout_s` 0 uses the options' timeout.
  // With several URLs, a request that could not be sent at all (refused,
  // unreachable: a standby control node listens on nothing) goes to the next
  // one, and the client stays with the one that answered; a request that was
  // sent is never sent again, whatever came back.
  Result<nlohmann::json> Call(std::string_view method, const std::string& path,
                              const nlohmann::json* body = nullptr, long timeout_s = 0);

  Result<nlohmann::json> Get(const std::string& path, long timeout_s = 0) {
    return Call("GET", path, nullptr, timeout_s);
  }
  Result<nlohmann::json> Post(const std::string& path, const nlohmann::json* body = nullptr) {
    return Call("POST", path, body);
  }
  Result<nlohmann::json> Patch(const std::string& path, const nlohmann::json& body) {
    return Call("PATCH", path, &body);
  }
  Result<nlohmann::json> Delete(const std::string& path) { return Call("DELETE", path); }

  // While `*flag` is true, a request in flight is abandoned within about a
  // second and Call returns kUnavailable; the caller checks the flag to tell
  // an interruption from a failure. `flag` must outlive the client.
  void set_cancel_flag(const std::atomic<bool>* flag) { cancel_ = flag; }

  // The URL the last request went to (the first of a list until then).
  const std::string& url() const { return options_.url; }

  // The HTTP status of the last Call's reply, or 0 when no reply came
  // (provisiond not reached, or interrupted). Tells "provisiond is down" from
  // "provisiond answered 503 because something it drives failed", which
  // share Code::kUnavailable.
  long last_http_status() const { return last_http_status_; }

 private:
  struct CurlDeleter {
    void operator()(void* curl) const;
  };
  // For an https URL: the fingerprint to require (pinned now if first use).
  Status PrepareTls();
  // One request to options_.url; sets nothing_sent_.
  Result<nlohmann::json> CallOne(std::string_view method, const std::string& path,
                                 const nlohmann::json* body, long timeout_s);

  ClientOptions options_;
  std::unique_ptr<void, CurlDeleter> curl_;  // CURL*
  bool tls_ready_ = false;
  std::string pinned_;  // the fingerprint the server must show; "" with a CA file
  std::string seen_;    // the fingerprint the last handshake showed
  const std::atomic<bool>* cancel_ = nullptr;
  long last_http_status_ = 0;
  std::vector<std::string> urls_;  // the list; options_.url is the one in use
  size_t current_ = 0;
  bool nothing_sent_ = false;  // the last request failed before a byte went out
};

}  // namespace prov::ctl
