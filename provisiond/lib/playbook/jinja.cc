#include "playbook/jinja.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>

namespace prov {

const char* const kOmitPlaceholder = "__omit_place_holder__";

namespace {

using json = nlohmann::json;

// Errors unwind the recursive-descent parser and the tree-walking evaluator
// to the public functions at the bottom of this file, and only there; they
// become a Status with the position turned into line and column. Threading a
// Result through every one of the ~40 recursive helpers would hide the
// grammar under error plumbing.
struct JinjaError {
  size_t pos;
  std::string message;
  bool syntax;
};

[[noreturn]] void Fail(size_t pos, std::string message) {
  throw JinjaError{pos, std::move(message), false};
}
[[noreturn]] void SyntaxFail(size_t pos, std::string message) {
  throw JinjaError{pos, std::move(message), true};
}

// Largest list range() builds and deepest nesting the parser accepts: limits
// that keep a broken template from eating memory or the stack.
constexpr int64_t kMaxRange = 100000;
constexpr int kMaxNesting = 100;

// ---------------------------------------------------------------------------
// Lexer

enum class Tok { kName, kString, kInt, kFloat, kOp, kEnd };

struct Token {
  Tok kind;
  std::string text;  // name, operator, or string contents
  size_t pos;
  json value;  // numbers
};

struct Lexed {
  std::vector<Token> tokens;
  size_t end = 0;           // just past the closing marker
  bool trim_after = false;  // the marker was "-}}" / "-%}"
};

bool IsNameStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}
bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}

// Lexes an expression starting at `pos` of `src`. With an empty `close` it
// runs to the end of `src`; otherwise it stops at `close` ("}}" or "%}")
// outside brackets, which a '-' may precede for whitespace control.
Lexed Lex(const std::string& src, size_t pos, const std::string& close, size_t open_pos,
          const std::string& opener) {
  Lexed out;
  int depth = 0;
  const size_t n = src.size();
  while (true) {
    while (pos < n && (src[pos] == ' ' || src[pos] == '\t' || src[pos] == '\n' || src[pos] == '\r'))
      ++pos;
    if (!close.empty() && depth == 0) {
      if (src.compare(pos, close.size(), close) == 0) {
        out.end = pos + close.size();
        break;
      }
      if (pos < n && src[pos] == '-' && src.compare(pos + 1, close.size(), close) == 0) {
        out.trim_after = true;
        out.end = pos + 1 + close.size();
        break;
      }
    }
    if (pos >= n) {
      if (!close.empty())
        SyntaxFail(open_pos, "'" + opener + "' is not closed (expected '" + close + "')");
      out.end = n;
      break;
    }
    const char c = src[pos];
    const size_t start = pos;
    if (IsNameStart(c)) {
      while (pos < n && IsNameChar(src[pos])) ++pos;
      out.tokens.push_back({Tok::kName, src.substr(start, pos - start), start, nullptr});
    } else if (IsDigit(c)) {
      bool is_float = false;
      while (pos < n && (IsDigit(src[pos]) || src[pos] == '_')) ++pos;
      if (pos + 1 < n && src[pos] == '.' && IsDigit(src[pos + 1])) {
        is_float = true;
        ++pos;
        while (pos < n && (IsDigit(src[pos]) || src[pos] == '_')) ++pos;
      }
      if (pos < n && (src[pos] == 'e' || src[pos] == 'E')) {
        size_t e = pos + 1;
        if (e < n && (src[e] == '+' || src[e] == '-')) ++e;
        if (e < n && IsDigit(src[e])) {
          is_float = true;
          pos = e;
          while (pos < n && IsDigit(src[pos])) ++pos;
        }
      }
      std::string digits;
      for (size_t i = start; i < pos; ++i)
        if (src[i] != '_') digits += src[i];
      Token t{is_float ? Tok::kFloat : Tok::kInt, digits, start, nullptr};
      if (is_float) {
        t.value = std::strtod(digits.c_str(), nullptr);
      } else {
        int64_t v = 0;
        auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
        if (ec != std::errc() || p != digits.data() + digits.size())
          SyntaxFail(start, "integer '" + digits + "' is too large");
        t.value = v;
      }
      out.tokens.push_back(std::move(t));
    } else if (c == '\'' || c == '"') {
      std::string s;
      ++pos;
      bool closed = false;
      while (pos < n) {
        char d = src[pos];
        if (d == c) {
          closed = true;
          ++pos;
          break;
        }
        if (d == '\\' && pos + 1 < n) {
          char e = src[pos + 1];
          switch (e) {
            case 'n':
              s += '\n';
              break;
            case 't':
              s += '\t';
              break;
            case 'r':
              s += '\r';
              break;
            case '0':
              s += '\0';
              break;
            case '\\':
              s += '\\';
              break;
            case '\'':
              s += '\'';
              break;
            case '"':
              s += '"';
              break;
            case '\n':
              break;
            default:  // as Python: an unknown escape keeps its backslash ("\d")
              s += '\\';
              s += e;
          }
          pos += 2;
          continue;
        }
        s += d;
        ++pos;
      }
      if (!closed) SyntaxFail(start, "unterminated string");
      out.tokens.push_back({Tok::kString, std::move(s), start, nullptr});
    } else {
      static const char* const kTwo[] = {"==", "!=", "<=", ">=", "//", "**"};
      std::string op;
      for (const char* t : kTwo)
        if (src.compare(pos, 2, t) == 0) op = t;
      if (op.empty()) {
        if (std::string("()[]{}.,:|~+-*/%<>=").find(c) == std::string::npos)
          SyntaxFail(start, std::string("unexpected character '") + c + "'");
        op = std::string(1, c);
      }
      if (op == "(" || op == "[" || op == "{") ++depth;
      if (op == ")" || op == "]" || op == "}") --depth;
      pos += op.size();
      out.tokens.push_back({Tok::kOp, op, start, nullptr});
    }
  }
  // The end token sits where the closing marker starts, for messages.
  out.tokens.push_back({Tok::kEnd, "", pos, nullptr});
  return out;
}

// ---------------------------------------------------------------------------
// Syntax tree

struct Node;
using NodeP = std::unique_ptr<Node>;

struct Node {
  enum Kind {
    kLiteral,
    kVar,
    kAttr,   // kids[0].name
    kIndex,  // kids[0][kids[1]]
    kSlice,  // kids[0][kids[1]:kids[2]:kids[3]], absent parts null
    kList,
    kDict,  // kids: key, value, key, value, ...
    kNeg,
    kPos,
    kNot,
    kBinary,  // name is the operator
    kAnd,
    kOr,
    kTest,    // kids[0] is ..., name, kids[1..] args
    kFilter,  // kids[0] | name(kids[1..])
    kCall,    // name(kids...)
    kMethod,  // kids[0].name(kids[1..])
    kCond,    // kids[0] if kids[1] else kids[2] (null: undefined)
  };
  Kind kind;
  size_t pos;
  json value;
  std::string name;
  std::string path;  // "a.b[0]" for variables, used in messages
  std::vector<NodeP> kids;
  std::vector<std::pair<std::string, NodeP>> kwargs;
  bool negate = false;
};

NodeP MakeNode(Node::Kind kind, size_t pos) {
  auto n = std::make_unique<Node>();
  n->kind = kind;
  n->pos = pos;
  return n;
}

// ---------------------------------------------------------------------------
// Values

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

const json& Need(const Val& v, size_t pos) {
  if (v.undefined) Fail(pos, v.why);
  return v.j();
}

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

bool IsNum(const json& v) {
  return v.is_number() || v.is_boolean();
}
bool IsInt(const json& v) {
  return v.is_number_integer() || v.is_boolean();
}
int64_t AsInt(const json& v) {
  if (v.is_boolean()) return v.get<bool>() ? 1 : 0;
  if (v.is_number_float()) return static_cast<int64_t>(v.get<double>());
  return v.get<int64_t>();
}
double AsDouble(const json& v) {
  if (v.is_boolean()) return v.get<bool>() ? 1 : 0;
  return v.get<double>();
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

std::string FloatRepr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, d);
  std::string s(buf, p);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

std::string Repr(const json& v);

// Python's str(): what {{ }} and ~ print.
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

// Python's repr(): lists and dicts print as Python literals, as in Ansible.
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

