// A deliberately small template language for the files provisiond renders
// (dnsmasq config, iPXE scripts): {{name}} is replaced by a value; a name
// without a value is an error, so a typo never renders as an empty string.
#pragma once

#include <map>
#include <string>

#include "base/result.h"

namespace prov {

using TemplateValues = std::map<std::string, std::string>;

// Renders `text`; `name` (the template's file) is used in error messages,
// which give the line of the unknown or unterminated placeholder.
Result<std::string> RenderTemplate(const std::string& text, const TemplateValues& values,
                                   const std::string& name);

}  // namespace prov
