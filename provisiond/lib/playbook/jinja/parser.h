// The expression parser (internal to playbook/jinja/): recursive descent over
// the lexer's tokens, in Jinja2's precedence, into ast.h's tree. Templates
// use it for what is inside "{{ }}" and "{% %}".
#pragma once

#include <algorithm>
#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include "playbook/jinja/ast.h"
#include "playbook/jinja/lexer.h"

namespace prov::jinja {

struct Callable;

// "ansible.builtin.upper" is "upper": playbooks may name filters and tests
// with their collection.
std::string StripCollection(const std::string& name);
const std::set<std::string>& Keywords();

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
  [[noreturn]] void Unexpected(const char* expected = nullptr) const;
  void Expect(const char* op);
  std::string ExpectName(const char* what);
  void ExpectEnd();

  NodeP Expression();

 private:
  struct Guard {
    Parser* p;
    explicit Guard(Parser* parser);
    ~Guard();
  };

  NodeP Binary(Node::Kind kind, const std::string& op, size_t pos, NodeP l, NodeP r);
  NodeP Or();
  NodeP And();
  NodeP Not();
  NodeP Compare();
  NodeP Math1();
  NodeP Concat();
  NodeP Math2();
  NodeP Pow();
  NodeP Unary(bool with_filter);
  NodeP Primary();
  NodeP Postfix(NodeP n);
  void CallArgs(Node& n);
  void CheckArity(const Node& n, const Callable& c, const std::string& what, size_t subject);
  NodeP FilterExpr(NodeP n);
  std::string DottedName(const char* what);

  std::vector<Token> t_;
  size_t i_ = 0;
  int nesting_ = 0;
};

// A whole text as one expression (a condition, debug's var).
NodeP ParseExpressionText(const std::string& expr);

}  // namespace prov::jinja