// JSON as Python's json.dumps writes it (", " and ": " separators).
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
      out += (first ? "" : ", ") + json(it.key()).dump() + ": " + PyJson(it.value());
      first = false;
    }
    return out + "}";
  }
  return v.dump();
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

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
std::string Upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// Python ordering: numbers with numbers, strings with strings, lists
// element-wise; anything else is a TypeError.
int Compare(const json& a, const json& b, size_t pos, bool fold_case = false) {
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

size_t Utf8Length(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

std::string Trim(const std::string& s, const std::string& chars = " \t\n\r\f\v") {
  size_t b = s.find_first_not_of(chars);
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(chars);
  return s.substr(b, e - b + 1);
}

// Python's str.split(): no separator splits on runs of whitespace.
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
                       int64_t count = -1) {
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

// Python regular expressions through std::regex (ECMAScript): the common
// syntax is the same; a leading (?i) is honoured, named groups are refused.
std::regex MakeRegex(const std::string& pattern, bool icase, bool multiline, size_t pos) {
  std::string p = pattern;
  if (p.rfind("(?i)", 0) == 0) {
    icase = true;
    p = p.substr(4);
  }
  if (p.find("(?P") != std::string::npos)
    Fail(pos, "named groups (?P<...>) are not supported in regular expression '" + pattern + "'");
  auto flags = std::regex::ECMAScript;
  if (icase) flags |= std::regex::icase;
  if (multiline) flags |= std::regex::multiline;
  try {
    return std::regex(p, flags);
  } catch (const std::regex_error& e) {
    Fail(pos, "invalid regular expression '" + pattern + "': " + e.what());
  }
}

// Python's replacement syntax (\1, \g<1>) in std::regex's ($1).
std::string ConvertReplacement(const std::string& r) {
  std::string out;
  for (size_t i = 0; i < r.size(); ++i) {
    char c = r[i];
    if (c == '$') {
      out += "$$";
    } else if (c == '\\' && i + 1 < r.size()) {
      char d = r[i + 1];
      if (IsDigit(d)) {
        out += '$';
        out += d;
        ++i;
      } else if (d == 'g' && i + 2 < r.size() && r[i + 2] == '<') {
        size_t close = r.find('>', i + 3);
        if (close == std::string::npos) {
          out += c;
          continue;
        }
        out += "$" + r.substr(i + 3, close - i - 3);
        i = close;
      } else if (d == 'n') {
        out += '\n';
        ++i;
      } else if (d == 't') {
        out += '\t';
        ++i;
      } else if (d == '\\') {
        out += '\\';
        ++i;
      } else {
        out += c;
      }
    } else {
      out += c;
    }
  }
  return out;
}

const char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string Base64Encode(const std::string& in) {
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    out += kB64[v >> 18];
    out += kB64[(v >> 12) & 63];
    out += kB64[(v >> 6) & 63];
    out += kB64[v & 63];
  }
  if (i + 1 == in.size()) {
    uint32_t v = uint8_t(in[i]) << 16;
    out += kB64[v >> 18];
    out += kB64[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += kB64[v >> 18];
    out += kB64[(v >> 12) & 63];
    out += kB64[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

std::optional<std::string> Base64Decode(const std::string& in) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  size_t pad = 0;
  for (char c : in) {
    if (c == '\n' || c == '\r' || c == ' ') continue;
    if (c == '=') {
      ++pad;
      continue;
    }
    if (pad) return std::nullopt;
    const char* p = std::strchr(kB64, c);
    if (!p || !c) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(p - kB64);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  if (pad > 2) return std::nullopt;
  return out;
}

// Python's shlex.quote.
std::string ShQuote(const std::string& s) {
  if (s.empty()) return "''";
  if (s.find_first_not_of(
          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./-_") ==
      std::string::npos)
    return s;
  return "'" + ReplaceAll(s, "'", "'\"'\"'") + "'";
}

YAML::Node JsonToYaml(const json& v) {
  if (v.is_object()) {
    YAML::Node n(YAML::NodeType::Map);
    for (auto it = v.begin(); it != v.end(); ++it) n[it.key()] = JsonToYaml(it.value());
    return n;
  }
  if (v.is_array()) {
    YAML::Node n(YAML::NodeType::Sequence);
    for (const auto& e : v) n.push_back(JsonToYaml(e));
    return n;
  }
  if (v.is_null()) return YAML::Node(YAML::NodeType::Null);
  if (v.is_string()) return YAML::Node(v.get<std::string>());
  if (v.is_boolean()) return YAML::Node(v.get<bool>() ? "true" : "false");
  return YAML::Node(Str(v));
}

// ---------------------------------------------------------------------------
// Filters, tests, functions and methods: one table each. The parser checks
// names and argument counts against them, so a typo is a load-time error.

struct Scope;

// Arguments of one call, aligned with the callee's parameter names; `rest`
// holds positional arguments past them for variadic callees.
struct Args {
  std::vector<std::optional<Val>> at;
  std::vector<Val> rest;
  size_t pos = 0;

  bool has(size_t i) const { return i < at.size() && at[i].has_value(); }
  const json& get(size_t i, const json& fallback) const {
    if (!has(i)) return fallback;
    return Need(*at[i], pos);
  }
};

using CallFn = std::function<Val(const Val& in, const Args& args, Scope& scope)>;

struct Callable {
  Callable() = default;
  Callable(std::vector<std::string> p, size_t req, bool var, bool undef, CallFn f)
      : params(std::move(p)),
        required(req),
        variadic(var),
        accepts_undefined(undef),
        fn(std::move(f)) {}

  std::vector<std::string> params;  // positional or keyword
  size_t required = 0;
  bool variadic = false;           // extra positional arguments go to Args::rest
  bool accepts_undefined = false;  // default, mandatory, defined, ...
  CallFn fn;
  std::vector<std::string> kwonly;  // keyword-only, after params in Args::at
};

const json kNull = nullptr;
const json kTrue = true;
const json kFalse = false;
const json kEmptyString = "";

const std::map<std::string, Callable>& Filters();
const std::map<std::string, Callable>& Tests();

struct Scope {
  const json& globals;
  std::deque<json> frames;  // innermost last; a deque keeps references stable

  explicit Scope(const json& g) : globals(g) { frames.emplace_back(json::object()); }

  const json* Find(const std::string& name) const {
    for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
      auto f = it->find(name);
      if (f != it->end()) return &*f;
    }
    if (globals.is_object()) {
      auto f = globals.find(name);
      if (f != globals.end()) return &*f;
    }
    return nullptr;
  }
};

const json& ListArg(const Val& in, size_t pos, const char* what) {
  const json& v = Need(in, pos);
  if (!v.is_array())
    Fail(pos, std::string(what) + " expects a list, got " + TypeName(v) + " " + Repr(v));
  return v;
}

const std::string& StrArg(const json& v, size_t pos, const char* what) {
  if (!v.is_string()) Fail(pos, std::string(what) + " expects a string, got " + TypeName(v));
  return v.get_ref<const std::string&>();
}

// Items a filter iterates over: a list, a dict's keys, a string's characters.
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

// Looks up "a.b.c" in a value, for attribute= arguments.
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

Val CallTest(const std::string& name, const Val& subject, std::vector<Val> args, size_t pos,
             Scope& scope);
Val CallFilter(const std::string& name, const Val& subject, std::vector<Val> args, size_t pos,
               Scope& scope);

bool RegexTest(const json& v, const Args& a, bool anchored, size_t pos) {
  if (!v.is_string()) Fail(pos, "regular expression tests expect a string, got " + TypeName(v));
  const auto& pattern = StrArg(a.get(0, kNull), pos, "the pattern");
  std::regex re = MakeRegex(pattern, Truthy(a.get(1, kFalse)), Truthy(a.get(2, kFalse)), pos);
  const std::string& s = v.get_ref<const std::string&>();
  return std::regex_search(
      s, re,
      anchored ? std::regex_constants::match_continuous : std::regex_constants::match_default);
}

const json& ResultArg(const Val& in, size_t pos, const char* test) {
  const json& v = Need(in, pos);
  if (!v.is_object())
    Fail(pos,
         std::string("'is ") + test + "' expects a registered task result, got " + TypeName(v));
  return v;
}

bool ResultFlag(const json& r, const char* key) {
  auto f = r.find(key);
  return f != r.end() && Truthy(*f);
}

Val B(bool b) {
  return Val::Own(b);
}

const std::map<std::string, Callable>& Tests() {
  static const std::map<std::string, Callable> tests = [] {
    std::map<std::string, Callable> t;
    auto plain = [&](const std::string& name, std::function<bool(const json&)> f) {
      t[name] = {{}, 0, false, false, [f](const Val& in, const Args& a, Scope&) {
                   return B(f(Need(in, a.pos)));
                 }};
    };
    t["defined"] = {
        {}, 0, false, true, [](const Val& in, const Args&, Scope&) { return B(!in.undefined); }};
    t["undefined"] = {
        {}, 0, false, true, [](const Val& in, const Args&, Scope&) { return B(in.undefined); }};
    plain("none", [](const json& v) { return v.is_null(); });
    plain("string", [](const json& v) { return v.is_string(); });
    plain("number", [](const json& v) { return v.is_number(); });
    plain("integer", [](const json& v) { return v.is_number_integer(); });
    plain("float", [](const json& v) { return v.is_number_float(); });
    plain("boolean", [](const json& v) { return v.is_boolean(); });
    plain("mapping", [](const json& v) { return v.is_object(); });
    plain("sequence", [](const json& v) { return v.is_array() || v.is_string() || v.is_object(); });
    plain("iterable", [](const json& v) { return v.is_array() || v.is_string() || v.is_object(); });
    plain("list", [](const json& v) { return v.is_array(); });
    plain("truthy", [](const json& v) { return Truthy(v); });
    plain("falsy", [](const json& v) { return !Truthy(v); });
    plain("lower", [](const json& v) { return v.is_string() && Lower(v.get<std::string>()) == v; });
    plain("upper", [](const json& v) { return v.is_string() && Upper(v.get<std::string>()) == v; });
    auto result = [&](const std::string& name, bool want_failed, const char* key) {
      t[name] = {
          {}, 0, false, false, [name, want_failed, key](const Val& in, const Args& a, Scope&) {
            const json& r = ResultArg(in, a.pos, name.c_str());
            return B(ResultFlag(r, key) == want_failed);
          }};
    };
    result("succeeded", false, "failed");
    result("success", false, "failed");
    result("failed", true, "failed");
    result("failure", true, "failed");
    result("changed", true, "changed");
    result("change", true, "changed");
    result("skipped", true, "skipped");
    result("skip", true, "skipped");
    auto regex = [&](const std::string& name, bool anchored) {
      t[name] = {{"pattern", "ignorecase", "multiline"},
                 1,
                 false,
                 false,
                 [anchored](const Val& in, const Args& a, Scope&) {
                   return B(RegexTest(Need(in, a.pos), a, anchored, a.pos));
                 }};
    };
    regex("match", true);
    regex("search", false);
    regex("regex", false);
    t["in"] = {{"seq"}, 1, false, false, [](const Val& in, const Args& a, Scope&) {
                 const json& v = Need(in, a.pos);
                 const json& seq = a.get(0, kNull);
                 if (seq.is_string())
                   return B(v.is_string() && seq.get_ref<const std::string&>().find(
                                                 v.get<std::string>()) != std::string::npos);
                 if (seq.is_object()) return B(v.is_string() && seq.contains(v.get<std::string>()));
                 if (!seq.is_array()) Fail(a.pos, "'is in' expects a list, got " + TypeName(seq));
                 for (const auto& e : seq)
                   if (Equal(e, v)) return B(true);
                 return B(false);
               }};
    auto cmp = [&](std::vector<std::string> names, std::function<bool(int)> ok) {
      for (const auto& name : names)
        t[name] = {{"other"}, 1, false, false, [ok](const Val& in, const Args& a, Scope&) {
                     return B(ok(Compare(Need(in, a.pos), a.get(0, kNull), a.pos)));
                   }};
    };
    cmp({"lt", "lessthan"}, [](int c) { return c < 0; });
    cmp({"le"}, [](int c) { return c <= 0; });
    cmp({"gt", "greaterthan"}, [](int c) { return c > 0; });
    cmp({"ge"}, [](int c) { return c >= 0; });
    for (const char* name : {"eq", "equalto", "sameas"})
      t[name] = {{"other"}, 1, false, false, [](const Val& in, const Args& a, Scope&) {
                   return B(Equal(Need(in, a.pos), a.get(0, kNull)));
                 }};
    t["ne"] = {{"other"}, 1, false, false, [](const Val& in, const Args& a, Scope&) {
                 return B(!Equal(Need(in, a.pos), a.get(0, kNull)));
               }};
    auto intTest = [&](const std::string& name, std::function<bool(int64_t, const Args&)> f,
                       std::vector<std::string> params) {
      t[name] = {params, params.size(), false, false,
                 [f, name](const Val& in, const Args& a, Scope&) {
                   const json& v = Need(in, a.pos);
                   if (!IsInt(v)) Fail(a.pos, "'is " + name + "' expects an integer");
                   return B(f(AsInt(v), a));
                 }};
    };
    intTest("even", [](int64_t v, const Args&) { return v % 2 == 0; }, {});
    intTest("odd", [](int64_t v, const Args&) { return v % 2 != 0; }, {});
    intTest("divisibleby",
            [](int64_t v, const Args& a) {
              const json& d = a.get(0, kNull);
              if (!IsInt(d) || AsInt(d) == 0) Fail(a.pos, "divisibleby needs a non-zero integer");
              return v % AsInt(d) == 0;
            },
            {"num"});
    return t;
  }();
  return tests;
}

json Flatten(const json& list, int64_t levels) {
  json out = json::array();
  for (const auto& e : list) {
    if (e.is_array() && levels != 0) {
      for (auto& x : Flatten(e, levels < 0 ? -1 : levels - 1)) out.push_back(x);
    } else if (!e.is_null()) {
      out.push_back(e);
    }
  }
  return out;
}

json Combine(const json& a, const json& b, bool recursive) {
  json out = a;
  for (auto it = b.begin(); it != b.end(); ++it) {
    auto f = out.find(it.key());
    if (recursive && f != out.end() && f->is_object() && it.value().is_object())
      *f = Combine(*f, it.value(), true);
    else
      out[it.key()] = it.value();
  }
  return out;
}

json Unique(const json& list) {
  json out = json::array();
  for (const auto& e : list) {
    bool seen = false;
    for (const auto& o : out)
      if (Equal(e, o)) seen = true;
    if (!seen) out.push_back(e);
  }
  return out;
}

bool Contains(const json& list, const json& v) {
  for (const auto& e : list)
    if (Equal(e, v)) return true;
  return false;
}

const json& Attribute(const json& item, const std::string& attr, size_t pos) {
  const json* f = AttributePath(item, attr);
  if (!f) Fail(pos, Repr(item) + " has no attribute '" + attr + "'");
  return *f;
}

// min, max: the smallest / largest item, by `attribute` when given.
Val Extreme(const Val& in, const Args& a, bool want_max) {
  const json& list = ListArg(in, a.pos, want_max ? "max" : "min");
  if (list.empty()) Fail(a.pos, std::string(want_max ? "max" : "min") + "() of an empty list");
  const json& attr = a.get(0, kNull);
  auto key = [&](const json& e) -> const json& {
    return attr.is_null() ? e : Attribute(e, StrArg(attr, a.pos, "attribute"), a.pos);
  };
  size_t best = 0;
  for (size_t i = 1; i < list.size(); ++i) {
    int c = Compare(key(list[i]), key(list[best]), a.pos, true);
    if (want_max ? c > 0 : c < 0) best = i;
  }
  return Val::Own(list[best]);
}

Val Select(const Val& in, const Args& a, Scope& scope, bool by_attr, bool keep) {
  const json list = Iterable(Need(in, a.pos), a.pos, "select");
  json out = json::array();
  size_t first = by_attr ? 1 : 0;
  std::string test = "truthy";
  if (a.rest.size() > first) test = StrArg(Need(a.rest[first], a.pos), a.pos, "the test name");
  std::vector<Val> targs;
  for (size_t i = first + 1; i < a.rest.size(); ++i) targs.push_back(a.rest[i]);
  std::string attr;
  if (by_attr) {
    if (a.rest.empty()) Fail(a.pos, "selectattr/rejectattr need an attribute name");
    attr = StrArg(Need(a.rest[0], a.pos), a.pos, "the attribute name");
  }
  for (const auto& e : list) {
    Val subject;
    if (by_attr) {
      const json* f = AttributePath(e, attr);
      subject = f ? Val::Ref(*f) : Val::Undef(Repr(e) + " has no attribute '" + attr + "'");
    } else {
      subject = Val::Ref(e);
    }
    bool r = Truthy(CallTest(test, subject, targs, a.pos, scope).j());
    if (r == keep) out.push_back(e);
  }
  return Val::Own(std::move(out));
}

const std::map<std::string, Callable>& Filters() {
  static const std::map<std::string, Callable> filters = [] {
    std::map<std::string, Callable> f;
    auto str = [&](const std::string& name, std::function<std::string(const std::string&)> fn) {
      f[name] = {{}, 0, false, false, [fn](const Val& in, const Args& a, Scope&) {
                   return Val::Own(fn(Str(Need(in, a.pos))));
                 }};
    };
    f["default"] = {
        {"default_value", "boolean"}, 0, false, true, [](const Val& in, const Args& a, Scope&) {
          if (in.undefined || (Truthy(a.get(1, kFalse)) && !Truthy(in.j())))
            return Val::Own(a.get(0, kEmptyString));
          return in;
        }};
    f["d"] = f["default"];
    f["mandatory"] = {{"msg"}, 0, false, true, [](const Val& in, const Args& a, Scope&) {
                        if (in.undefined) {
                          const json& msg = a.get(0, kNull);
                          Fail(a.pos, msg.is_null() ? "mandatory variable: " + in.why : Str(msg));
                        }
                        return in;
                      }};
    f["join"] = {{"d", "attribute"}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                   const json items = Iterable(Need(in, a.pos), a.pos, "join");
                   const std::string sep = Str(a.get(0, kEmptyString));
                   const json& attr = a.get(1, kNull);
                   std::string out;
                   for (size_t i = 0; i < items.size(); ++i) {
                     if (i) out += sep;
                     out += attr.is_null() ? Str(items[i])
                                           : Str(Attribute(items[i], Str(attr), a.pos));
                   }
                   return Val::Own(out);
                 }};
    f["length"] = {{}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                     const json& v = Need(in, a.pos);
                     if (v.is_string())
                       return Val::Own(static_cast<int64_t>(Utf8Length(v.get<std::string>())));
                     if (v.is_array() || v.is_object())
                       return Val::Own(static_cast<int64_t>(v.size()));
                     Fail(a.pos, "object of type '" + TypeName(v) + "' has no length");
                   }};
    f["count"] = f["length"];
    f["int"] = {{"default", "base"}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                  const json& v = Need(in, a.pos);
                  const json dflt = a.get(0, json(0));
                  if (IsNum(v)) return Val::Own(AsInt(v));
                  if (!v.is_string()) return Val::Own(dflt);
                  std::string s = Trim(v.get<std::string>());
                  int base = static_cast<int>(AsInt(a.get(1, json(10))));
                  if (base == 16 && (s.rfind("0x", 0) == 0 || s.rfind("0X", 0) == 0))
                    s = s.substr(2);
                  if (base == 8 && (s.rfind("0o", 0) == 0)) s = s.substr(2);
                  if (base == 2 && (s.rfind("0b", 0) == 0)) s = s.substr(2);
                  int64_t r = 0;
                  const char* b = s.data();
                  if (!s.empty() && s[0] == '+') ++b;
                  auto [p, ec] = std::from_chars(b, s.data() + s.size(), r, base);
                  if (ec == std::errc() && p == s.data() + s.size() && !s.empty())
                    return Val::Own(r);
                  char* end = nullptr;
                  double d = std::strtod(s.c_str(), &end);
                  if (base == 10 && !s.empty() && end == s.c_str() + s.size())
                    return Val::Own(static_cast<int64_t>(d));
                  return Val::Own(dflt);
                }};
    f["float"] = {{"default"}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                    const json& v = Need(in, a.pos);
                    if (IsNum(v)) return Val::Own(AsDouble(v));
                    if (v.is_string()) {
                      std::string s = Trim(v.get<std::string>());
                      char* end = nullptr;
                      double d = std::strtod(s.c_str(), &end);
                      if (!s.empty() && end == s.c_str() + s.size()) return Val::Own(d);
                    }
                    return Val::Own(a.get(0, json(0.0)));
                  }};
    f["string"] = {{}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                     return Val::Own(Str(Need(in, a.pos)));
                   }};
    f["bool"] = {{}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                   const json& v = Need(in, a.pos);
                   if (v.is_boolean()) return in;
                   if (IsNum(v)) return B(AsDouble(v) == 1);
                   if (v.is_string()) {
                     std::string s = Lower(Trim(v.get<std::string>()));
                     return B(s == "yes" || s == "on" || s == "1" || s == "true" || s == "y");
                   }
                   return B(false);
                 }};
    str("lower", [](const std::string& s) { return Lower(s); });
    str("upper", [](const std::string& s) { return Upper(s); });
    str("capitalize", [](const std::string& s) {
      std::string r = Lower(s);
      if (!r.empty()) r[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(r[0])));
      return r;
    });
    str("b64encode", [](const std::string& s) { return Base64Encode(s); });
    str("quote", [](const std::string& s) { return ShQuote(s); });
    str("basename", [](const std::string& s) {
      size_t p = s.rfind('/');
      return p == std::string::npos ? s : s.substr(p + 1);
    });
    str("dirname", [](const std::string& s) {
      size_t p = s.rfind('/');
      if (p == std::string::npos) return std::string();
      std::string head = s.substr(0, p + 1);
      // As os.path.dirname: trailing slashes go unless the head is all slashes.
      if (head.find_first_not_of('/') != std::string::npos)
        while (!head.empty() && head.back() == '/') head.pop_back();
      return head;
    });
    f["trim"] = {{"chars"}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                   const json& chars = a.get(0, kNull);
                   std::string s = Str(Need(in, a.pos));
                   return Val::Own(chars.is_null() ? Trim(s) : Trim(s, Str(chars)));
                 }};
    f["b64decode"] = {{}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                        auto d = Base64Decode(Str(Need(in, a.pos)));
                        if (!d) Fail(a.pos, "b64decode: the input is not valid base64");
                        return Val::Own(*d);
                      }};
    f["replace"] = {
        {"old", "new", "count"}, 2, false, false, [](const Val& in, const Args& a, Scope&) {
          return Val::Own(ReplaceAll(Str(Need(in, a.pos)), Str(a.get(0, kNull)),
                                     Str(a.get(1, kNull)), AsInt(a.get(2, json(-1)))));
        }};
    f["split"] = {{"sep", "maxsplit"}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                    return Val::Own(PySplit(Str(Need(in, a.pos)), a.get(0, kNull),
                                            AsInt(a.get(1, json(-1))), a.pos));
                  }};
    f["first"] = {{}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                    json items = Iterable(Need(in, a.pos), a.pos, "first");
                    if (items.empty()) return Val::Undef("first: the sequence is empty");
                    return Val::Own(items.front());
                  }};
    f["last"] = {{}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                   json items = Iterable(Need(in, a.pos), a.pos, "last");
                   if (items.empty()) return Val::Undef("last: the sequence is empty");
                   return Val::Own(items.back());
                 }};
    f["list"] = {{}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                   return Val::Own(Iterable(Need(in, a.pos), a.pos, "list"));
                 }};
    f["unique"] = {{}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                     return Val::Own(Unique(Iterable(Need(in, a.pos), a.pos, "unique")));
                   }};
    f["reverse"] = {{}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                      const json& v = Need(in, a.pos);
                      if (v.is_string()) {
                        std::string s = v.get<std::string>();
                        std::reverse(s.begin(), s.end());
                        return Val::Own(s);
                      }
                      json items = Iterable(v, a.pos, "reverse");
                      std::reverse(items.begin(), items.end());
                      return Val::Own(items);
                    }};
    f["sort"] = {{"reverse", "case_sensitive", "attribute"},
                 0,
                 false,
                 false,
                 [](const Val& in, const Args& a, Scope&) {
                   json items = Iterable(Need(in, a.pos), a.pos, "sort");
                   const bool rev = Truthy(a.get(0, kFalse));
                   const bool fold = !Truthy(a.get(1, kFalse));
                   const json& attr = a.get(2, kNull);
                   auto key = [&](const json& e) -> const json& {
                     return attr.is_null() ? e : Attribute(e, Str(attr), a.pos);
                   };
                   std::stable_sort(items.begin(), items.end(), [&](const json& x, const json& y) {
                     int c = Compare(key(x), key(y), a.pos, fold);
                     return rev ? c > 0 : c < 0;
                   });
                   return Val::Own(items);
                 }};
    f["select"] = {{}, 0, true, false, [](const Val& in, const Args& a, Scope& s) {
                     return Select(in, a, s, false, true);
                   }};
    f["reject"] = {{}, 0, true, false, [](const Val& in, const Args& a, Scope& s) {
                     return Select(in, a, s, false, false);
                   }};
    f["selectattr"] = {{}, 1, true, false, [](const Val& in, const Args& a, Scope& s) {
                         return Select(in, a, s, true, true);
                       }};
    f["rejectattr"] = {{}, 1, true, false, [](const Val& in, const Args& a, Scope& s) {
                         return Select(in, a, s, true, false);
                       }};
    f["map"] = {{}, 0, true, false, [](const Val& in, const Args& a, Scope& s) {
                  const json list = Iterable(Need(in, a.pos), a.pos, "map");
                  json out = json::array();
                  // map(attribute='x'), and map('attribute', 'x') as some playbooks write it.
                  std::optional<std::string> attr;
                  if (a.has(0)) attr = Str(a.get(0, kNull));
                  size_t first = 0;
                  if (!attr && a.rest.size() >= 2 && Need(a.rest[0], a.pos) == "attribute") {
                    attr = Str(Need(a.rest[1], a.pos));
                    first = 2;
                  }
                  if (attr) {
                    for (const auto& e : list) {
                      const json* f = AttributePath(e, *attr);
                      if (!f && !a.has(1))
                        Fail(a.pos, Repr(e) + " has no attribute '" + *attr + "'");
                      out.push_back(f ? *f : a.get(1, kNull));
                    }
                    return Val::Own(std::move(out));
                  }
                  if (a.rest.empty()) Fail(a.pos, "map needs a filter name or attribute=");
                  const std::string name = StrArg(Need(a.rest[first], a.pos), a.pos, "map");
                  std::vector<Val> fargs(a.rest.begin() + first + 1, a.rest.end());
                  for (const auto& e : list)
                    out.push_back(Need(CallFilter(name, Val::Ref(e), fargs, a.pos, s), a.pos));
                  return Val::Own(std::move(out));
                }};
    f["map"].kwonly = {"attribute", "default"};
    f["regex_search"] = {{"pattern"}, 1, true, false, [](const Val& in, const Args& a, Scope&) {
                           const std::string s = Str(Need(in, a.pos));
                           std::regex re = MakeRegex(Str(a.get(0, kNull)), Truthy(a.get(1, kFalse)),
                                                     Truthy(a.get(2, kFalse)), a.pos);
                           std::smatch m;
                           if (!std::regex_search(s, m, re)) return Val::Own(nullptr);
                           if (a.rest.empty()) return Val::Own(m.str(0));
                           json groups = json::array();
                           for (const auto& g : a.rest) {
                             std::string spec = Str(Need(g, a.pos));
                             if (spec.size() < 2 || spec[0] != '\\')
                               Fail(a.pos, "regex_search groups are written '\\\\1'");
                             size_t n = std::stoul(spec.substr(1));
                             groups.push_back(n < m.size() ? m.str(n) : "");
                           }
                           return Val::Own(std::move(groups));
                         }};
    f["regex_search"].kwonly = {"ignorecase", "multiline"};
    f["regex_findall"] = {{"pattern", "ignorecase", "multiline"},
                          1,
                          false,
                          false,
                          [](const Val& in, const Args& a, Scope&) {
                            const std::string s = Str(Need(in, a.pos));
                            std::regex re =
                                MakeRegex(Str(a.get(0, kNull)), Truthy(a.get(1, kFalse)),
                                          Truthy(a.get(2, kFalse)), a.pos);
                            json out = json::array();
                            for (auto it = std::sregex_iterator(s.begin(), s.end(), re);
                                 it != std::sregex_iterator(); ++it) {
                              if (it->size() <= 1) {
                                out.push_back(it->str(0));
                              } else if (it->size() == 2) {
                                out.push_back(it->str(1));
                              } else {
                                json g = json::array();
                                for (size_t i = 1; i < it->size(); ++i) g.push_back(it->str(i));
                                out.push_back(g);
                              }
                            }
                            return Val::Own(std::move(out));
                          }};
    f["regex_replace"] = {{"pattern", "replacement", "ignorecase", "multiline"},
                          1,
                          false,
                          false,
                          [](const Val& in, const Args& a, Scope&) {
                            const std::string s = Str(Need(in, a.pos));
                            std::regex re =
                                MakeRegex(Str(a.get(0, kNull)), Truthy(a.get(2, kFalse)),
                                          Truthy(a.get(3, kFalse)), a.pos);
                            return Val::Own(std::regex_replace(
                                s, re, ConvertReplacement(Str(a.get(1, kEmptyString)))));
                          }};
    f["to_json"] = {
        {"indent", "sort_keys"}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
          const json& v = Need(in, a.pos);
          if (a.has(0)) return Val::Own(v.dump(static_cast<int>(AsInt(a.get(0, kNull)))));
          return Val::Own(PyJson(v));
        }};
    f["to_nice_json"] = {
        {"indent"}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
          return Val::Own(Need(in, a.pos).dump(static_cast<int>(AsInt(a.get(0, json(4))))));
        }};
    f["from_json"] = {{}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                        const json& v = Need(in, a.pos);
                        try {
                          return Val::Own(json::parse(StrArg(v, a.pos, "from_json")));
                        } catch (const json::parse_error& e) {
                          Fail(a.pos, std::string("from_json: ") + e.what());
                        }
                      }};
    auto yaml = [](const Val& in, const Args& a, Scope&) {
      YAML::Emitter out;
      out << JsonToYaml(Need(in, a.pos));
      return Val::Own(std::string(out.c_str()) + "\n");
    };
    f["to_yaml"] = {{"indent"}, 0, false, false, yaml};
    f["to_nice_yaml"] = {{"indent"}, 0, false, false, yaml};
    f["abs"] = {{}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                  const json& v = Need(in, a.pos);
                  if (IsInt(v)) return Val::Own(std::llabs(AsInt(v)));
                  if (v.is_number()) return Val::Own(std::fabs(v.get<double>()));
                  Fail(a.pos, "abs expects a number, got " + TypeName(v));
                }};
    f["round"] = {
        {"precision", "method"}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
          const json& v = Need(in, a.pos);
          if (!IsNum(v)) Fail(a.pos, "round expects a number, got " + TypeName(v));
          double scale = std::pow(10.0, static_cast<double>(AsInt(a.get(0, json(0)))));
          std::string method = Str(a.get(1, json("common")));
          double x = AsDouble(v) * scale;
          if (method == "common")
            x = std::round(x);
          else if (method == "floor")
            x = std::floor(x);
          else if (method == "ceil")
            x = std::ceil(x);
          else
            Fail(a.pos, "round method must be common, floor or ceil");
          return Val::Own(x / scale);
        }};
    f["min"] = {{"attribute"}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                  return Extreme(in, a, false);
                }};
    f["max"] = {{"attribute"}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                  return Extreme(in, a, true);
                }};
    f["sum"] = {{"attribute", "start"}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                  const json& list = ListArg(in, a.pos, "sum");
                  json acc = a.get(1, json(0));
                  const json& attr = a.get(0, kNull);
                  for (const auto& e : list) {
                    const json& x = attr.is_null() ? e : Attribute(e, Str(attr), a.pos);
                    if (!IsNum(x) || !IsNum(acc))
                      Fail(a.pos, "sum: cannot add " + TypeName(x) + " " + Repr(x));
                    if (IsInt(x) && IsInt(acc))
                      acc = AsInt(acc) + AsInt(x);
                    else
                      acc = AsDouble(acc) + AsDouble(x);
                  }
                  return Val::Own(acc);
                }};
    f["dict2items"] = {
        {"key_name", "value_name"}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
          const json& v = Need(in, a.pos);
          if (!v.is_object()) Fail(a.pos, "dict2items expects a dict, got " + TypeName(v));
          const std::string k = Str(a.get(0, json("key")));
          const std::string val = Str(a.get(1, json("value")));
          json out = json::array();
          for (auto it = v.begin(); it != v.end(); ++it)
            out.push_back({{k, it.key()}, {val, it.value()}});
          return Val::Own(std::move(out));
        }};
    f["items2dict"] = {
        {"key_name", "value_name"}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
          const json& list = ListArg(in, a.pos, "items2dict");
          const std::string k = Str(a.get(0, json("key")));
          const std::string val = Str(a.get(1, json("value")));
          json out = json::object();
          for (const auto& e : list) {
            if (!e.is_object() || !e.contains(k) || !e.contains(val))
              Fail(a.pos, "items2dict: " + Repr(e) + " lacks '" + k + "' or '" + val + "'");
            out[Str(e[k])] = e[val];
          }
          return Val::Own(std::move(out));
        }};
    f["combine"] = {{}, 0, true, false, [](const Val& in, const Args& a, Scope&) {
                      json out = Need(in, a.pos);
                      if (!out.is_object())
                        Fail(a.pos, "combine expects dicts, got " + TypeName(out));
                      for (const auto& other : a.rest) {
                        const json& o = Need(other, a.pos);
                        if (!o.is_object())
                          Fail(a.pos, "combine expects dicts, got " + TypeName(o));
                        out = Combine(out, o, Truthy(a.get(0, kFalse)));
                      }
                      return Val::Own(std::move(out));
                    }};
    f["combine"].kwonly = {"recursive", "list_merge"};
    f["flatten"] = {
        {"levels"}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
          const json& lv = a.get(0, kNull);
          return Val::Own(Flatten(ListArg(in, a.pos, "flatten"), lv.is_null() ? -1 : AsInt(lv)));
        }};
    f["union"] = {{"other"}, 1, false, false, [](const Val& in, const Args& a, Scope&) {
                    json all = ListArg(in, a.pos, "union");
                    for (const auto& e : a.get(0, kNull)) all.push_back(e);
                    return Val::Own(Unique(all));
                  }};
    f["intersect"] = {{"other"}, 1, false, false, [](const Val& in, const Args& a, Scope&) {
                        json out = json::array();
                        for (const auto& e : ListArg(in, a.pos, "intersect"))
                          if (Contains(a.get(0, kNull), e)) out.push_back(e);
                        return Val::Own(Unique(out));
                      }};
    f["difference"] = {{"other"}, 1, false, false, [](const Val& in, const Args& a, Scope&) {
                         json out = json::array();
                         for (const auto& e : ListArg(in, a.pos, "difference"))
                           if (!Contains(a.get(0, kNull), e)) out.push_back(e);
                         return Val::Own(Unique(out));
                       }};
    f["ternary"] = {{"true_val", "false_val", "none_val"},
                    2,
                    false,
                    false,
                    [](const Val& in, const Args& a, Scope&) {
                      const json& v = Need(in, a.pos);
                      if (v.is_null() && a.has(2)) return Val::Own(a.get(2, kNull));
                      return Val::Own(Truthy(v) ? a.get(0, kNull) : a.get(1, kNull));
                    }};
    f["type_debug"] = {{}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                         return Val::Own(TypeName(Need(in, a.pos)));
                       }};
    f["indent"] = {
        {"width", "first", "blank"}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
          const json w = a.get(0, json(4));
          std::string pad = w.is_string() ? w.get<std::string>() : std::string(AsInt(w), ' ');
          const bool first = Truthy(a.get(1, kFalse));
          const bool blank = Truthy(a.get(2, kFalse));
          std::string s = Str(Need(in, a.pos)), out;
          size_t start = 0;
          for (int line = 0; start <= s.size(); ++line) {
            size_t nl = s.find('\n', start);
            std::string l = s.substr(start, nl == std::string::npos ? nl : nl - start);
            if ((line > 0 || first) && (blank || !l.empty())) out += pad;
            out += l;
            if (nl == std::string::npos) break;
            out += '\n';
            start = nl + 1;
          }
          return Val::Own(out);
        }};
    return f;
  }();
  return filters;
}

