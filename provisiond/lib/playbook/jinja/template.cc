// Templates: text with "{{ }}", {% if %}/{% elif %}/{% else %}, {% for %},
// {% set %}, {% raw %} and {# #}, parsed into a tree of blocks and rendered
// with Jinja2's whitespace rules as Ansible sets them (trim_blocks).
#include "playbook/jinja/template.h"

#include <algorithm>
#include <regex>

#include "playbook/jinja/jinja.h"
#include "playbook/jinja/lexer.h"
#include "playbook/jinja/parser.h"
#include "playbook/jinja/value.h"

namespace prov::jinja {
namespace {

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

}  // namespace

bool HasTemplate(const std::string& s) {
  return s.find("{{") != std::string::npos || s.find("{%") != std::string::npos ||
         s.find("{#") != std::string::npos;
}

void ParseTemplate(const std::string& text) {
  TemplateParser parser(text);
  parser.Parse();
}

std::string RenderTemplateText(const std::string& text, const json& vars) {
  TemplateParser parser(text);
  TBody body = parser.Parse();
  Scope s(vars);
  std::string out;
  Render(body, s, out);
  return out;
}

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

}  // namespace prov::jinja
