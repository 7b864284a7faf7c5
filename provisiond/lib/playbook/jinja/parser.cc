// Jinja2's expression grammar, lowest precedence first: "x if c else y", or,
// and, not, comparisons and in, + -, ~, * / // %, **, unary - +, then
// attributes, subscripts, calls, filters and tests. Filter, test and method
// names and argument counts are checked here, so a typo fails the load.
#include "playbook/jinja/parser.h"

#include <algorithm>
#include <cstring>

#include "playbook/jinja/eval.h"

namespace prov::jinja {
namespace {

// Deepest nesting accepted: a broken template must not exhaust the stack.
constexpr int kMaxNesting = 100;

}  // namespace

std::string StripCollection(const std::string& name) {
  for (const char* prefix : {"ansible.builtin.", "ansible.utils.", "community.general."})
    if (name.rfind(prefix, 0) == 0) return name.substr(std::strlen(prefix));
  return name;
}

const std::set<std::string>& Keywords() {
  static const std::set<std::string> k = {"and", "or", "not", "in", "is", "if", "else"};
  return k;
}

Parser::Guard::Guard(Parser* parser) : p(parser) {
  if (++p->nesting_ > kMaxNesting) SyntaxFail(p->Peek().pos, "expression is nested too deeply");
}

Parser::Guard::~Guard() {
  --p->nesting_;
}

void Parser::Unexpected(const char* expected) const {
  const Token& t = Peek();
  std::string what = t.kind == Tok::kEnd      ? "end of expression"
                     : t.kind == Tok::kString ? "string '" + t.text + "'"
                                              : "'" + t.text + "'";
  SyntaxFail(t.pos, "unexpected " + what + (expected ? std::string(", expected ") + expected : ""));
}

void Parser::Expect(const char* op) {
  if (!IsOp(op)) Unexpected((std::string("'") + op + "'").c_str());
  Next();
}

std::string Parser::ExpectName(const char* what) {
  if (Peek().kind != Tok::kName) Unexpected(what);
  return Next().text;
}

void Parser::ExpectEnd() {
  if (!AtEnd()) Unexpected();
}

NodeP Parser::Expression() {
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

NodeP Parser::Binary(Node::Kind kind, const std::string& op, size_t pos, NodeP l, NodeP r) {
  auto n = MakeNode(kind, pos);
  n->name = op;
  n->kids.push_back(std::move(l));
  n->kids.push_back(std::move(r));
  return n;
}

NodeP Parser::Or() {
  NodeP l = And();
  while (IsName("or")) {
    size_t pos = Next().pos;
    l = Binary(Node::kOr, "or", pos, std::move(l), And());
  }
  return l;
}

NodeP Parser::And() {
  NodeP l = Not();
  while (IsName("and")) {
    size_t pos = Next().pos;
    l = Binary(Node::kAnd, "and", pos, std::move(l), Not());
  }
  return l;
}

NodeP Parser::Not() {
  if (IsName("not")) {
    Guard g(this);
    auto n = MakeNode(Node::kNot, Next().pos);
    n->kids.push_back(Not());
    return n;
  }
  return Compare();
}

NodeP Parser::Compare() {
  NodeP l = Math1();
  while (true) {
    const Token& t = Peek();
    std::string op;
    if (t.kind == Tok::kOp && (t.text == "==" || t.text == "!=" || t.text == "<" || t.text == ">" ||
                               t.text == "<=" || t.text == ">=")) {
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

NodeP Parser::Math1() {
  NodeP l = Concat();
  while (IsOp("+") || IsOp("-")) {
    const Token& t = Next();
    l = Binary(Node::kBinary, t.text, t.pos, std::move(l), Concat());
  }
  return l;
}

NodeP Parser::Concat() {
  NodeP l = Math2();
  while (IsOp("~")) {
    const Token& t = Next();
    l = Binary(Node::kBinary, "~", t.pos, std::move(l), Math2());
  }
  return l;
}

NodeP Parser::Math2() {
  NodeP l = Pow();
  while (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%")) {
    const Token& t = Next();
    l = Binary(Node::kBinary, t.text, t.pos, std::move(l), Pow());
  }
  return l;
}

NodeP Parser::Pow() {
  NodeP l = Unary(true);
  while (IsOp("**")) {
    const Token& t = Next();
    l = Binary(Node::kBinary, "**", t.pos, std::move(l), Unary(true));
  }
  return l;
}

NodeP Parser::Unary(bool with_filter) {
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

NodeP Parser::Primary() {
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

NodeP Parser::Postfix(NodeP n) {
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
      if (n->kind != Node::kVar) SyntaxFail(Peek().pos, "only functions and methods can be called");
      if (n->name != "range")
        SyntaxFail(
            n->pos,
            "unknown function '" + n->name + "'" +
                (n->name == "lookup" || n->name == "query" ? " (lookups are not supported)" : ""));
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
void Parser::CallArgs(Node& n) {
  Expect("(");
  while (!IsOp(")")) {
    if (Peek().kind == Tok::kName && IsOp("=", 1)) {
      std::string name = Next().text;
      Next();
      n.kwargs.emplace_back(name, Expression());
    } else {
      if (!n.kwargs.empty()) SyntaxFail(Peek().pos, "positional argument after a keyword argument");
      n.kids.push_back(Expression());
    }
    if (!IsOp(",")) break;
    Next();
  }
  Expect(")");
}

// Checks a call against the callee's parameters.
void Parser::CheckArity(const Node& n, const Callable& c, const std::string& what, size_t subject) {
  size_t positional = n.kids.size() - subject;
  if (!c.variadic && positional > c.params.size())
    SyntaxFail(n.pos, what + " takes at most " + std::to_string(c.params.size()) + " argument" +
                          (c.params.size() == 1 ? "" : "s") + ", got " +
                          std::to_string(positional));
  size_t given = positional;
  for (const auto& [name, value] : n.kwargs) {
    auto it = std::find(c.params.begin(), c.params.end(), name);
    if (it == c.params.end() && std::find(c.kwonly.begin(), c.kwonly.end(), name) == c.kwonly.end())
      SyntaxFail(value->pos, what + " has no argument '" + name + "'");
    if (it != c.params.end() && static_cast<size_t>(it - c.params.begin()) < positional)
      SyntaxFail(value->pos, what + " got argument '" + name + "' twice");
    ++given;
  }
  if (given < c.required)
    SyntaxFail(n.pos, what + " needs at least " + std::to_string(c.required) + " argument" +
                          (c.required == 1 ? "" : "s"));
}

NodeP Parser::FilterExpr(NodeP n) {
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

std::string Parser::DottedName(const char* what) {
  std::string name = ExpectName(what);
  while (IsOp(".") && Peek(1).kind == Tok::kName) {
    Next();
    name += "." + Next().text;
  }
  return name;
}
NodeP ParseExpressionText(const std::string& expr) {
  Lexed lexed = Lex(expr, 0, "", 0, "");
  Parser p(std::move(lexed.tokens));
  NodeP n = p.Expression();
  p.ExpectEnd();
  return n;
}

}  // namespace prov::jinja
