#include "run_output.h"

#include <algorithm>
#include <map>

#include "base/hostlist.h"
#include "output.h"

namespace prov::ctl {
namespace {

using json = nlohmann::json;

std::string S(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

int64_t I(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

std::string Duration(const json& run) {
  int64_t start = I(run, "started_ms"), end = I(run, "finished_ms");
  if (!start || !end) return "-";
  return FormatElapsed(end - start);
}

std::string Indent(const std::string& text, const std::string& prefix) {
  std::string out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    out += prefix + text.substr(pos, nl - pos) + "\n";
    pos = nl + 1;
  }
  return out;
}

}  // namespace

std::string FormatElapsed(int64_t ms) {
  char buf[32];
  if (ms < 60000)
    snprintf(buf, sizeof buf, "%.1fs", static_cast<double>(ms) / 1000.0);
  else
    snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(ms / 60000),
             static_cast<long long>((ms / 1000) % 60));
  return buf;
}

std::string ShellWord(const std::string& word) {
  if (!word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                              "0123456789-_./=:,+@%") == std::string::npos)
    return word;
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string RenderRunTable(const json& runs) {
  Table t({"ID", "NODE", "KIND", "WHAT", "STATUS", "OK", "CHANGED", "FAILED", "SKIPPED", "TIME",
           "STARTED"});
  for (const auto& r : runs)
    t.AddRow({S(r, "id"), S(r, "node"), S(r, "kind"), S(r, "what"), S(r, "status"), S(r, "ok"),
              S(r, "changed"), S(r, "failed"), S(r, "skipped"), Duration(r),
              FormatTime(I(r, "started_ms"))});
  if (!t.size()) return "no runs\n";
  return t.Render();
}

std::string RenderRun(const json& run) {
  std::string out = "run " + S(run, "id") + " on " + S(run, "node") + ": " + S(run, "kind") + " " +
                    S(run, "what") + "\n";
  out += "status:  " + S(run, "status") + " (" + S(run, "ok") + " ok, " + S(run, "changed") +
         " changed, " + S(run, "failed") + " failed, " + S(run, "skipped") + " skipped)\n";
  out += "started: " + FormatTime(I(run, "started_ms")) + "  took " + Duration(run) + "\n";
  if (!S(run, "message").empty()) out += "message: " + S(run, "message") + "\n";
  Table t({"STATUS", "TASK", "WHERE", "TIME", "RC"});
  auto tasks = run.value("tasks", json::array());
  for (const auto& task : tasks) {
    std::string name = S(task, "task");
    if (!S(task, "item").empty()) name += " (item " + S(task, "item") + ")";
    int64_t rc = I(task, "exit_code");
    t.AddRow({S(task, "status"), name, S(task, "location"), FormatElapsed(I(task, "duration_ms")),
              rc < 0 ? "-" : std::to_string(rc)});
  }
  if (t.size()) out += "\n" + t.Render();
  for (const auto& task : tasks) {
    if (S(task, "status") != "failed" && S(task, "status") != "unreachable") continue;
    out += "\n" + S(task, "status") + ": " + S(task, "task") + " (" + S(task, "location") +
           "): " + S(task, "msg") + "\n";
    if (!S(task, "stderr").empty()) out += Indent(S(task, "stderr"), "  stderr| ");
    if (!S(task, "stdout").empty()) out += Indent(S(task, "stdout"), "  stdout| ");
  }
  return out;
}

std::string RenderRunLogs(const json& run) {
  std::string out;
  for (const auto& task : run.value("tasks", json::array())) {
    out += "== " + S(task, "status") + ": " + S(task, "task") +
           (S(task, "item").empty() ? "" : " (item " + S(task, "item") + ")") + " [" +
           S(task, "location") + "]\n";
    if (!S(task, "msg").empty()) out += "msg: " + S(task, "msg") + "\n";
    if (!S(task, "stdout").empty()) out += Indent(S(task, "stdout"), "stdout| ");
    if (!S(task, "stderr").empty()) out += Indent(S(task, "stderr"), "stderr| ");
  }
  return out.empty() ? "no tasks\n" : out;
}

std::string RenderRecap(const json& runs) {
  size_t width = 0;
  for (const auto& r : runs) width = std::max(width, S(r, "node").size());
  std::string out = "RECAP\n";
  for (const auto& r : runs) {
    std::string node = S(r, "node");
    node.resize(width, ' ');
    out += node + " : ok=" + S(r, "ok") + " changed=" + S(r, "changed") +
           " failed=" + S(r, "failed") + " skipped=" + S(r, "skipped") + "  " + S(r, "status") +
           " (run " + S(r, "id") + ", " + Duration(r) + ")" + "\n";
    if (!S(r, "message").empty()) out += "  " + S(r, "message") + "\n";
  }
  return out;
}

std::string RenderCommandResults(const json& results) {
  // Group by identical (stdout, stderr, exit code) among nodes that ran it.
  std::map<std::tuple<std::string, std::string, int64_t>, std::vector<std::string>> groups;
  std::vector<std::string> problems;
  int failed = 0;
  for (const auto& r : results) {
    const std::string status = S(r, "status");
    const bool ran = I(r, "exit_code") >= 0 || status == "ok" || status == "timeout";
    if (status != "ok") {
      ++failed;
      problems.push_back(S(r, "node") + ": " +
                         (!S(r, "error").empty() ? status + ": " + S(r, "error")
                                                 : "exit code " + S(r, "exit_code")));
    }
    if (ran) groups[{S(r, "stdout"), S(r, "stderr"), I(r, "exit_code")}].push_back(S(r, "node"));
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
    if (!stderr_text.empty()) out += Indent(stderr_text, "stderr| ");
  }
  for (const auto& p : problems) out += "failed: " + p + "\n";
  out += std::to_string(results.size() - failed) + "/" + std::to_string(results.size()) +
         " node(s) ok\n";
  return out;
}

WaitView ViewNodes(const json& nodes, const std::vector<std::string>& names,
                   const std::string& state, const std::map<std::string, std::string>& tasks) {
  WaitView v;
  std::map<std::string, const json*> by_name;
  for (const auto& n : nodes) {
    std::string name = S(n, "hostname").empty() ? S(n, "mac") : S(n, "hostname");
    by_name[name] = &n;
  }
  std::map<std::string, int> counts;
  int arrived = 0;
  Table t({"NODE", "STATE", "DETAIL"});
  for (const auto& name : names) {
    auto it = by_name.find(name);
    std::string st = "missing", detail;
    if (it == by_name.end()) {
      v.missing.push_back(name);
    } else {
      const json& n = *it->second;
      st = S(n, "state");
      if (st == "failed" || st == "maintenance") detail = S(n, "reason");
      auto task = tasks.find(name);
      if (st == "configuring" && task != tasks.end()) detail = "task: " + task->second;
      if ((st == "booting" || st == "enrolled") && !S(n, "stage").empty())
        detail = "stage: " + S(n, "stage");
    }
    if (st == state)
      ++arrived;
    else if (st == "failed" || st == "retired")
      v.failed.push_back(name);
    counts[st]++;
    t.AddRow({name, st, detail});
    v.lines.push_back({name, name + "  " + st + (detail.empty() ? "" : "  " + detail)});
  }
  v.table = t.Render();
  v.summary = std::to_string(arrived) + "/" + std::to_string(names.size()) + " " + state;
  for (const auto& [st, n] : counts)
    if (st != state) v.summary += ", " + std::to_string(n) + " " + st;
  v.done = arrived + v.failed.size() + v.missing.size() == names.size();
  return v;
}

}  // namespace prov::ctl
