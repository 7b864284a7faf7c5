// Python's string functions on std::string (internal to playbook/jinja/), for
// filters, tests and methods: lower/upper/strip/split/replace, regular
// expressions (regex.h), base64 and shlex.quote.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "base/strings.h"
#include "playbook/jinja/regex.h"
#include "playbook/jinja/value.h"

namespace prov::jinja {

inline bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}

std::string Upper(std::string s);
size_t Utf8Length(const std::string& s);

// Python's str.split(): no separator splits on runs of whitespace.
nlohmann::json PySplit(const std::string& s, const nlohmann::json& sep, int64_t maxsplit,
                       size_t pos);
std::string ReplaceAll(std::string s, const std::string& from, const std::string& to,
                       int64_t count = -1);

// A pattern from a template (Python syntax, regex.h), or a template error at
// `pos` saying what is wrong with it.
Regex MakeRegex(const std::string& pattern, bool icase, bool multiline, size_t pos);
// The value of a regex operation, or a template error at `pos` (a limit hit,
// a bad replacement).
template <typename T>
T RegexValue(Result<T> r, size_t pos) {
  if (!r.ok()) Fail(pos, r.status().message());
  return std::move(*r);
}

}  // namespace prov::jinja
