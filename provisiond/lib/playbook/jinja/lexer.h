// The expression lexer (internal to playbook/jinja/): the tokens of one
// "{{ ... }}", "{% ... %}" or bare expression, each with its position in the
// text so messages can point at it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "playbook/jinja/value.h"

namespace prov::jinja {

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

// Lexes an expression starting at `pos` of `src`. With an empty `close` it
// runs to the end of `src`; otherwise it stops at `close` ("}}" or "%}")
// outside brackets, which a '-' may precede for whitespace control.
Lexed Lex(const std::string& src, size_t pos, const std::string& close, size_t open_pos,
          const std::string& opener);

}  // namespace prov::jinja
