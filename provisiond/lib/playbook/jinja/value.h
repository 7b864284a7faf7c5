// What expressions compute with (internal to playbook/jinja/): a value that is
// JSON or undefined with the reason, Python's meaning of str(), repr(), ==, <
// and truth on JSON values (Ansible's Jinja2 is Python), and the error that
// unwinds parsing and evaluation.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace prov::jinja {

using json = nlohmann::json;

// Errors unwind the recursive-descent parser and the tree-walking evaluator
// to the public functions (jinja.cc), and only there; they become a Status
// with the position turned into line and column. Threading a Result through
// every one of the ~40 recursive helpers would hide the grammar under error
// plumbing.
struct JinjaError {
  size_t pos;
  std::string message;
  bool syntax;
};

[[noreturn]] inline void Fail(size_t pos, std::string message) {
  throw JinjaError{pos, std::move(message), false};
}
[[noreturn]] inline void SyntaxFail(size_t pos, std::string message) {
  throw JinjaError{pos, std::move(message), true};
}

// A value during evaluation: a JSON value (borrowed from the variables or
// owned), or undefined with the reason, so `is defined` and `default` can
// work on it and every other use can say which variable is missing.
struct Val {
  const json* ref = nullptr;
  json own;
  bool undefined = false;
  std::string why;

  const json& j() const { return ref ? *ref : own; }
  static Val Ref(const json& v) {
    Val r;
    r.ref = &v;
    return r;
  }
  static Val Own(json v) {
    Val r;
    r.own = std::move(v);
    return r;
  }
  static Val Undef(std::string why) {
    Val r;
    r.undefined = true;
    r.why = std::move(why);
    return r;
  }
};

inline const json& Need(const Val& v, size_t pos) {
  if (v.undefined) Fail(pos, v.why);
  return v.j();
}

inline Val B(bool b) {
  return Val::Own(b);
}

// What absent arguments default to: callees return references to them.
inline const json kNull = nullptr;
inline const json kTrue = true;
inline const json kFalse = false;
inline const json kEmptyString = "";

// Python's type names ("str", "dict", "NoneType"), for messages.
std::string TypeName(const json& v);

inline bool IsNum(const json& v) {
  return v.is_number() || v.is_boolean();
}
inline bool IsInt(const json& v) {
  return v.is_number_integer() || v.is_boolean();
}
// A number (or bool) as an integer; a float is truncated and clamped to
// 64 bits (casting one out of range is undefined behaviour).
inline int64_t AsInt(const json& v) {
  if (v.is_boolean()) return v.get<bool>() ? 1 : 0;
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (d != d) return 0;
    if (d <= -9223372036854775808.0) return INT64_MIN;
    if (d >= 9223372036854775807.0) return INT64_MAX;
    return static_cast<int64_t>(d);
  }
  return v.get<int64_t>();
}
// An integer argument of a filter, test or method: a number or bool (AsInt),
// anything else a template error at `pos` naming `what` (nlohmann's
// type_error escaped the renderer before: found by fuzzing).
inline int64_t IntArg(const json& v, size_t pos, const std::string& what) {
  if (!v.is_number() && !v.is_boolean())
    Fail(pos, what + " must be an integer, not " + TypeName(v));
  return AsInt(v);
}

inline double AsDouble(const json& v) {
  if (v.is_boolean()) return v.get<bool>() ? 1 : 0;
  return v.get<double>();
}

bool Truthy(const json& v);

// Python's str(): what {{ }} and ~ print.
std::string Str(const json& v);
// Python's repr(): lists and dicts print as Python literals, as in Ansible.
std::string Repr(const json& v);
// JSON as Python's json.dumps writes it (", " and ": " separators).
std::string PyJson(const json& v);

// Python's ==: 1 == 1.0 == true.
bool Equal(const json& a, const json& b);
// Python ordering: numbers with numbers, strings with strings, lists
// element-wise; anything else is a TypeError.
int Compare(const json& a, const json& b, size_t pos, bool fold_case = false);
bool Contains(const json& list, const json& v);

// Items a filter iterates over: a list, a dict's keys, a string's characters.
json Iterable(const json& v, size_t pos, const std::string& what);
// Looks up "a.b.c" in a value, for attribute= arguments.
const json* AttributePath(const json& v, const std::string& path);
const std::string& StrArg(const json& v, size_t pos, const char* what);

}  // namespace prov::jinja