// Methods of Python's str and dict that playbooks call ("x.startswith('a')").
using MethodFn = std::function<Val(const json& self, const std::vector<Val>& args, size_t pos)>;

const json& MArg(const std::vector<Val>& args, size_t i, size_t pos, const json& fallback) {
  return i < args.size() ? Need(args[i], pos) : fallback;
}

const std::map<std::string, std::pair<bool, MethodFn>>& Methods() {
  // The bool says which type owns the method: true for str, false for dict.
  static const std::map<std::string, std::pair<bool, MethodFn>> methods = {
      {"lower",
       {true, [](const json& s, const std::vector<Val>&,
                 size_t) { return Val::Own(Lower(s.get<std::string>())); }}},
      {"upper",
       {true, [](const json& s, const std::vector<Val>&,
                 size_t) { return Val::Own(Upper(s.get<std::string>())); }}},
      {"strip",
       {true,
        [](const json& s, const std::vector<Val>& a, size_t pos) {
          const json& c = MArg(a, 0, pos, kNull);
          return Val::Own(c.is_null() ? Trim(s.get<std::string>())
                                      : Trim(s.get<std::string>(), Str(c)));
        }}},
      {"lstrip",
       {true,
        [](const json& s, const std::vector<Val>& a, size_t pos) {
          std::string chars = Str(MArg(a, 0, pos, json(" \t\n\r\f\v")));
          const std::string& v = s.get_ref<const std::string&>();
          size_t b = v.find_first_not_of(chars);
          return Val::Own(b == std::string::npos ? "" : v.substr(b));
        }}},
      {"rstrip",
       {true,
        [](const json& s, const std::vector<Val>& a, size_t pos) {
          std::string chars = Str(MArg(a, 0, pos, json(" \t\n\r\f\v")));
          const std::string& v = s.get_ref<const std::string&>();
          size_t e = v.find_last_not_of(chars);
          return Val::Own(e == std::string::npos ? "" : v.substr(0, e + 1));
        }}},
      {"startswith",
       {true,
        [](const json& s, const std::vector<Val>& a, size_t pos) {
          return B(s.get<std::string>().rfind(Str(MArg(a, 0, pos, kEmptyString)), 0) == 0);
        }}},
      {"endswith",
       {true,
        [](const json& s, const std::vector<Val>& a, size_t pos) {
          const std::string& v = s.get_ref<const std::string&>();
          std::string x = Str(MArg(a, 0, pos, kEmptyString));
          return B(v.size() >= x.size() && v.compare(v.size() - x.size(), x.size(), x) == 0);
        }}},
      {"split",
       {true,
        [](const json& s, const std::vector<Val>& a, size_t pos) {
          return Val::Own(PySplit(s.get<std::string>(), MArg(a, 0, pos, kNull),
                                  AsInt(MArg(a, 1, pos, json(-1))), pos));
        }}},
      {"splitlines",
       {true,
        [](const json& s, const std::vector<Val>&, size_t) {
          json out = json::array();
          const std::string& v = s.get_ref<const std::string&>();
          size_t start = 0;
          while (start < v.size()) {
            size_t nl = v.find('\n', start);
            std::string l = v.substr(start, nl == std::string::npos ? nl : nl - start);
            if (!l.empty() && l.back() == '\r') l.pop_back();
            out.push_back(l);
            if (nl == std::string::npos) break;
            start = nl + 1;
          }
          return Val::Own(std::move(out));
        }}},
      {"replace",
       {true,
        [](const json& s, const std::vector<Val>& a, size_t pos) {
          return Val::Own(ReplaceAll(s.get<std::string>(), Str(MArg(a, 0, pos, kEmptyString)),
                                     Str(MArg(a, 1, pos, kEmptyString))));
        }}},
      {"join",
       {true,
        [](const json& s, const std::vector<Val>& a, size_t pos) {
          json items = Iterable(MArg(a, 0, pos, json::array()), pos, "join");
          std::string out;
          for (size_t i = 0; i < items.size(); ++i)
            out += (i ? s.get<std::string>() : "") + Str(items[i]);
          return Val::Own(out);
        }}},
      {"keys",
       {false, [](const json& d, const std::vector<Val>&,
                  size_t pos) { return Val::Own(Iterable(d, pos, "keys")); }}},
      {"values",
       {false,
        [](const json& d, const std::vector<Val>&, size_t) {
          json out = json::array();
          for (const auto& v : d) out.push_back(v);
          return Val::Own(std::move(out));
        }}},
      {"items",
       {false,
        [](const json& d, const std::vector<Val>&, size_t) {
          json out = json::array();
          for (auto it = d.begin(); it != d.end(); ++it)
            out.push_back(json::array({it.key(), it.value()}));
          return Val::Own(std::move(out));
        }}},
      {"get",
       {false,
        [](const json& d, const std::vector<Val>& a, size_t pos) {
          std::string key = Str(MArg(a, 0, pos, kNull));
          auto f = d.find(key);
          return Val::Own(f == d.end() ? MArg(a, 1, pos, kNull) : *f);
        }}},
  };
  return methods;
}

