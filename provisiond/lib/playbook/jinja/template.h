// Templates (internal to playbook/jinja/): text with "{{ }}" and {% %} blocks.
// Each function throws JinjaError; jinja.cc turns it into a Status.
#pragma once

#include <string>

#include "playbook/jinja/eval.h"
#include "playbook/jinja/value.h"

namespace prov::jinja {

// True when `s` contains "{{", "{%" or "{#".
bool HasTemplate(const std::string& s);

// Parses only: the syntax errors.
void ParseTemplate(const std::string& text);
std::string RenderTemplateText(const std::string& text, const json& vars);

// Renders every string inside `value`; a lone "{{ expr }}" keeps the
// expression's type. `failed_path` and `failed_text` say which string a
// JinjaError came from.
json RenderJson(const json& value, Scope& s, const std::string& path, std::string& failed_path,
                const std::string*& failed_text);

}  // namespace prov::jinja
