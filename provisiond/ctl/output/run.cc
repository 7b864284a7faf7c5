#include "run.h"

#include <algorithm>

#include "format.h"

namespace prov::ctl {
namespace {

using json = nlohmann::json;

std::string Duration(const json& run) {
  int64_t start = Int(run, "started_ms"), end = Int(run, "finished_ms");
  if (!start || !end) return "-";
  return FormatElapsed(end - start);
}

}  // namespace

std::string RenderRunTable(const json& runs) {
  Table t({"ID", "NODE", "KIND", "WHAT", "STATUS", "OK", "CHANGED", "FAILED", "SKIPPED", "TIME",
           "STARTED"});
  for (const auto& r : runs)
    t.AddRow({Str(r, "id"), Str(r, "node"), Str(r, "kind"), Str(r, "what"), Str(r, "status"),
              Str(r, "ok"), Str(r, "changed"), Str(r, "failed"), Str(r, "skipped"), Duration(r),
              FormatTime(Int(r, "started_ms"))});
  if (!t.size()) return "no runs\n";
  return t.Render();
}

std::string RenderRun(const json& run) {
  std::string out = "run " + Str(run, "id") + " on " + Str(run, "node") + ": " + Str(run, "kind") +
                    " " + Str(run, "what") + "\n";
  out += "status:  " + Str(run, "status") + " (" + Str(run, "ok") + " ok, " + Str(run, "changed") +
         " changed, " + Str(run, "failed") + " failed, " + Str(run, "skipped") + " skipped)\n";
  out += "started: " + FormatTime(Int(run, "started_ms")) + "  took " + Duration(run) + "\n";
  if (!Str(run, "message").empty()) out += "message: " + Str(run, "message") + "\n";
  Table t({"STATUS", "TASK", "WHERE", "TIME", "RC"});
  auto tasks = run.value("tasks", json::array());
  for (const auto& task : tasks) {
    std::string name = Str(task, "task");
    if (!Str(task, "item").empty()) name += " (item " + Str(task, "item") + ")";
    int64_t rc = Int(task, "exit_code");
    t.AddRow({Str(task, "status"), name, Str(task, "location"),
              FormatElapsed(Int(task, "duration_ms")), rc < 0 ? "-" : std::to_string(rc)});
  }
  if (t.size()) out += "\n" + t.Render();
  for (const auto& task : tasks) {
    if (Str(task, "status") != "failed" && Str(task, "status") != "unreachable") continue;
    out += "\n" + Str(task, "status") + ": " + Str(task, "task") + " (" + Str(task, "location") +
           "): " + Str(task, "msg") + "\n";
    if (!Str(task, "stderr").empty()) out += PrefixLines(Str(task, "stderr"), "  stderr| ");
    if (!Str(task, "stdout").empty()) out += PrefixLines(Str(task, "stdout"), "  stdout| ");
  }
  return out;
}

std::string RenderRunLogs(const json& run) {
  std::string out;
  for (const auto& task : run.value("tasks", json::array())) {
    out += "== " + Str(task, "status") + ": " + Str(task, "task") +
           (Str(task, "item").empty() ? "" : " (item " + Str(task, "item") + ")") + " [" +
           Str(task, "location") + "]\n";
    if (!Str(task, "msg").empty()) out += "msg: " + Str(task, "msg") + "\n";
    if (!Str(task, "stdout").empty()) out += PrefixLines(Str(task, "stdout"), "stdout| ");
    if (!Str(task, "stderr").empty()) out += PrefixLines(Str(task, "stderr"), "stderr| ");
  }
  return out.empty() ? "no tasks\n" : out;
}

std::string RenderRecap(const json& runs) {
  size_t width = 0;
  for (const auto& r : runs) width = std::max(width, Str(r, "node").size());
  std::string out = "RECAP\n";
  for (const auto& r : runs) {
    std::string node = Str(r, "node");
    node.resize(width, ' ');
    out += node + " : ok=" + Str(r, "ok") + " changed=" + Str(r, "changed") +
           " failed=" + Str(r, "failed") + " skipped=" + Str(r, "skipped") + "  " +
           Str(r, "status") + " (run " + Str(r, "id") + ", " + Duration(r) + ")" + "\n";
    if (!Str(r, "message").empty()) out += "  " + Str(r, "message") + "\n";
  }
  return out;
}

}  // namespace prov::ctl
