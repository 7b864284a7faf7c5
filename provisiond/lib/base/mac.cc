#include "base/mac.h"

namespace prov {

Result<Mac> Mac::Parse(std::string_view text) {
  std::string hex;
  for (char c : text) {
    if (c == ':' || c == '-' || c == '.') continue;
    if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return Status::Invalid("MAC address '" + std::string(text) +
                             "' has a character that is not hex: '" + std::string(1, c) + "'");
    hex += c;
  }
  if (hex.size() != 12)
    return Status::Invalid("MAC address '" + std::string(text) +
                           "' must have 12 hex digits, like 52:54:00:12:34:56");
  std::string out;
  for (size_t i = 0; i < 12; i += 2) {
    if (i) out += ':';
    out += hex.substr(i, 2);
  }
  return Mac(std::move(out));
}

Result<std::string> NormalizeMac(std::string_view text) {
  auto mac = Mac::Parse(text);
  if (!mac.ok()) return mac.status();
  return mac->str();
}

std::string HyphenatedMac(std::string mac) {
  for (char& c : mac)
    if (c == ':') c = '-';
  return mac;
}

}  // namespace prov