// ---------------------------------------------------------------------------
// Parser

std::string StripCollection(const std::string& name) {
  for (const char* prefix : {"ansible.builtin.", "ansible.utils.", "community.general."})
    if (name.rfind(prefix, 0) == 0) return name.substr(std::strlen(prefix));
  return name;
}

const std::set<std::string>& Keywords() {
  static const std::set<std::string> k = {"and", "or", "not", "in", "is", "if", "else"};
  return k;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

  const Token& Peek(size_t ahead = 0) const { return t_[std::min(i_ + ahead, t_.size() - 1)]; }
  bool AtEnd() const { return Peek().kind == Tok::kEnd; }
  bool IsOp(const char* op, size_t ahead = 0) const {
    return Peek(ahead).kind == Tok::kOp && Peek(ahead).text == op;
  }
  bool IsName(const char* name, size_t ahead = 0) const {
    return Peek(ahead).kind == Tok::kName && Peek(ahead).text == name;
  }
  const Token& Next() {
    const Token& t = Peek();
    if (i_ < t_.size() - 1) ++i_;
    return t;
  }
  [[noreturn]] void Unexpected(const char* expected = nullptr) const {
    const Token& t = Peek();
    std::string what = t.kind == Tok::kEnd      ? "end of expression"
                       : t.kind == Tok::kString ? "string '" + t.text + "'"
                                                : "'" + t.text + "'";
    SyntaxFail(t.pos,
               "unexpected " + what + (expected ? std::string(", expected ") + expected : ""));
  }
  void Expect(const char* op) {
    if (!IsOp(op)) Unexpected((std::string("'") + op + "'").c_str());
    Next();
  }
  std::string ExpectName(const char* what) {
    if (Peek().kind != Tok::kName) Unexpected(what);
    return Next().text;
  }
  void ExpectEnd() {
    if (!AtEnd()) Unexpected();
  }

  NodeP Expression() {
    Guard g(this);
    NodeP n = Or();
    if (IsName("if")) {
      size_t pos = Next().pos;
      auto c = MakeNode(Node::kCond, pos);
      c->kids.push_back(std::move(n));
      c->kids.push_back(Or());
      if (IsName("else")) {
        Next();
        c->kids.push_back(Expression());
      } else {
        c->kids.push_back(nullptr);
      }
      return c;
    }
    return n;
  }

 private:
  struct Guard {
    Parser* p;
    explicit Guard(Parser* parser) : p(parser) {
      if (++p->nesting_ > kMaxNesting) SyntaxFail(p->Peek().pos, "expression is nested too deeply");
    }
    ~Guard() { --p->nesting_; }
  };

  NodeP Binary(Node::Kind kind, const std::string& op, size_t pos, NodeP l, NodeP r) {
    auto n = MakeNode(kind, pos);
    n->name = op;
    n->kids.push_back(std::move(l));
    n->kids.push_back(std::move(r));
    return n;
  }

  NodeP Or() {
    NodeP l = And();
    while (IsName("or")) {
      size_t pos = Next().pos;
      l = Binary(Node::kOr, "or", pos, std::move(l), And());
    }
    return l;
  }
  NodeP And() {
    NodeP l = Not();
    while (IsName("and")) {
      size_t pos = Next().pos;
      l = Binary(Node::kAnd, "and", pos, std::move(l), Not());
    }
    return l;
  }
  NodeP Not() {
    if (IsName("not")) {
      Guard g(this);
      auto n = MakeNode(Node::kNot, Next().pos);
      n->kids.push_back(Not());
      return n;
    }
    return Compare();
  }
  NodeP Compare() {
    NodeP l = Math1();
    while (true) {
      const Token& t = Peek();
      std::string op;
      if (t.kind == Tok::kOp && (t.text == "==" || t.text == "!=" || t.text == "<" ||
                                 t.text == ">" || t.text == "<=" || t.text == ">=")) {
        op = t.text;
        Next();
      } else if (IsName("in")) {
        op = "in";
        Next();
      } else if (IsName("not") && IsName("in", 1)) {
        op = "not in";
        Next();
        Next();
      } else {
        return l;
      }
      l = Binary(Node::kBinary, op, t.pos, std::move(l), Math1());
    }
  }
  NodeP Math1() {
    NodeP l = Concat();
    while (IsOp("+") || IsOp("-")) {
      const Token& t = Next();
      l = Binary(Node::kBinary, t.text, t.pos, std::move(l), Concat());
    }
    return l;
  }
  NodeP Concat() {
    NodeP l = Math2();
    while (IsOp("~")) {
      const Token& t = Next();
      l = Binary(Node::kBinary, "~", t.pos, std::move(l), Math2());
    }
    return l;
  }
  NodeP Math2() {
    NodeP l = Pow();
    while (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%")) {
      const Token& t = Next();
      l = Binary(Node::kBinary, t.text, t.pos, std::move(l), Pow());
    }
    return l;
  }
  NodeP Pow() {
    NodeP l = Unary(true);
    while (IsOp("**")) {
      const Token& t = Next();
      l = Binary(Node::kBinary, "**", t.pos, std::move(l), Unary(true));
    }
    return l;
  }
  NodeP Unary(bool with_filter) {
    Guard g(this);
    NodeP n;
    if (IsOp("-") || IsOp("+")) {
      const Token& t = Next();
      n = MakeNode(t.text == "-" ? Node::kNeg : Node::kPos, t.pos);
      n->kids.push_back(Unary(false));
    } else {
      n = Primary();
    }
    n = Postfix(std::move(n));
    if (with_filter) n = FilterExpr(std::move(n));
    return n;
  }

  NodeP Primary() {
    const Token& t = Peek();
    switch (t.kind) {
      case Tok::kName: {
        Next();
        auto n = MakeNode(Node::kLiteral, t.pos);
        if (t.text == "true" || t.text == "True") {
          n->value = true;
        } else if (t.text == "false" || t.text == "False") {
          n->value = false;
        } else if (t.text == "none" || t.text == "None") {
          n->value = nullptr;
        } else if (Keywords().count(t.text)) {
          --i_;
          Unexpected();
        } else {
          n->kind = Node::kVar;
          n->name = n->path = t.text;
        }
        return n;
      }
      case Tok::kString: {
        auto n = MakeNode(Node::kLiteral, t.pos);
        std::string s;
        while (Peek().kind == Tok::kString) s += Next().text;  // "a" "b" is "ab"
        n->value = s;
        return n;
      }
      case Tok::kInt:
      case Tok::kFloat: {
        auto n = MakeNode(Node::kLiteral, t.pos);
        n->value = Next().value;
        return n;
      }
      case Tok::kOp:
        if (t.text == "(") {
          Next();
          if (IsOp(")")) {  // () is an empty tuple: a list here
            Next();
            return MakeNode(Node::kList, t.pos);
          }
          NodeP e = Expression();
          if (IsOp(",")) {  // a tuple: a list here
            auto list = MakeNode(Node::kList, t.pos);
            list->kids.push_back(std::move(e));
            while (IsOp(",")) {
              Next();
              if (IsOp(")")) break;
              list->kids.push_back(Expression());
            }
            e = std::move(list);
          }
          Expect(")");
          return e;
        }
        if (t.text == "[") {
          Next();
          auto list = MakeNode(Node::kList, t.pos);
          while (!IsOp("]")) {
            list->kids.push_back(Expression());
            if (!IsOp(",")) break;
            Next();
          }
          Expect("]");
          return list;
        }
        if (t.text == "{") {
          Next();
          auto dict = MakeNode(Node::kDict, t.pos);
          while (!IsOp("}")) {
            dict->kids.push_back(Expression());
            Expect(":");
            dict->kids.push_back(Expression());
            if (!IsOp(",")) break;
            Next();
          }
          Expect("}");
          return dict;
        }
        Unexpected();
      case Tok::kEnd:
        Unexpected();
    }
    Unexpected();
  }

  NodeP Postfix(NodeP n) {
    while (true) {
      if (IsOp(".")) {
        size_t pos = Next().pos;
        const Token& t = Peek();
        if (t.kind != Tok::kName && t.kind != Tok::kInt) Unexpected("an attribute name");
        Next();
        if (IsOp("(")) {
          auto m = MakeNode(Node::kMethod, pos);
          m->name = t.text;
          if (!Methods().count(t.text)) SyntaxFail(t.pos, "unknown method '" + t.text + "'");
          m->kids.push_back(std::move(n));
          CallArgs(*m);
          n = std::move(m);
          continue;
        }
        auto a = MakeNode(Node::kAttr, pos);
        a->name = t.text;
        if (!n->path.empty()) a->path = n->path + "." + t.text;
        a->kids.push_back(std::move(n));
        n = std::move(a);
      } else if (IsOp("[")) {
        size_t pos = Next().pos;
        NodeP parts[3];
        int colons = 0;
        while (!IsOp("]")) {
          if (IsOp(":")) {
            if (++colons > 2) Unexpected();
            Next();
            continue;
          }
          if (parts[colons]) Unexpected("':' or ']'");
          parts[colons] = Expression();
        }
        Expect("]");
        if (colons == 0) {
          if (!parts[0]) SyntaxFail(pos, "empty subscript");
          auto ix = MakeNode(Node::kIndex, pos);
          if (!n->path.empty() && parts[0]->kind == Node::kLiteral)
            ix->path = n->path + "[" + Repr(parts[0]->value) + "]";
          ix->kids.push_back(std::move(n));
          ix->kids.push_back(std::move(parts[0]));
          n = std::move(ix);
        } else {
          auto sl = MakeNode(Node::kSlice, pos);
          sl->kids.push_back(std::move(n));
          for (auto& p : parts) sl->kids.push_back(std::move(p));
          n = std::move(sl);
        }
      } else if (IsOp("(")) {
        if (n->kind != Node::kVar)
          SyntaxFail(Peek().pos, "only functions and methods can be called");
        if (n->name != "range")
          SyntaxFail(n->pos,
                     "unknown function '" + n->name + "'" +
                         (n->name == "lookup" || n->name == "query" ? " (lookups are not supported)"
                                                                    : ""));
        auto c = MakeNode(Node::kCall, n->pos);
        c->name = n->name;
        CallArgs(*c);
        if (c->kids.empty() || c->kids.size() > 3 || !c->kwargs.empty())
          SyntaxFail(c->pos, "range() takes 1 to 3 positional arguments");
        n = std::move(c);
      } else {
        return n;
      }
    }
  }

  // "(a, b, name=c)"; positional arguments are appended to n.kids.
  void CallArgs(Node& n) {
    Expect("(");
    while (!IsOp(")")) {
      if (Peek().kind == Tok::kName && IsOp("=", 1)) {
        std::string name = Next().text;
        Next();
        n.kwargs.emplace_back(name, Expression());
      } else {
        if (!n.kwargs.empty())
          SyntaxFail(Peek().pos, "positional argument after a keyword argument");
        n.kids.push_back(Expression());
      }
      if (!IsOp(",")) break;
      Next();
    }
    Expect(")");
  }

  // Checks a call against the callee's parameters.
  void CheckArity(const Node& n, const Callable& c, const std::string& what, size_t subject) {
    size_t positional = n.kids.size() - subject;
    if (!c.variadic && positional > c.params.size())
      SyntaxFail(n.pos, what + " takes at most " + std::to_string(c.params.size()) + " argument" +
                            (c.params.size() == 1 ? "" : "s") + ", got " +
                            std::to_string(positional));
    size_t given = positional;
    for (const auto& [name, value] : n.kwargs) {
      auto it = std::find(c.params.begin(), c.params.end(), name);
      if (it == c.params.end() &&
          std::find(c.kwonly.begin(), c.kwonly.end(), name) == c.kwonly.end())
        SyntaxFail(value->pos, what + " has no argument '" + name + "'");
      if (it != c.params.end() && static_cast<size_t>(it - c.params.begin()) < positional)
        SyntaxFail(value->pos, what + " got argument '" + name + "' twice");
      ++given;
    }
    if (given < c.required)
      SyntaxFail(n.pos, what + " needs at least " + std::to_string(c.required) + " argument" +
                            (c.required == 1 ? "" : "s"));
  }

  NodeP FilterExpr(NodeP n) {
    while (true) {
      if (IsOp("|")) {
        size_t pos = Next().pos;
        const Token& t = Peek();
        std::string name = DottedName("a filter name");
        auto f = MakeNode(Node::kFilter, pos);
        f->name = StripCollection(name);
        auto it = Filters().find(f->name);
        if (it == Filters().end()) SyntaxFail(t.pos, "unknown filter '" + name + "'");
        f->kids.push_back(std::move(n));
        if (IsOp("(")) CallArgs(*f);
        CheckArity(*f, it->second, "filter '" + name + "'", 1);
        n = std::move(f);
      } else if (IsName("is")) {
        size_t pos = Next().pos;
        auto test = MakeNode(Node::kTest, pos);
        if (IsName("not")) {
          Next();
          test->negate = true;
        }
        const Token& t = Peek();
        std::string name = DottedName("a test name");
        test->name = StripCollection(name);
        auto it = Tests().find(test->name);
        if (it == Tests().end()) SyntaxFail(t.pos, "unknown test '" + name + "'");
        test->kids.push_back(std::move(n));
        if (IsOp("(")) {
          CallArgs(*test);
        } else {
          // Jinja's one-argument form: "x is divisibleby 3".
          const Token& a = Peek();
          if (a.kind == Tok::kString || a.kind == Tok::kInt || a.kind == Tok::kFloat ||
              (a.kind == Tok::kName && !Keywords().count(a.text)))
            test->kids.push_back(Postfix(Primary()));
        }
        CheckArity(*test, it->second, "test '" + name + "'", 1);
        n = std::move(test);
      } else {
        return n;
      }
    }
  }

  std::string DottedName(const char* what) {
    std::string name = ExpectName(what);
    while (IsOp(".") && Peek(1).kind == Tok::kName) {
      Next();
      name += "." + Next().text;
    }
    return name;
  }

  std::vector<Token> t_;
  size_t i_ = 0;
  int nesting_ = 0;
};

