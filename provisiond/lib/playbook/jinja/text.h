// Python's string functions on std::string (internal to playbook/jinja/), for
// filters, tests and methods: lower/upper/strip/split/replace, regular
// expressions through std::regex, base64 and shlex.quote.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <regex>
#include <string>

#include "base/strings.h"

namespace prov::jinja {

inline bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}

std::string Upper(std::string s);
std::string Trim(const std::string& s, const std::string& chars = " \t\n\r\f\v");
size_t Utf8Length(const std::string& s);

// Python's str.split(): no separator splits on runs of whitespace.
nlohmann::json PySplit(const std::string& s, const nlohmann::json& sep, int64_t maxsplit,
                       size_t pos);
std::string ReplaceAll(std::string s, const std::string& from, const std::string& to,
                       int64_t count = -1);

// Python regular expressions through std::regex (ECMAScript): the common
// syntax is the same; a leading (?i) is honoured, named groups are refused.
std::regex MakeRegex(const std::string& pattern, bool icase, bool multiline, size_t pos);
// Python's replacement syntax (\1, \g<1>) in std::regex's ($1).
std::string ConvertReplacement(const std::string& r);

std::string Base64Encode(const std::string& in);
std::optional<std::string> Base64Decode(const std::string& in);

}  // namespace prov::jinja
