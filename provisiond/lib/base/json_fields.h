// Reading fields of JSON that comes from outside (a node's facts, a request):
// a missing field, a field of another type or a non-object reads as the
// fallback, where nlohmann's value() would throw.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

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

}  // namespace prov
