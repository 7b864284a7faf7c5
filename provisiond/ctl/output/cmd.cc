#include "cmd.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include "base/hostlist.h"
#include "format.h"

namespace prov::ctl {

using json = nlohmann::json;

std::string RenderCommandResults(const json& results) {
  // Group by identical (stdout, stderr, exit code) among nodes that ran it.
  std::map<std::tuple<std::string, std::string, int64_t>, std::vector<std::string>> groups;
  std::vector<std::string> problems;
  int failed = 0;
  for (const auto& r : results) {
    const std::string status = Str(r, "status");
    const bool ran = Int(r, "exit_code") >= 0 || status == "ok" || status == "timeout";
    if (status != "ok") {
      ++failed;
      problems.push_back(Str(r, "node") + ": " +
                         (!Str(r, "error").empty() ? status + ": " + Str(r, "error")
                                                   : "exit code " + Str(r, "exit_code")));
    }
    if (ran)
      groups[{Str(r, "stdout"), Str(r, "stderr"), Int(r, "exit_code")}].push_back(Str(r, "node"));
  }
  std::string out;
  for (const auto& [key, nodes] : groups) {
    const auto& [stdout_text, stderr_text, rc] = key;
    std::string header = CompressHostlist(nodes) + " (" + std::to_string(nodes.size()) + ")";
    if (rc != 0) header += " exit " + std::to_string(rc);
    std::string rule(std::min<size_t>(header.size(), 72), '-');
    out += rule + "\n" + header + "\n" + rule + "\n";
    out += stdout_text;
    if (!stdout_text.empty() && stdout_text.back() != '\n') out += "\n";
    if (!stderr_text.empty()) out += PrefixLines(stderr_text, "stderr| ");
  }
  for (const auto& p : problems) out += "failed: " + p + "\n";
  out += std::to_string(results.size() - failed) + "/" + std::to_string(results.size()) +
         " node(s) ok\n";
  return out;
}

}  // namespace prov::ctl
