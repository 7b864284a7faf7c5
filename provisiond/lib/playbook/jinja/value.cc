// Python's semantics on JSON values: the equality, ordering, truth and
// printing that Jinja2 gives Ansible, so templates render as they do there.
#include "playbook/jinja/value.h"

#include <charconv>
#include <cmath>

#include "playbook/jinja/text.h"

namespace prov::jinja {
namespace {

std::string FloatRepr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, d);
  std::string s(buf, p);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

}  // namespace

std::string TypeName(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "NoneType";
    case json::value_t::boolean:
      return "bool";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "int";
    case json::value_t::number_float:
      return "float";
    case json::value_t::string:
      return "str";
    case json::value_t::array:
      return "list";
    case json::value_t::object:
      return "dict";
    default:
      return "unknown";
  }
}

bool Truthy(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return false;
    case json::value_t::boolean:
      return v.get<bool>();
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return v.get<int64_t>() != 0;
    case json::value_t::number_float:
      return v.get<double>() != 0.0;
    case json::value_t::string:
      return !v.get_ref<const std::string&>().empty();
    case json::value_t::array:
    case json::value_t::object:
      return !v.empty();
    default:
      return false;
  }
}

std::string Str(const json& v) {
  switch (v.type()) {
    case json::value_t::string:
      return v.get<std::string>();
    case json::value_t::null:
      return "None";
    case json::value_t::boolean:
      return v.get<bool>() ? "True" : "False";
    case json::value_t::number_integer:
      return std::to_string(v.get<int64_t>());
    case json::value_t::number_unsigned:
      return std::to_string(v.get<uint64_t>());
    case json::value_t::number_float:
      return FloatRepr(v.get<double>());
    default:
      return Repr(v);
  }
}

std::string Repr(const json& v) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    const char q =
        (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) ? '"' : '\'';
    std::string out(1, q);
    for (char c : s) {
      if (c == q || c == '\\') {
        out += '\\';
        out += c;
      } else if (c == '\n') {
        out += "\\n";
      } else if (c == '\t') {
        out += "\\t";
      } else if (c == '\r') {
        out += "\\r";
      } else {
        out += c;
      }
    }
    return out + q;
  }
  if (v.is_array()) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + Repr(v[i]);
    return out + "]";
  }
  if (v.is_object()) {
    std::string out = "{";
    bool first = true;
    for (auto it = v.begin(); it != v.end(); ++it) {
      out += (first ? "" : ", ") + Repr(json(it.key())) + ": " + Repr(it.value());
      first = false;
    }
    return out + "}";
  }
  return Str(v);
}

namespace {
constexpr auto kReplace = json::error_handler_t::replace;
}  // namespace

std::string PyJson(const json& v) {
  if (v.is_array()) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + PyJson(v[i]);
    return out + "]";
  }
  if (v.is_object()) {
    std::string out = "{";
    bool first = true;
    for (auto it = v.begin(); it != v.end(); ++it) {
      out += (first ? "" : ", ") + json(it.key()).dump(-1, ' ', false, kReplace) + ": " +
             PyJson(it.value());
      first = false;
    }
    return out + "}";
  }
  // Invalid UTF-8 (node text, templates) becomes U+FFFD rather than an
  // exception (found by fuzzing).
  return v.dump(-1, ' ', false, kReplace);
}

bool Equal(const json& a, const json& b) {
  if (IsNum(a) && IsNum(b)) {
    if (IsInt(a) && IsInt(b)) return AsInt(a) == AsInt(b);
    return AsDouble(a) == AsDouble(b);
  }
  if (a.type() != b.type()) return false;
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!Equal(a[i], b[i])) return false;
    return true;
  }
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (auto it = a.begin(); it != a.end(); ++it) {
      auto f = b.find(it.key());
      if (f == b.end() || !Equal(it.value(), *f)) return false;
    }
    return true;
  }
  return a == b;
}

int Compare(const json& a, const json& b, size_t pos, bool fold_case) {
  if (IsNum(a) && IsNum(b)) {
    if (IsInt(a) && IsInt(b)) {
      int64_t x = AsInt(a), y = AsInt(b);
      return x < y ? -1 : x > y ? 1 : 0;
    }
    double x = AsDouble(a), y = AsDouble(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) {
    std::string x = a.get<std::string>(), y = b.get<std::string>();
    if (fold_case) {
      x = Lower(x);
      y = Lower(y);
    }
    return x.compare(y) < 0 ? -1 : x.compare(y) > 0 ? 1 : 0;
  }
  if (a.is_array() && b.is_array()) {
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
      int c = Compare(a[i], b[i], pos, fold_case);
      if (c) return c;
    }
    return a.size() < b.size() ? -1 : a.size() > b.size() ? 1 : 0;
  }
  Fail(pos, "cannot compare '" + TypeName(a) + "' with '" + TypeName(b) + "'");
}

bool Contains(const json& list, const json& v) {
  for (const auto& e : list)
    if (Equal(e, v)) return true;
  return false;
}

json Iterable(const json& v, size_t pos, const std::string& what) {
  if (v.is_array()) return v;
  if (v.is_object()) {
    json keys = json::array();
    for (auto it = v.begin(); it != v.end(); ++it) keys.push_back(it.key());
    return keys;
  }
  if (v.is_string()) {
    json chars = json::array();
    const std::string& s = v.get_ref<const std::string&>();
    for (size_t i = 0; i < s.size();) {
      size_t len = 1;
      unsigned char c = s[i];
      if (c >= 0xF0)
        len = 4;
      else if (c >= 0xE0)
        len = 3;
      else if (c >= 0xC0)
        len = 2;
      chars.push_back(s.substr(i, len));
      i += len;
    }
    return chars;
  }
  Fail(pos, what + ": '" + TypeName(v) + "' object is not iterable");
}

const json* AttributePath(const json& v, const std::string& path) {
  const json* cur = &v;
  size_t start = 0;
  while (start <= path.size()) {
    size_t dot = path.find('.', start);
    std::string part =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (cur->is_object()) {
      auto f = cur->find(part);
      if (f == cur->end()) return nullptr;
      cur = &*f;
    } else if (cur->is_array() && !part.empty() &&
               part.find_first_not_of("0123456789") == std::string::npos) {
      size_t i = std::stoul(part);
      if (i >= cur->size()) return nullptr;
      cur = &(*cur)[i];
    } else {
      return nullptr;
    }
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return cur;
}

const std::string& StrArg(const json& v, size_t pos, const char* what) {
  if (!v.is_string()) Fail(pos, std::string(what) + " expects a string, got " + TypeName(v));
  return v.get_ref<const std::string&>();
}

}  // namespace prov::jinja