// ---------------------------------------------------------------------------
// Evaluation

Val Eval(const Node& n, Scope& s);

Args BindArgs(const Callable& c, std::vector<Val> positional,
              std::vector<std::pair<std::string, Val>> kwargs, size_t pos) {
  Args a;
  a.pos = pos;
  a.at.resize(c.params.size() + c.kwonly.size());
  for (size_t i = 0; i < positional.size(); ++i) {
    if (i < c.params.size())
      a.at[i] = std::move(positional[i]);
    else
      a.rest.push_back(std::move(positional[i]));
  }
  for (auto& [name, v] : kwargs) {
    auto it = std::find(c.params.begin(), c.params.end(), name);
    if (it != c.params.end()) {
      a.at[it - c.params.begin()] = std::move(v);
      continue;
    }
    auto kw = std::find(c.kwonly.begin(), c.kwonly.end(), name);
    if (kw != c.kwonly.end()) a.at[c.params.size() + (kw - c.kwonly.begin())] = std::move(v);
  }
  return a;
}

Val CallTest(const std::string& name, const Val& subject, std::vector<Val> args, size_t pos,
             Scope& scope) {
  auto it = Tests().find(StripCollection(name));
  if (it == Tests().end()) Fail(pos, "unknown test '" + name + "'");
  if (subject.undefined && !it->second.accepts_undefined) Fail(pos, subject.why);
  return it->second.fn(subject, BindArgs(it->second, std::move(args), {}, pos), scope);
}

