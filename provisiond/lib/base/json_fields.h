// Reading fields of JSON that comes from outside (a node's facts, a request):
// a missing field, a field of another type or a non-object reads as the
// fallback, where nlohmann's value() would throw.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <sstream>
#include <string>

#include "base/result.h"

namespace prov {

inline std::string JsonString(const nlohmann::json& o, const char* key,
                              const std::string& fallback = "") {
  if (!o.is_object()) return fallback;
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : fallback;
}

// A count or size: negative numbers and NaN read as 0, floats are truncated
// and clamped to the type's range.
inline uint64_t JsonUint(const nlohmann::json& o, const char* key) {
  if (!o.is_object()) return 0;
  auto it = o.find(key);
  if (it == o.end()) return 0;
  if (it->is_number_unsigned()) return it->get<uint64_t>();
  if (it->is_number_integer()) return it->get<int64_t>() < 0 ? 0 : it->get<uint64_t>();
  if (it->is_number_float()) {
    double d = it->get<double>();
    return d >= 18446744073709549568.0 ? UINT64_MAX : d > 0 ? static_cast<uint64_t>(d) : 0;
  }
  return 0;
}

// A settings list as written on a command line or in a config,
// "NAME,KEY=VALUE,...", as the object {bare_key: NAME, KEY: VALUE, ...}; a
// bare NAME only first. Empty or "none": {}. `what` names it in errors
// ("power setting"). Only the syntax: what the keys mean is the reader's.
inline Result<nlohmann::json> ParseSettingsList(const std::string& spec, const char* bare_key,
                                                const std::string& what) {
  nlohmann::json out = nlohmann::json::object();
  if (spec.empty() || spec == "none") return out;
  std::stringstream in(spec);
  std::string part;
  while (std::getline(in, part, ',')) {
    size_t eq = part.find('=');
    if (eq == std::string::npos) {
      if (!out.empty()) return Status::Invalid(what + " '" + part + "' is not key=value");
      out[bare_key] = part;
      continue;
    }
    if (eq == 0) return Status::Invalid(what + " '" + part + "' has no key");
    out[part.substr(0, eq)] = part.substr(eq + 1);
  }
  return out;
}

}  // namespace prov
