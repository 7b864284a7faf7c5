#include "status.h"

#include "format.h"

namespace prov::ctl {

using json = nlohmann::json;

std::string RenderStatus(const json& status, const std::string& url) {
  KeyValues kv;
  kv.Add("service", Str(status, "service") + " " + Str(status, "version") + " at " + url);
  std::vector<std::string> by_state;
  if (status.contains("states") && status["states"].is_object())
    for (const auto& [state, n] : status["states"].items())
      if (n.is_number() && n.get<int64_t>() > 0) by_state.push_back(state + " " + n.dump());
  std::string nodes = std::to_string(Int(status, "nodes"));
  if (!by_state.empty()) nodes += " (" + Join(by_state, ", ") + ")";
  kv.Add("nodes", nodes);
  const json applied = status.value("applied_profile", json());
  if (applied.is_object()) {
    kv.Add("applied profile", VersionAndSha(Str(applied, "version"), Str(applied, "sha256")) +
                                  ", " + FormatTime(Int(applied, "time")) + " by " +
                                  Dash(Str(applied, "who")));
  } else {
    kv.Add("applied profile", "none yet (provisionctl profile apply <version>)");
  }
  kv.Add("profiles", Dash(Join(Strings(Array(status, "profiles")), ", ")));
  for (const auto& e : Array(status, "profile_errors")) kv.Add("profile error", Scalar(e));
  kv.Add("last event", std::to_string(Int(status, "last_event")));
  const json control = status.value("control", json());
  if (control.is_object() && Str(control, "mode") == "active")
    kv.Add("control node", Str(control, "node") + ", active since " +
                               FormatTime(Int(control, "since")) + " (takeover " +
                               std::to_string(Int(control, "epoch")) + " of the lease, " +
                               Str(control, "database") + ")");
  // Every control node, and the image versions in use it lacks.
  for (const auto& n : Array(control, "nodes")) {
    std::string line = Str(n, "name") + " (" + Str(n, "role") + "), reported " +
                       std::to_string(Int(n, "reported_ms_ago") / 1000) + " s ago, " +
                       std::to_string(Int(n, "images")) + " image version(s)";
    std::vector<std::string> lacks;
    for (const auto& l : Array(n, "lacks")) lacks.push_back(Str(l, "image"));
    line += lacks.empty() ? ", every one in use" : "; lacks " + Join(lacks, ", ");
    if (!Str(n, "copying").empty()) line += "; copying " + Str(n, "copying");
    kv.Add("control nodes", line);
  }
  return kv.Render();
}

}  // namespace prov::ctl