Val CallFilter(const std::string& name, const Val& subject, std::vector<Val> args, size_t pos,
               Scope& scope) {
  auto it = Filters().find(StripCollection(name));
  if (it == Filters().end()) Fail(pos, "unknown filter '" + name + "'");
  if (subject.undefined && !it->second.accepts_undefined) Fail(pos, subject.why);
  return it->second.fn(subject, BindArgs(it->second, std::move(args), {}, pos), scope);
}

struct Num {
  bool is_float;
  int64_t i;
  double d;
};

Num ToNum(const json& v) {
  if (v.is_number_float()) return {true, 0, v.get<double>()};
  int64_t i = AsInt(v);
  return {false, i, static_cast<double>(i)};
}

Val Arith(const std::string& op, const json& a, const json& b, size_t pos) {
  if (op == "+") {
    if (a.is_string() && b.is_string())
      return Val::Own(a.get<std::string>() + b.get<std::string>());
    if (a.is_array() && b.is_array()) {
      json out = a;
      for (const auto& e : b) out.push_back(e);
      return Val::Own(std::move(out));
    }
  }
  if (op == "*") {
    const json* seq = a.is_string() || a.is_array()   ? &a
                      : b.is_string() || b.is_array() ? &b
                                                      : nullptr;
    const json* count = seq == &a ? &b : &a;
    if (seq && IsInt(*count)) {
      int64_t k = std::max<int64_t>(0, AsInt(*count));
      if (k * static_cast<int64_t>(seq->is_string() ? seq->get_ref<const std::string&>().size()
                                                    : seq->size()) >
          10000000)
        Fail(pos, "repetition too large");
      json out = seq->is_string() ? json("") : json::array();
      for (int64_t i = 0; i < k; ++i) {
        if (seq->is_string())
          out.get_ref<std::string&>() += seq->get<std::string>();
        else
          for (const auto& e : *seq) out.push_back(e);
      }
      return Val::Own(std::move(out));
    }
  }
  if (op == "%" && a.is_string()) Fail(pos, "string formatting with '%' is not supported");
  if (!IsNum(a) || !IsNum(b))
    Fail(pos, "unsupported operand types for " + op + ": '" + TypeName(a) + "' and '" +
                  TypeName(b) + "'");
  Num x = ToNum(a), y = ToNum(b);
  const bool fl = x.is_float || y.is_float;
  if (op == "+") return fl ? Val::Own(x.d + y.d) : Val::Own(x.i + y.i);
  if (op == "-") return fl ? Val::Own(x.d - y.d) : Val::Own(x.i - y.i);
  if (op == "*") return fl ? Val::Own(x.d * y.d) : Val::Own(x.i * y.i);
  if (op == "**") {
    if (!fl && y.i >= 0) {
      int64_t r = 1;
      for (int64_t i = 0; i < y.i && i < 64; ++i) r *= x.i;
      return Val::Own(r);
    }
    return Val::Own(std::pow(x.d, y.d));
  }
  if (y.d == 0) Fail(pos, "division by zero");
  if (op == "/") return Val::Own(x.d / y.d);
  if (op == "//") {
    if (fl) return Val::Own(std::floor(x.d / y.d));
    int64_t q = x.i / y.i;
    if ((x.i % y.i != 0) && ((x.i < 0) != (y.i < 0))) --q;
    return Val::Own(q);
  }
  if (op == "%") {
    if (fl) {
      double r = std::fmod(x.d, y.d);
      if (r != 0 && ((r < 0) != (y.d < 0))) r += y.d;
      return Val::Own(r);
    }
    int64_t r = x.i % y.i;
    if (r != 0 && ((r < 0) != (y.i < 0))) r += y.i;
    return Val::Own(r);
  }
  Fail(pos, "unknown operator '" + op + "'");
}

bool In(const json& item, const json& container, size_t pos) {
  if (container.is_string()) {
    if (!item.is_string())
      Fail(pos, "'in <string>' requires a string as left operand, not " + TypeName(item));
    return container.get_ref<const std::string&>().find(item.get<std::string>()) !=
           std::string::npos;
  }
  if (container.is_array()) return Contains(container, item);
  if (container.is_object()) return item.is_string() && container.contains(item.get<std::string>());
  Fail(pos, "argument of type '" + TypeName(container) + "' is not iterable");
}

Val GetAttr(const Val& base, const Node& n, const std::string& key) {
  if (base.undefined) return base;  // chains as Ansible's undefined does
  const json& v = base.j();
  const std::string owner = n.kids[0]->path.empty() ? TypeName(v) + " object" : n.kids[0]->path;
  if (v.is_object()) {
    auto f = v.find(key);
    if (f != v.end()) {
      if (base.ref) return Val::Ref(*f);
      return Val::Own(*f);
    }
    return Val::Undef("'" + owner + "' has no attribute '" + key + "'");
  }
  if (v.is_array() && !key.empty() && key.find_first_not_of("0123456789") == std::string::npos) {
    size_t i = std::stoul(key);
    if (i < v.size()) return base.ref ? Val::Ref(v[i]) : Val::Own(v[i]);
    return Val::Undef("'" + owner + "' has no item " + key);
  }
  return Val::Undef("'" + owner + "' (" + TypeName(v) + ") has no attribute '" + key + "'");
}

Val GetIndex(const Val& base, const Node& n, const json& key) {
  if (base.undefined) return base;
  const json& v = base.j();
  const std::string owner = n.kids[0]->path.empty() ? TypeName(v) + " object" : n.kids[0]->path;
  if (v.is_array() || v.is_string()) {
    if (!IsInt(key)) Fail(n.pos, TypeName(v) + " indices must be integers, not " + TypeName(key));
    int64_t i = AsInt(key);
    const int64_t size =
        static_cast<int64_t>(v.is_string() ? v.get_ref<const std::string&>().size() : v.size());
    if (i < 0) i += size;
    if (i < 0 || i >= size)
      return Val::Undef("'" + owner + "' has no item " + Str(key) + " (length " +
                        std::to_string(size) + ")");
    if (v.is_string()) return Val::Own(std::string(1, v.get_ref<const std::string&>()[i]));
    return base.ref ? Val::Ref(v[i]) : Val::Own(v[i]);
  }
  if (v.is_object()) return GetAttr(base, n, Str(key));
  return Val::Undef("'" + owner + "' (" + TypeName(v) + ") has no item " + Repr(key));
}

Val EvalSlice(const Node& n, Scope& s) {
  const Val base = Eval(*n.kids[0], s);
  const json& v = Need(base, n.pos);
  int64_t vals[3] = {0, 0, 1};
  bool given[3] = {false, false, false};
  for (int k = 0; k < 3; ++k) {
    if (!n.kids[k + 1]) continue;
    const Val xv = Eval(*n.kids[k + 1], s);
    const json& x = Need(xv, n.kids[k + 1]->pos);
    if (x.is_null()) continue;
    if (!IsInt(x)) Fail(n.pos, "slice indices must be integers");
    vals[k] = AsInt(x);
    given[k] = true;
  }
  const int64_t step = vals[2];
  if (step == 0) Fail(n.pos, "slice step cannot be zero");
  json items = v.is_string() ? json::array() : v;
  if (!v.is_string() && !v.is_array()) Fail(n.pos, "'" + TypeName(v) + "' cannot be sliced");
  const std::string* str = v.is_string() ? &v.get_ref<const std::string&>() : nullptr;
  const int64_t size = str ? static_cast<int64_t>(str->size()) : static_cast<int64_t>(v.size());
  auto clamp = [&](int64_t i, int64_t lo, int64_t hi) {
    if (i < 0) i += size;
    return std::max(lo, std::min(hi, i));
  };
  int64_t start = given[0] ? clamp(vals[0], step > 0 ? 0 : -1, step > 0 ? size : size - 1)
                           : (step > 0 ? 0 : size - 1);
  int64_t stop = given[1] ? clamp(vals[1], step > 0 ? 0 : -1, step > 0 ? size : size - 1)
                          : (step > 0 ? size : -1);
  std::string out_s;
  json out = json::array();
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (str)
      out_s += (*str)[i];
    else
      out.push_back(v[i]);
  }
  return str ? Val::Own(out_s) : Val::Own(std::move(out));
}

