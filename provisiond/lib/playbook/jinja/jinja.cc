// The public face of playbook/jinja/ (jinja.h): parses and evaluates through
// the pieces beside it, and turns the JinjaError they throw into a Status
// whose message says where.
#include "playbook/jinja/jinja.h"

#include <algorithm>
#include <optional>

#include "playbook/jinja/eval.h"
#include "playbook/jinja/parser.h"
#include "playbook/jinja/template.h"
#include "playbook/jinja/text.h"
#include "playbook/jinja/value.h"

namespace prov {

const char* const kOmitPlaceholder = "__omit_place_holder__";

namespace {

using jinja::Eval;
using jinja::HasTemplate;
using jinja::JinjaError;
using jinja::json;
using jinja::Need;
using jinja::NodeP;
using jinja::ParseExpressionText;
using jinja::ParseTemplate;
using jinja::RenderJson;
using jinja::RenderTemplateText;
using jinja::Scope;
using jinja::Truthy;

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
    return RenderTemplateText(text, vars);
  } catch (const JinjaError& e) {
    return Status::Invalid(Describe(text, e));
  }
}

Result<std::string> RenderTemplateFile(const std::string& text, const nlohmann::json& vars,
                                       const std::string& name) {
  try {
    return RenderTemplateText(text, vars);
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
    ParseTemplate(text);
    return Status::Ok();
  } catch (const JinjaError& e) {
    return Status::Invalid(Describe(text, e));
  }
}

Status CheckTemplateSyntax(const std::string& text, const std::string& name) {
  try {
    ParseTemplate(text);
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
