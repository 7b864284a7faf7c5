#include "wait.h"

#include "format.h"

namespace prov::ctl {
namespace {

// Where a state is on a node's way up (store/node_state.h), -1 off it.
int PathIndex(const std::string& state) {
  static const char* const kPath[] = {"enrolled", "booting", "booted", "configuring", "ready"};
  for (int i = 0; i < 5; ++i)
    if (state == kPath[i]) return i;
  return -1;
}

}  // namespace

bool ReachedState(const std::string& now, const std::string& wanted) {
  if (now == wanted) return true;
  const int a = PathIndex(now), b = PathIndex(wanted);
  return a >= 0 && b >= 0 && a > b;
}

WaitView ViewNodes(const nlohmann::json& nodes, const std::vector<std::string>& names,
                   const std::string& state, const std::map<std::string, std::string>& tasks) {
  WaitView v;
  std::map<std::string, const nlohmann::json*> by_name;
  for (const auto& n : nodes) {
    std::string name = Str(n, "hostname").empty() ? Str(n, "mac") : Str(n, "hostname");
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
      const nlohmann::json& n = *it->second;
      st = Str(n, "state");
      if (st == "failed" || st == "maintenance") detail = Str(n, "reason");
      auto task = tasks.find(name);
      if (st == "configuring" && task != tasks.end()) detail = "task: " + task->second;
      if ((st == "booting" || st == "enrolled") && !Str(n, "stage").empty())
        detail = "stage: " + Str(n, "stage");
    }
    if (ReachedState(st, state)) {
      ++arrived;
    } else {
      if (st == "failed" || st == "retired") v.failed.push_back(name);
      counts[st]++;
    }
    t.AddRow({name, st, detail});
    v.lines.push_back({name, name + "  " + st + (detail.empty() ? "" : "  " + detail)});
  }
  v.table = t.Render();
  v.summary = std::to_string(arrived) + "/" + std::to_string(names.size()) + " " + state;
  for (const auto& [st, n] : counts) v.summary += ", " + std::to_string(n) + " " + st;
  v.done = arrived + v.failed.size() + v.missing.size() == names.size();
  return v;
}

}  // namespace prov::ctl
