// MAC addresses: parsed once where one comes in (the API, dnsmasq's log, a
// boot request, a phone-home, a profile), in any spelling a person or a
// program writes, into the one form that is stored and compared.
#pragma once

#include <compare>
#include <string>
#include <string_view>

#include "base/result.h"

namespace prov {

// A valid MAC address in normalized form: six lowercase hex pairs separated
// by colons, "52:54:00:ab:cd:01". Only Parse makes one.
class Mac {
 public:
  // Accepts aa:bb:cc:dd:ee:ff, AA-BB-CC-DD-EE-FF, aabb.ccdd.eeff and bare hex
  // (':', '-' and '.' are ignored wherever they are). The error names the
  // text and what is wrong with it.
  static Result<Mac> Parse(std::string_view text);

  const std::string& str() const { return text_; }

  friend bool operator==(const Mac&, const Mac&) = default;
  // The order of the normalized text, which is the order of the addresses.
  friend std::strong_ordering operator<=>(const Mac&, const Mac&) = default;

 private:
  explicit Mac(std::string text) : text_(std::move(text)) {}
  std::string text_;
};

// "52-54-00-ab-cd-01": the spelling file names use (pxelinux, grub).
std::string HyphenatedMac(std::string mac);

// Mac::Parse's normalized text, for callers that store and compare strings.
Result<std::string> NormalizeMac(std::string_view text);

}  // namespace prov
