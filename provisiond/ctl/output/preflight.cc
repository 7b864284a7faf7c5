#include "preflight.h"

#include <algorithm>

#include "format.h"

namespace prov::ctl {

std::string RenderPreflight(const nlohmann::json& reply) {
  const nlohmann::json& checks = Array(reply, "checks");
  size_t name_width = 0;
  for (const auto& c : checks) name_width = std::max(name_width, Str(c, "name").size());
  std::string out;
  size_t failed = 0;
  std::vector<std::string> fatal;
  for (const auto& c : checks) {
    const bool ok = Bool(c, "ok");
    if (!ok) ++failed;
    if (!ok && Bool(c, "fatal")) fatal.push_back(Str(c, "name"));
    std::string line = std::string(ok ? "ok  " : "FAIL") + "  " + Pad(Str(c, "name"), name_width) +
                       "  " + Str(c, "detail");
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  if (checks.empty()) return "no checks were run\n";
  if (!failed) return out + "all " + std::to_string(checks.size()) + " checks passed\n";
  out += std::to_string(failed) + " of " + std::to_string(checks.size()) + " checks failed";
  if (!fatal.empty()) out += "; provisiond would not start with " + Join(fatal, ", ") + " failing";
  return out + "\n";
}

}  // namespace prov::ctl
