#include "profile.h"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "base/hostlist.h"
#include "format.h"

namespace prov::ctl {
namespace {

using json = nlohmann::json;

// Counts of the actions in a plan, in the order they are reported.
std::map<std::string, int> CountActions(const json& plan) {
  std::map<std::string, int> counts;
  for (const auto& n : Array(plan, "nodes")) counts[Str(n, "action")]++;
  return counts;
}

}  // namespace

std::string RenderProfileTable(const json& reply) {
  Table t({"VERSION", "APPLIED", "SHA256", "IMAGE", "NODES", "DESCRIPTION"});
  bool edited = false;
  for (const auto& p : Array(reply, "profiles")) {
    std::string applied = "-";
    if (Bool(p, "applied")) {
      applied = Bool(p, "applied_sha256_matches") ? "yes" : "yes*";
      edited = edited || applied == "yes*";
    }
    t.AddRow({Str(p, "version"), applied, ShortSha(Str(p, "sha256")), Dash(Str(p, "image")),
              Dash(Str(p, "nodes")), Str(p, "description")});
  }
  std::string out = t.size() ? t.Render() : "no profiles\n";
  if (edited)
    out +=
        "* changed since it was applied: 'provisionctl profile plan <version>' shows what "
        "applying it again does\n";
  for (const auto& e : Array(reply, "errors")) {
    KeyValues kv;
    kv.Add("not loaded", Scalar(e));
    out += kv.Render();
  }
  return out;
}

std::string RenderProfile(const json& p) {
  KeyValues kv;
  kv.Add("profile", Str(p, "version"));
  kv.Add("description", Dash(Str(p, "description")));
  kv.Add("sha256", Str(p, "sha256"));

  const json hw = p.value("hardware", json::object());
  std::vector<std::string> accel;
  for (const auto& a : Array(hw, "accelerators")) {
    std::string ids = Join(Strings(Array(a, "pci_ids")), ", ");
    accel.push_back(Str(a, "count") + "x " + Str(a, "vendor") + " " + Str(a, "model") +
                    (ids.empty() ? "" : " (PCI " + ids + ")"));
  }
  kv.Add("accelerators", accel.empty() ? "none" : Join(accel, "; ") + " per node");
  int64_t memory = Int(hw, "min_memory_gib");
  kv.Add("memory", memory ? "at least " + std::to_string(memory) + " GiB" : "any");

  const json image = p.value("image", json::object());
  std::string image_version = Str(image, "version");
  kv.Add("image",
         Str(image, "name") + (image_version.empty() ? " (newest build)" : " @ " + image_version));
  kv.Add("kernel args", Dash(Join(Strings(Array(p, "kernel_args")), " ")));
  std::vector<std::string> overlay;
  for (const auto& o : Array(p, "overlay"))
    overlay.push_back(Str(o, "path") + " (" + Str(o, "mode") + ")");
  kv.Add("overlay", Dash(Join(overlay, ", ")));

  const json nodes = p.value("nodes", json::object());
  std::vector<std::string> selectors;
  if (std::string hl = Str(nodes, "hostlist"); !hl.empty())
    selectors.push_back("hostlist " + hl + " (" + Join(Strings(Array(nodes, "hostnames")), ", ") +
                        ")");
  if (std::string pattern = Str(nodes, "pattern"); !pattern.empty())
    selectors.push_back("hostnames matching " + pattern);
  if (!Array(nodes, "macs").empty())
    selectors.push_back("MACs " + Join(Strings(Array(nodes, "macs")), ", "));
  kv.Add("nodes", selectors.empty() ? "none" : Join(selectors, "; "));
  std::string out = kv.Render();

  const json& playbooks = Array(p, "playbooks");
  out += playbooks.empty() ? "playbooks: none\n" : "playbooks, in order:\n";
  int i = 0;
  for (const auto& pb : playbooks) {
    out += "  " + std::to_string(++i) + ". " + Str(pb, "playbook") + "\n";
    const json vars = pb.value("vars", json::object());
    if (vars.is_object())
      for (const auto& [k, v] : vars.items()) out += "       " + k + ": " + Scalar(v) + "\n";
  }
  const json& checks = Array(p, "health_checks");
  out += checks.empty() ? "health checks: none\n" : "health checks (gate ready):\n";
  for (const auto& c : checks)
    out += "  " + Str(c, "name") + ": " + Str(c, "command") + " (timeout " + Str(c, "timeout") +
           "s)\n";
  return out;
}

std::string NothingChanges(const json& plan) {
  return "profile " + Str(plan, "version") + " is applied and up to date: nothing changes\n";
}

// What a plan says about the image of a profile that bakes: reused, or
// rebuilt and why; empty for a profile that bakes nothing.
std::string RenderImageChoice(const json& plan) {
  if (!plan.contains("image") || !plan["image"].is_object()) return "";
  const json& image = plan["image"];
  const std::string action = Str(image, "action");
  const std::string changes = Join(Strings(Array(image, "changes")), "; ");
  if (action == "reused")
    return "image reused: " + Str(image, "ref") + " (baked from " + Str(image, "base") + ")\n";
  if (action == "rebuild")
    return "image rebuilt: " + changes + "\n  -> " + Str(image, "ref") + " from " +
           Str(image, "base") + " (built by apply before any node is pointed at it)\n";
  if (action == "unavailable") return "image unavailable: " + changes + "\n";
  return "";
}

std::string RenderPlan(const json& plan) {
  const std::string version = Str(plan, "version"), sha = Str(plan, "sha256");
  const std::string current = Str(plan, "current_version"),
                    current_sha = Str(plan, "current_sha256");
  if (!Bool(plan, "changes")) return NothingChanges(plan) + RenderImageChoice(plan);

  std::string out;
  if (current.empty())
    out = "no profile is applied yet; plan for " + VersionAndSha(version, sha) + ":\n";
  else if (current == version)
    out = "applied now: " + VersionAndSha(current, current_sha) +
          "; it has changed since: " + VersionAndSha(version, sha) + "\n";
  else
    out = "applied now: " + VersionAndSha(current, current_sha) +
          "; this plan: " + VersionAndSha(version, sha) + "\n";

  out += RenderImageChoice(plan);
  // What the files on disk change against the applied snapshot, per file.
  const json& files = Array(plan, "files");
  if (!files.empty()) {
    out += "files against the applied snapshot " + ShortSha(Str(plan, "files_against")) + ":\n";
    for (const auto& f : files)
      out += "  " + Pad(Str(f, "change"), 8) + " " + Str(f, "path") + "\n";
  }

  const json& nodes = Array(plan, "nodes");
  size_t name_width = 0, action_width = 0;
  for (const auto& n : nodes) {
    name_width = std::max(name_width, Str(n, "node").size());
    action_width = std::max(action_width, Str(n, "action").size());
  }
  for (const auto& n : nodes)
    out += Pad(Str(n, "node"), name_width) + "  " + Pad(Str(n, "action"), action_width) + "  " +
           Join(Strings(Array(n, "reasons")), "; ") + "\n";

  auto counts = CountActions(plan);
  std::vector<std::string> summary;
  if (counts["assign"]) summary.push_back(std::to_string(counts["assign"]) + " to assign");
  if (counts["release"]) summary.push_back(std::to_string(counts["release"]) + " to release");
  if (counts["missing"]) summary.push_back(std::to_string(counts["missing"]) + " missing");
  if (counts["unchanged"]) summary.push_back(std::to_string(counts["unchanged"]) + " unchanged");
  out += summary.empty() ? "no node is covered by " + version + "; applying it records it only\n"
                         : Join(summary, ", ") + "\n";
  return out;
}

std::string RenderApplied(const json& plan) {
  const std::string version = Str(plan, "version");
  const bool configuring =
      plan.contains("configure") && !Array(plan["configure"], "started").empty();
  if (!Bool(plan, "changes") && !configuring) {
    // Nothing to assign and nothing to run: say so, and for each node why.
    std::string out = NothingChanges(plan);
    if (plan.contains("configure") && plan["configure"].is_object()) {
      const json& later = Array(plan["configure"], "not_started");
      size_t width = 0;
      for (const auto& n : later) width = std::max(width, Str(n, "node").size());
      for (const auto& n : later) {
        const std::string why = Str(n, "why");
        out += "  " + Pad(Str(n, "node"), width) + "  " +
               (why.find("ready with profile") != std::string::npos
                    ? "configure: already done"
                    : "configure: not now (" + why + ")") +
               "\n";
      }
    }
    return out;
  }
  const json& nodes = Array(plan, "nodes");
  size_t name_width = 0;
  for (const auto& n : nodes) name_width = std::max(name_width, Str(n, "node").size());
  std::string out;
  std::vector<std::string> to_reboot;
  // What provisiond started configuring (nodes that are up), and why not the
  // others (they are configured when they phone home).
  std::set<std::string> started;
  std::map<std::string, std::string> not_started;
  if (plan.contains("configure") && plan["configure"].is_object()) {
    for (const auto& n : Array(plan["configure"], "started"))
      if (n.is_string()) started.insert(n.get<std::string>());
    for (const auto& n : Array(plan["configure"], "not_started"))
      not_started[Str(n, "node")] = Str(n, "why");
  }
  auto configure = [&](const std::string& node) -> std::string {
    if (started.count(node)) return "configure: started";
    auto it = not_started.find(node);
    if (it != not_started.end() && it->second.find("ready with profile") != std::string::npos)
      return "configure: already done";
    return "configure: when it phones home";
  };
  for (const auto& n : nodes) {
    const std::string action = Str(n, "action"), node = Str(n, "node");
    std::string stages;
    if (action == "assign") {
      // provisiond serves the new image at the node's next boot but does not
      // restart it by itself: say so rather than imply it happened.
      std::string boot = "boot: no change";
      if (Bool(n, "reboot")) {
        boot = "boot: needs a reboot into " + Dash(Str(n, "to_image")) +
               " (provisionctl node power cycle " + node + ")";
        to_reboot.push_back(node);
      }
      stages = "assign: done   " + boot + "   " + configure(node);
    } else if (action == "release") {
      stages = "release: done";
    } else if (action == "missing") {
      stages = "missing: not enrolled";
    } else if (action == "unchanged") {
      stages = "unchanged: already on " + version + "   " + configure(node);
    } else {
      stages = action;
    }
    out += Pad(node, name_width) + "  " + stages + "\n";
  }
  auto counts = CountActions(plan);
  out += "applied " + VersionAndSha(version, Str(plan, "sha256")) + ": " +
         std::to_string(counts["assign"]) + " assigned, " + std::to_string(counts["release"]) +
         " released, " + std::to_string(counts["missing"]) + " missing";
  if (counts["unchanged"]) out += ", " + std::to_string(counts["unchanged"]) + " unchanged";
  out += "\n";
  if (!to_reboot.empty()) {
    std::string hostlist = CompressHostlist(to_reboot);
    if (IsHostlist(hostlist)) hostlist = "'" + hostlist + "'";
    out += "next: " + std::to_string(to_reboot.size()) +
           " node(s) boot the new image when restarted: provisionctl node power cycle " + hostlist +
           "\n";
  }
  if (counts["assign"])
    out +=
        "note: provisiond records the assignment and serves the new image at each node's next "
        "boot; it does not restart nodes by itself. Nodes that are up are configured now (their "
        "playbooks, then health checks), the others when they phone home\n";
  return out;
}

}  // namespace prov::ctl
