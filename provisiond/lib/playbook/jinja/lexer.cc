// Jinja2's expression tokens, with Python's literals: '' and "" strings with
// their escapes, integers and floats with "_" separators.
#include "playbook/jinja/lexer.h"

#include <cctype>
#include <charconv>
#include <cstdlib>

#include "playbook/jinja/text.h"

namespace prov::jinja {
namespace {

bool IsNameStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

}  // namespace

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
          SyntaxFail(start, "unexpected character '" + std::string(1, c) + "'");
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

}  // namespace prov::jinja
