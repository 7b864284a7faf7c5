// The value of the first top-level "key:" line of a YAML text, so a profile
// or manifest is checked against the name it claims (most seeds agree).
#pragma once

#include <string>

namespace prov::fuzz {

inline std::string TopLevelValue(const std::string& text, const std::string& key) {
  size_t at = text.rfind(key + ":", 0) == 0 ? 0 : text.find("\n" + key + ":");
  if (at == std::string::npos) return "";
  if (text[at] == '\n') ++at;
  at += key.size() + 1;
  size_t end = text.find_first_of("\r\n#", at);
  std::string v = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
  while (!v.empty() && (v.front() == ' ' || v.front() == '"' || v.front() == '\'')) v.erase(0, 1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '"' || v.back() == '\'')) v.pop_back();
  return v;
}

}  // namespace prov::fuzz