Val Eval(const Node& n, Scope& s) {
  switch (n.kind) {
    case Node::kLiteral:
      return Val::Ref(n.value);
    case Node::kVar: {
      if (const json* v = s.Find(n.name)) return Val::Ref(*v);
      if (n.name == "omit") return Val::Own(kOmitPlaceholder);
      return Val::Undef("undefined variable '" + n.name + "'");
    }
    case Node::kAttr:
      return GetAttr(Eval(*n.kids[0], s), n, n.name);
    case Node::kIndex: {
      Val base = Eval(*n.kids[0], s);
      Val key = Eval(*n.kids[1], s);
      return GetIndex(base, n, Need(key, n.kids[1]->pos));
    }
    case Node::kSlice:
      return EvalSlice(n, s);
    case Node::kList: {
      json out = json::array();
      for (const auto& k : n.kids) out.push_back(Need(Eval(*k, s), k->pos));
      return Val::Own(std::move(out));
    }
    case Node::kDict: {
      json out = json::object();
      for (size_t i = 0; i + 1 < n.kids.size(); i += 2) {
        const Val key = Eval(*n.kids[i], s);
        out[Str(Need(key, n.kids[i]->pos))] = Need(Eval(*n.kids[i + 1], s), n.kids[i + 1]->pos);
      }
      return Val::Own(std::move(out));
    }
    case Node::kNeg:
    case Node::kPos: {
      const Val operand = Eval(*n.kids[0], s);
      const json& v = Need(operand, n.kids[0]->pos);
      if (!IsNum(v))
        Fail(n.pos, "bad operand type for unary " + std::string(n.kind == Node::kNeg ? "-" : "+") +
                        ": '" + TypeName(v) + "'");
      if (n.kind == Node::kPos) return Val::Own(v.is_boolean() ? json(AsInt(v)) : v);
      if (v.is_number_float()) return Val::Own(-v.get<double>());
      return Val::Own(-AsInt(v));
    }
    case Node::kNot:
      return B(!Truthy(Need(Eval(*n.kids[0], s), n.kids[0]->pos)));
    case Node::kAnd:
    case Node::kOr: {
      Val l = Eval(*n.kids[0], s);
      bool t = Truthy(Need(l, n.kids[0]->pos));
      if ((n.kind == Node::kAnd) != t) return l;  // and: falsy left; or: truthy left
      Val r = Eval(*n.kids[1], s);
      Need(r, n.kids[1]->pos);
      return r;
    }
    case Node::kCond: {
      if (Truthy(Need(Eval(*n.kids[1], s), n.kids[1]->pos))) return Eval(*n.kids[0], s);
      if (n.kids[2]) return Eval(*n.kids[2], s);
      return Val::Undef("the inline if has no else and its condition is false");
    }
    case Node::kBinary: {
      Val lv = Eval(*n.kids[0], s);
      Val rv = Eval(*n.kids[1], s);
      const json& l = Need(lv, n.kids[0]->pos);
      const json& r = Need(rv, n.kids[1]->pos);
      const std::string& op = n.name;
      if (op == "==") return B(Equal(l, r));
      if (op == "!=") return B(!Equal(l, r));
      if (op == "<") return B(Compare(l, r, n.pos) < 0);
      if (op == ">") return B(Compare(l, r, n.pos) > 0);
      if (op == "<=") return B(Compare(l, r, n.pos) <= 0);
      if (op == ">=") return B(Compare(l, r, n.pos) >= 0);
      if (op == "in") return B(In(l, r, n.pos));
      if (op == "not in") return B(!In(l, r, n.pos));
      if (op == "~") return Val::Own(Str(l) + Str(r));
      return Arith(op, l, r, n.pos);
    }
    case Node::kTest:
    case Node::kFilter: {
      const auto& table = n.kind == Node::kTest ? Tests() : Filters();
      const Callable& c = table.at(n.name);
      Val subject = Eval(*n.kids[0], s);
      if (subject.undefined && !c.accepts_undefined) Fail(n.kids[0]->pos, subject.why);
      std::vector<Val> positional;
      for (size_t i = 1; i < n.kids.size(); ++i) {
        Val v = Eval(*n.kids[i], s);
        Need(v, n.kids[i]->pos);
        positional.push_back(std::move(v));
      }
      std::vector<std::pair<std::string, Val>> kwargs;
      for (const auto& [name, node] : n.kwargs) {
        Val v = Eval(*node, s);
        Need(v, node->pos);
        kwargs.emplace_back(name, std::move(v));
      }
      Val r = c.fn(subject, BindArgs(c, std::move(positional), std::move(kwargs), n.pos), s);
      if (n.kind == Node::kTest && n.negate) return B(!Truthy(r.j()));
      return r;
    }
    case Node::kCall: {  // range()
      int64_t a[3] = {0, 0, 1};
      std::vector<int64_t> given;
      for (const auto& k : n.kids) {
        const Val arg = Eval(*k, s);
        const json& v = Need(arg, k->pos);
        if (!IsInt(v)) Fail(k->pos, "range() arguments must be integers");
        given.push_back(AsInt(v));
      }
      if (given.size() == 1) {
        a[1] = given[0];
      } else {
        for (size_t i = 0; i < given.size(); ++i) a[i] = given[i];
      }
      if (a[2] == 0) Fail(n.pos, "range() step must not be zero");
      json out = json::array();
      for (int64_t i = a[0]; a[2] > 0 ? i < a[1] : i > a[1]; i += a[2]) {
        if (static_cast<int64_t>(out.size()) >= kMaxRange)
          Fail(n.pos, "range() is longer than " + std::to_string(kMaxRange));
        out.push_back(i);
      }
      return Val::Own(std::move(out));
    }
    case Node::kMethod: {
      Val self = Eval(*n.kids[0], s);
      const json& v = Need(self, n.kids[0]->pos);
      const auto& [on_str, fn] = Methods().at(n.name);
      if (on_str ? !v.is_string() : !v.is_object())
        Fail(n.pos, "'" + TypeName(v) + "' object has no method '" + n.name + "'");
      std::vector<Val> args;
      for (size_t i = 1; i < n.kids.size(); ++i) {
        Val a = Eval(*n.kids[i], s);
        Need(a, n.kids[i]->pos);
        args.push_back(std::move(a));
      }
      if (!n.kwargs.empty()) Fail(n.pos, "method '" + n.name + "' takes no keyword arguments");
      return fn(v, args, n.pos);
    }
  }
  Fail(n.pos, "internal error: unknown expression node");
}

NodeP ParseExpressionText(const std::string& expr) {
  Lexed lexed = Lex(expr, 0, "", 0, "");
  Parser p(std::move(lexed.tokens));
  NodeP n = p.Expression();
  p.ExpectEnd();
  return n;
}

// ---------------------------------------------------------------------------
// Templates

struct TNode {
  enum Kind { kText, kOutput, kIf, kFor, kSet };
  explicit TNode(Kind k) : kind(k) {}
  Kind kind;
  size_t pos = 0;
  std::string text;                                            // kText
  NodeP expr;                                                  // kOutput, kSet, kFor's iterable
  std::vector<std::string> targets;                            // kFor (1 or 2 names), kSet (1)
  std::vector<std::pair<NodeP, std::vector<TNode>>> branches;  // kIf: condition, body
  std::vector<TNode> body;                                     // kFor
  std::vector<TNode> else_body;                                // kIf, kFor
  bool has_else = false;
};

using TBody = std::vector<TNode>;

// One open block while parsing: where its nodes go now.
struct Open {
  TNode* node;  // the if/for node
  TBody* body;  // the branch being filled
  std::string tag;
  size_t pos;
};

class TemplateParser {
 public:
  explicit TemplateParser(const std::string& text) : src_(text) {}

  TBody Parse() {
    TBody root;
    std::vector<Open> stack;
    auto target = [&]() -> TBody& { return stack.empty() ? root : *stack.back().body; };
    size_t pos = 0;
    bool trim_next = false;     // "-%}" before: strip the text's leading whitespace
    bool block_before = false;  // trim_blocks: drop one newline after a block tag
    const size_t n = src_.size();
    while (pos < n) {
      size_t open = FindOpen(pos);
      std::string text = src_.substr(pos, (open == std::string::npos ? n : open) - pos);
      if (trim_next) {
        size_t b = text.find_first_not_of(" \t\r\n");
        text = b == std::string::npos ? "" : text.substr(b);
      } else if (block_before) {
        if (text.rfind("\r\n", 0) == 0)
          text = text.substr(2);
        else if (text.rfind("\n", 0) == 0)
          text = text.substr(1);
      }
      trim_next = block_before = false;
      if (open != std::string::npos && open + 2 < n && src_[open + 2] == '-') {
        size_t e = text.find_last_not_of(" \t\r\n");
        text = e == std::string::npos ? "" : text.substr(0, e + 1);
      }
      if (!text.empty()) {
        TNode t(TNode::kText);
        t.pos = pos;
        t.text = std::move(text);
        target().push_back(std::move(t));
      }
      if (open == std::string::npos) break;
      const char kind = src_[open + 1];
      size_t inner = open + 2 + (open + 2 < n && src_[open + 2] == '-' ? 1 : 0);
      if (kind == '#') {
        size_t close = src_.find("#}", inner);
        if (close == std::string::npos) SyntaxFail(open, "'{#' is not closed (expected '#}')");
        trim_next = close > inner && src_[close - 1] == '-';
        block_before = true;
        pos = close + 2;
        continue;
      }
      if (kind == '{') {
        Lexed lx = Lex(src_, inner, "}}", open, "{{");
        Parser p(std::move(lx.tokens));
        if (p.AtEnd()) SyntaxFail(open, "empty expression '{{ }}'");
        TNode t(TNode::kOutput);
        t.pos = open;
        t.expr = p.Expression();
        p.ExpectEnd();
        target().push_back(std::move(t));
        trim_next = lx.trim_after;
        pos = lx.end;
        continue;
      }
      // {% ... %}
      Lexed lx = Lex(src_, inner, "%}", open, "{%");
      trim_next = lx.trim_after;
      block_before = true;
      pos = lx.end;
      Parser p(std::move(lx.tokens));
      if (p.AtEnd()) SyntaxFail(open, "empty block tag '{% %}'");
      const Token tag = p.Next();
      if (tag.kind != Tok::kName) SyntaxFail(tag.pos, "expected a tag name after '{%'");
      const std::string& name = tag.text;
      if (name == "if") {
        TNode t(TNode::kIf);
        t.pos = open;
        NodeP cond = p.Expression();
        p.ExpectEnd();
        t.branches.emplace_back(std::move(cond), TBody{});
        target().push_back(std::move(t));
        TNode* node = &target().back();
        stack.push_back({node, &node->branches.back().second, "if", open});
      } else if (name == "elif") {
        if (stack.empty() || stack.back().tag != "if" || stack.back().node->has_else)
          SyntaxFail(tag.pos, "unexpected 'elif' (no open 'if' block)");
        NodeP cond = p.Expression();
        p.ExpectEnd();
        TNode* node = stack.back().node;
        node->branches.emplace_back(std::move(cond), TBody{});
        stack.back().body = &node->branches.back().second;
      } else if (name == "else") {
        p.ExpectEnd();
        if (stack.empty() || stack.back().node->has_else)
          SyntaxFail(tag.pos, "unexpected 'else' (no open 'if' or 'for' block)");
        TNode* node = stack.back().node;
        node->has_else = true;
        stack.back().body = &node->else_body;
      } else if (name == "endif" || name == "endfor") {
        p.ExpectEnd();
        const std::string want = name.substr(3);
        if (stack.empty() || stack.back().tag != want)
          SyntaxFail(tag.pos,
                     "unexpected '" + name + "'" +
                         (stack.empty() ? " (no open block)"
                                        : " (the open block is '" + stack.back().tag + "' at " +
                                              Where(stack.back().pos) + ", expected 'end" +
                                              stack.back().tag + "')"));
        stack.pop_back();
      } else if (name == "for") {
        TNode t(TNode::kFor);
        t.pos = open;
        t.targets.push_back(p.ExpectName("a loop variable"));
        while (p.IsOp(",")) {
          p.Next();
          t.targets.push_back(p.ExpectName("a loop variable"));
        }
        if (t.targets.size() > 2) SyntaxFail(tag.pos, "a for loop unpacks at most two names");
        for (const auto& v : t.targets)
          if (Keywords().count(v)) SyntaxFail(tag.pos, "'" + v + "' cannot be a loop variable");
        if (!p.IsName("in")) p.Unexpected("'in'");
        p.Next();
        t.expr = p.Expression();
        p.ExpectEnd();
        target().push_back(std::move(t));
        TNode* node = &target().back();
        stack.push_back({node, &node->body, "for", open});
      } else if (name == "set") {
        TNode t(TNode::kSet);
        t.pos = open;
        t.targets.push_back(p.ExpectName("a variable name"));
        if (!p.IsOp("=")) p.Unexpected("'=' (block assignments are not supported)");
        p.Next();
        t.expr = p.Expression();
        p.ExpectEnd();
        target().push_back(std::move(t));
      } else if (name == "raw") {
        p.ExpectEnd();
        size_t end = FindEndRaw(pos);
        if (end == std::string::npos)
          SyntaxFail(open, "'raw' block is not closed (expected '{% endraw %}')");
        TNode t(TNode::kText);
        t.pos = pos;
        t.text = src_.substr(pos, end - pos);
        target().push_back(std::move(t));
        size_t close = src_.find("%}", end) + 2;
        pos = close;
      } else {
        SyntaxFail(
            tag.pos,
            "unknown tag '" + name + "'" +
                (name == "endraw" ? ""
                                  : " (supported: if, elif, else, endif, for, endfor, set, raw)"));
      }
    }
    if (!stack.empty())
      SyntaxFail(stack.back().pos, "'" + stack.back().tag + "' block is not closed (expected 'end" +
                                       stack.back().tag + "')");
    return root;
  }

