// The part of Jinja2 that playbooks use: "{{ expr }}" substitution with
// filters, conditions for `when` / `changed_when` / `failed_when` / `until`,
// and, in template files, {% if %}/{% elif %}/{% else %}/{% endif %} and
// {% for x in expr %}/{% endfor %} blocks and {# comments #}. Values are JSON.
// What is supported is documented in docs/playbooks.md; anything else is an
// error that names the construct, never a silent pass.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "base/result.h"

namespace prov {

// Evaluates one expression ("item.name | default('x')", "result.rc == 0").
Result<nlohmann::json> EvalExpression(const std::string& expr, const nlohmann::json& vars);

// Evaluates a condition as Ansible does (the expression without braces;
// a bare "{{ x }}" is accepted too) and converts it to a bool.
Result<bool> EvalCondition(const std::string& expr, const nlohmann::json& vars);

// Renders a whole text (a template file or a string in a task).
Result<std::string> RenderTemplate(const std::string& text, const nlohmann::json& vars);

// Renders every string inside `value` (objects and arrays recursively). A
// string that is exactly one "{{ expr }}" keeps the expression's type (a list
// stays a list), as Ansible does. Errors name the failing key ("in 'dest': ...").
//
// Values found in `vars` are used as they are, never rendered again: a
// registered stdout containing "{{" is data. Whoever builds `vars` renders
// play and task variables (RenderValue) when it sets them.
Result<nlohmann::json> RenderValue(const nlohmann::json& value, const nlohmann::json& vars);

// Parses without evaluating: the syntax errors a playbook load reports.
// Unknown filters, tests and functions and wrong argument counts are syntax
// errors too.
Status CheckTemplateSyntax(const std::string& text);
Status CheckExpressionSyntax(const std::string& expr);

// As RenderTemplate and CheckTemplateSyntax, for a template file: errors read
// "name:line:col: message".
Result<std::string> RenderTemplateFile(const std::string& text, const nlohmann::json& vars,
                                       const std::string& name);
Status CheckTemplateSyntax(const std::string& text, const std::string& name);

// Checks a condition as EvalCondition reads it ("x == 1", "{{ x }}").
Status CheckConditionSyntax(const std::string& cond);

// True when `text` contains "{{", "{%" or "{#", i.e. needs rendering.
bool IsTemplated(const std::string& text);

// What `omit` evaluates to; RenderValue drops mapping keys and list items
// whose value renders to it ("mode: '{{ m | default(omit) }}'").
extern const char* const kOmitPlaceholder;

}  // namespace prov
