#include "base/template.h"

#include <algorithm>

namespace prov {

Result<std::string> RenderTemplate(const std::string& text, const TemplateValues& values,
                                   const std::string& name) {
  std::string out;
  out.reserve(text.size() + 256);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t open = text.find("{{", pos);
    if (open == std::string::npos) {
      out.append(text, pos, std::string::npos);
      break;
    }
    out.append(text, pos, open - pos);
    auto line = [&] {
      return std::to_string(std::count(text.begin(), text.begin() + open, '\n') + 1);
    };
    size_t close = text.find("}}", open + 2);
    if (close == std::string::npos)
      return Status::Invalid(name + ":" + line() + ": '{{' without '}}'");
    std::string key = text.substr(open + 2, close - open - 2);
    key.erase(0, key.find_first_not_of(' '));
    key.erase(key.find_last_not_of(' ') + 1);
    auto it = values.find(key);
    if (it == values.end())
      return Status::Invalid(name + ":" + line() + ": no value for '{{" + key + "}}'");
    out += it->second;
    pos = close + 2;
  }
  return out;
}

}  // namespace prov