 private:
  size_t FindOpen(size_t from) const {
    while (true) {
      size_t p = src_.find('{', from);
      if (p == std::string::npos || p + 1 >= src_.size()) return std::string::npos;
      char c = src_[p + 1];
      if (c == '{' || c == '%' || c == '#') return p;
      from = p + 1;
    }
  }
  size_t FindEndRaw(size_t from) const {
    static const std::regex re(R"(\{%-?\s*endraw\s*-?%\})");
    std::smatch m;
    auto begin = src_.begin() + static_cast<std::ptrdiff_t>(from);
    if (!std::regex_search(begin, src_.end(), m, re)) return std::string::npos;
    return from + static_cast<size_t>(m.position(0));
  }
  std::string Where(size_t pos) const {
    size_t line =
        1 + std::count(src_.begin(), src_.begin() + static_cast<std::ptrdiff_t>(pos), '\n');
    return "line " + std::to_string(line);
  }

  const std::string& src_;
};

void Render(const TBody& body, Scope& s, std::string& out);

std::string Output(const json& v) {
  if (v.is_null()) return "";  // Ansible's finalize: None prints as nothing
  return Str(v);
}

void Render(const TBody& body, Scope& s, std::string& out) {
  for (const auto& t : body) {
    switch (t.kind) {
      case TNode::kText:
        out += t.text;
        break;
      case TNode::kOutput:
        out += Output(Need(Eval(*t.expr, s), t.expr->pos));
        break;
      case TNode::kSet:
        s.frames.back()[t.targets[0]] = Need(Eval(*t.expr, s), t.expr->pos);
        break;
      case TNode::kIf: {
        bool done = false;
        for (const auto& [cond, branch] : t.branches) {
          if (Truthy(Need(Eval(*cond, s), cond->pos))) {
            Render(branch, s, out);
            done = true;
            break;
          }
        }
        if (!done) Render(t.else_body, s, out);
        break;
      }
      case TNode::kFor: {
        const json items = Iterable(Need(Eval(*t.expr, s), t.expr->pos), t.expr->pos, "for");
        const int64_t len = static_cast<int64_t>(items.size());
        for (int64_t i = 0; i < len; ++i) {
          json frame = json::object();
          frame["loop"] = {{"index", i + 1},      {"index0", i},
                           {"revindex", len - i}, {"revindex0", len - i - 1},
                           {"first", i == 0},     {"last", i == len - 1},
                           {"length", len}};
          const json& item = items[i];
          if (t.targets.size() == 1) {
            frame[t.targets[0]] = item;
          } else {
            if (!item.is_array() || item.size() != 2)
              Fail(t.expr->pos, "cannot unpack " + Repr(item) + " into two loop variables");
            frame[t.targets[0]] = item[0];
            frame[t.targets[1]] = item[1];
          }
          s.frames.push_back(std::move(frame));
          try {
            Render(t.body, s, out);
          } catch (...) {
            s.frames.pop_back();
            throw;
          }
          s.frames.pop_back();
        }
        if (len == 0) Render(t.else_body, s, out);
        break;
      }
    }
  }
}

std::pair<size_t, size_t> LineCol(const std::string& text, size_t pos) {
  pos = std::min(pos, text.size());
  size_t line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(pos), '\n');
  size_t bol = pos == 0 ? std::string::npos : text.rfind('\n', pos - 1);
  size_t col = bol == std::string::npos ? pos + 1 : pos - bol;
  return {line, col};
}

// Positions: "at column 7" in one-line text, "at line 3, column 7" otherwise.
std::string Position(const std::string& text, size_t pos) {
  auto [line, col] = LineCol(text, pos);
  if (text.find('\n') == std::string::npos) return "at column " + std::to_string(col);
  return "at line " + std::to_string(line) + ", column " + std::to_string(col);
}

std::string Describe(const std::string& text, const JinjaError& e) {
  // Runtime errors in one-line text name the variable; that is enough there.
  if (!e.syntax && text.find('\n') == std::string::npos) return e.message;
  return e.message + " " + Position(text, e.pos);
}

bool HasTemplate(const std::string& s) {
  return s.find("{{") != std::string::npos || s.find("{%") != std::string::npos ||
         s.find("{#") != std::string::npos;
}

// Renders a string; a lone "{{ expr }}" keeps the expression's type.
json RenderString(const std::string& text, Scope& s) {
  TemplateParser parser(text);
  TBody body = parser.Parse();
  if (body.size() == 1 && body[0].kind == TNode::kOutput)
    return Need(Eval(*body[0].expr, s), body[0].expr->pos);
  std::string out;
  Render(body, s, out);
  return out;
}

// `failed_path` and `failed_text` say which string a JinjaError came from.
json RenderJson(const json& value, Scope& s, const std::string& path, std::string& failed_path,
                const std::string*& failed_text) {
  if (value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    if (!HasTemplate(text)) return value;
    failed_path = path;
    failed_text = &text;
    return RenderString(text, s);
  }
  if (value.is_array()) {
    json out = json::array();
    for (size_t i = 0; i < value.size(); ++i) {
      json r =
          RenderJson(value[i], s, path + "[" + std::to_string(i) + "]", failed_path, failed_text);
      if (r.is_string() && r == kOmitPlaceholder) continue;
      out.push_back(std::move(r));
    }
    return out;
  }
  if (value.is_object()) {
    json out = json::object();
    for (auto it = value.begin(); it != value.end(); ++it) {
      json r = RenderJson(it.value(), s, path.empty() ? it.key() : path + "." + it.key(),
                          failed_path, failed_text);
      if (r.is_string() && r == kOmitPlaceholder) continue;  // "x | default(omit)"
      out[it.key()] = std::move(r);
    }
    return out;
  }
  return value;
}

// Ansible's conversion of a condition's value: booleans, and the strings
// YAML and Ansible read as booleans.
bool ConditionValue(const json& v) {
  if (v.is_string()) {
    std::string s = Lower(Trim(v.get<std::string>()));
    if (s == "true" || s == "yes" || s == "on" || s == "1" || s == "y") return true;
    if (s == "false" || s == "no" || s == "off" || s == "0" || s == "n" || s.empty()) return false;
  }
  return Truthy(v);
}

// A condition that is exactly "{{ expr }}": the expression inside.
std::optional<std::string> BareExpression(const std::string& cond) {
  std::string t = Trim(cond);
  if (t.size() < 4 || t.rfind("{{", 0) != 0 || t.compare(t.size() - 2, 2, "}}") != 0)
    return std::nullopt;
  std::string inner = t.substr(2, t.size() - 4);
  if (inner.find("{{") != std::string::npos || inner.find("}}") != std::string::npos)
    return std::nullopt;
  return inner;
}

}  // namespace

Result<nlohmann::json> EvalExpression(const std::string& expr, const nlohmann::json& vars) {
  try {
    NodeP n = ParseExpressionText(expr);
    Scope s(vars);
    return Need(Eval(*n, s), n->pos);
  } catch (const JinjaError& e) {
    return Status::Invalid(Describe(expr, e));
  }
}

Result<bool> EvalCondition(const std::string& expr, const nlohmann::json& vars) {
  const std::string t = Trim(expr);
  if (t.empty()) return true;  // an empty `when` holds, as in Ansible
  if (auto inner = BareExpression(t)) {
    auto v = EvalExpression(*inner, vars);
    if (!v.ok()) return v.status();
    return ConditionValue(*v);
  }
  std::string text = t;
  if (HasTemplate(t)) {
    // "{{ a }} == 1": render first, then read the result as an expression.
    auto rendered = RenderTemplate(t, vars);
    if (!rendered.ok()) return rendered.status();
    text = Trim(*rendered);
    std::string l = Lower(text);
    if (l.empty() || l == "true" || l == "false" || l == "yes" || l == "no")
      return ConditionValue(json(text));
  }
  auto v = EvalExpression(text, vars);
  if (!v.ok()) return v.status();
  return ConditionValue(*v);
}

Result<std::string> RenderTemplate(const std::string& text, const nlohmann::json& vars) {
  try {
    TemplateParser parser(text);
    TBody body = parser.Parse();
    Scope s(vars);
    std::string out;
    Render(body, s, out);
    return out;
  } catch (const JinjaError& e) {
    return Status::Invalid(Describe(text, e));
  }
}

Result<std::string> RenderTemplateFile(const std::string& text, const nlohmann::json& vars,
                                       const std::string& name) {
  try {
    TemplateParser parser(text);
    TBody body = parser.Parse();
    Scope s(vars);
    std::string out;
    Render(body, s, out);
    return out;
  } catch (const JinjaError& e) {
    auto [line, col] = LineCol(text, e.pos);
    return Status::Invalid(name + ":" + std::to_string(line) + ":" + std::to_string(col) + ": " +
                           e.message);
  }
}

Result<nlohmann::json> RenderValue(const nlohmann::json& value, const nlohmann::json& vars) {
  std::string failed_path;
  const std::string* failed_text = nullptr;
  try {
    Scope s(vars);
    return RenderJson(value, s, "", failed_path, failed_text);
  } catch (const JinjaError& e) {
    // Name the argument that failed, so a task's message points at it.
    std::string where = failed_path.empty() ? "" : "in '" + failed_path + "': ";
    return Status::Invalid(where + (failed_text ? Describe(*failed_text, e) : e.message));
  }
}

Status CheckTemplateSyntax(const std::string& text) {
  try {
    TemplateParser parser(text);
    parser.Parse();
    return Status::Ok();
  } catch (const JinjaError& e) {
    return Status::Invalid(Describe(text, e));
  }
}

Status CheckTemplateSyntax(const std::string& text, const std::string& name) {
  try {
    TemplateParser parser(text);
    parser.Parse();
    return Status::Ok();
  } catch (const JinjaError& e) {
    auto [line, col] = LineCol(text, e.pos);
    return Status::Invalid(name + ":" + std::to_string(line) + ":" + std::to_string(col) + ": " +
                           e.message);
  }
}

Status CheckExpressionSyntax(const std::string& expr) {
  try {
    ParseExpressionText(expr);
    return Status::Ok();
  } catch (const JinjaError& e) {
    return Status::Invalid(Describe(expr, e));
  }
}

Status CheckConditionSyntax(const std::string& cond) {
  if (auto inner = BareExpression(cond)) return CheckExpressionSyntax(*inner);
  if (HasTemplate(cond)) return CheckTemplateSyntax(cond);
  if (Trim(cond).empty()) return Status::Ok();
  return CheckExpressionSyntax(cond);
}

bool IsTemplated(const std::string& text) {
  return HasTemplate(text);
}

}  // namespace prov
