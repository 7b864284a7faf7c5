// One HTTP request of a power driver (a smart plug's API, a Redfish BMC),
// through libcurl: a bounded time and answer, HTTP authentication as the
// server asks for it (basic or digest), and TLS checked by the system's CAs,
// a CA file, or a public key pinned on first use.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"

namespace prov {

struct PowerHttpRequest {
  std::string method = "GET";
  std::string url{};
  std::string shown_url{};             // the URL as messages show it (a secret hidden); empty: url
  std::vector<std::string> headers{};  // "Name: value"
  std::string body{};
  std::string user{};  // HTTP authentication when not empty
  std::string password{};
  // TLS (https URLs): `pinned_key` ("sha256//BASE64" of the server's public
  // key) accepts that key only, whoever signed it; else `ca_file` verifies
  // the server, else the system's CAs do. `insecure` checks nothing: only for
  // learning a key to pin (`learn_key`), with no credentials sent.
  std::string pinned_key{};
  std::string ca_file{};
  bool insecure = false;
  bool learn_key = false;
  int timeout_ms = 30000;
};

struct PowerHttpAnswer {
  long status = 0;
  std::string body{};  // at most 1 MiB
  std::string key{};   // with learn_key: "sha256//BASE64" of the server's public key
};

// Sends `request`; an error only when no answer came (any HTTP status is an
// answer). Messages name the method and shown_url.
Result<PowerHttpAnswer> PowerHttp(const PowerHttpRequest& request);

}  // namespace prov
