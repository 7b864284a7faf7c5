// The Jinja2 subset (playbook/jinja/) playbooks carry: the first byte picks
// how the rest is used (a template rendered, an expression, a condition, a
// syntax check only, a whole YAML value rendered), over variables like a
// play's.
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "playbook/jinja/jinja.h"

namespace {

const nlohmann::json& Vars() {
  static const nlohmann::json vars = nlohmann::json::parse(R"({
    "inventory_hostname": "lab0", "ansible_hostname": "lab0", "gpu_count": 2,
    "groups": {"all": ["lab0", "lab1"]}, "items": [1, 2, 3], "names": ["a", "b"],
    "hostvars": {"lab0": {"ansible_host": "10.99.0.10", "facts": {"cpus": 4}},
                 "lab1": {"ansible_host": "10.99.0.11", "facts": {"cpus": 8}}},
    "s": "Hello World", "n": -7, "f": 2.5, "t": true, "z": null, "empty": [],
    "d": {"k": "v", "nested": {"list": [1, {"x": "y"}]}}, "big": 9223372036854775807
  })");
  return vars;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > 16 * 1024) return 0;
  std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 6) {
    case 0: {
      auto ok = prov::CheckTemplateSyntax(text);
      auto r = prov::RenderTemplate(text, Vars());
      (void)ok;
      (void)r;
      break;
    }
    case 1: {
      auto ok = prov::CheckExpressionSyntax(text);
      auto r = prov::EvalExpression(text, Vars());
      (void)ok;
      if (r.ok()) (void)r->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      break;
    }
    case 2: {
      auto ok = prov::CheckConditionSyntax(text);
      auto r = prov::EvalCondition(text, Vars());
      (void)ok;
      (void)r;
      break;
    }
    case 3:
      (void)prov::RenderTemplateFile(text, Vars(), "templates/fuzz.j2");
      (void)prov::IsTemplated(text);
      break;
    case 4: {
      nlohmann::json value = {{"a", text}, {"list", {text, 1, true}}};
      (void)prov::RenderValue(value, Vars());
      break;
    }
    default:
      (void)prov::CheckTemplateSyntax(text, "templates/fuzz.j2");
      break;
  }
  return 0;
}
