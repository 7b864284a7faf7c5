// Python's string functions as the filters and methods use them, byte for
// byte where a playbook can tell (split's whitespace, quote's safe set).
#include "playbook/jinja/text.h"

#include <cstring>

#include "playbook/jinja/value.h"

namespace prov::jinja {
namespace {}  // namespace

std::string Upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

size_t Utf8Length(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

json PySplit(const std::string& s, const json& sep, int64_t maxsplit, size_t pos) {
  json out = json::array();
  if (sep.is_null()) {
    size_t i = 0;
    while (i < s.size()) {
      while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
      if (i >= s.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
        out.push_back(Trim(s.substr(i)));
        break;
      }
      size_t j = i;
      while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j]))) ++j;
      out.push_back(s.substr(i, j - i));
      i = j;
    }
    return out;
  }
  if (!sep.is_string()) Fail(pos, "split separator must be a string, not " + TypeName(sep));
  const std::string& d = sep.get_ref<const std::string&>();
  if (d.empty()) Fail(pos, "split separator is empty");
  size_t start = 0;
  while (true) {
    size_t f = s.find(d, start);
    if (f == std::string::npos || (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit)) {
      out.push_back(s.substr(start));
      break;
    }
    out.push_back(s.substr(start, f - start));
    start = f + d.size();
  }
  return out;
}

std::string ReplaceAll(std::string s, const std::string& from, const std::string& to,
                       int64_t count) {
  if (from.empty()) return s;
  size_t p = 0;
  int64_t done = 0;
  while ((count < 0 || done < count) && (p = s.find(from, p)) != std::string::npos) {
    s.replace(p, from.size(), to);
    p += to.size();
    ++done;
  }
  return s;
}

Regex MakeRegex(const std::string& pattern, bool icase, bool multiline, size_t pos) {
  return RegexValue(Regex::Compile(pattern, {.ignorecase = icase, .multiline = multiline}), pos);
}

}  // namespace prov::jinja
