#include "node.h"

#include <algorithm>

#include "events.h"
#include "format.h"

namespace prov::ctl {
namespace {

using json = nlohmann::json;

// Facts are free-form JSON from the node; nested objects become dotted keys,
// arrays of scalars a comma list, arrays of objects "gpus[0].model".
void FlattenFacts(const json& value, const std::string& prefix, KeyValues& out) {
  if (value.is_object()) {
    if (value.empty() && !prefix.empty()) out.Add(prefix, "{}");
    for (const auto& [k, v] : value.items())
      FlattenFacts(v, prefix.empty() ? k : prefix + "." + k, out);
  } else if (value.is_array()) {
    bool scalars =
        std::none_of(value.begin(), value.end(), [](const json& v) { return v.is_structured(); });
    if (scalars) {
      out.Add(prefix, Join(Strings(value), ", "));
    } else {
      for (size_t i = 0; i < value.size(); ++i)
        FlattenFacts(value[i], prefix + "[" + std::to_string(i) + "]", out);
    }
  } else {
    out.Add(prefix, Scalar(value));
  }
}

std::string StateWithReason(const json& node) {
  std::string state = Str(node, "state");
  std::string reason = Str(node, "reason");
  return reason.empty() ? state : state + " (" + reason + ")";
}

}  // namespace

std::string FormatPowerSpec(const json& power) {
  std::string driver = Str(power, "driver");
  if (driver.empty()) return "";
  std::string out = driver;
  for (const auto& [key, value] : power.items())
    if (key != "driver") out += "," + key + "=" + Scalar(value);
  return out;
}

std::string RenderNodeTable(const json& nodes, int64_t now_ms) {
  Table t({"HOSTNAME", "MAC", "IP", "STATE", "PROFILE", "IMAGE", "LAST-SEEN"});
  for (const auto& n : nodes) {
    std::vector<std::string> row = {Dash(Str(n, "hostname")),
                                    Dash(Str(n, "mac")),
                                    Dash(Str(n, "ip")),
                                    Str(n, "state"),
                                    Dash(Str(n, "profile")),
                                    Dash(Str(n, "image")),
                                    FormatAge(Int(n, "last_seen"), now_ms)};
    // The reason a node failed (or is in maintenance) is what to look at
    // first, so it rides along at the end of the line.
    if (std::string reason = Str(n, "reason"); !reason.empty()) row.back() += "  " + reason;
    t.AddRow(std::move(row));
  }
  return t.Render();
}

std::string RenderNode(const json& node, const json& events, int64_t now_ms) {
  KeyValues kv;
  kv.Add("hostname", Dash(Str(node, "hostname")));
  kv.Add("mac", Dash(Str(node, "mac")));
  kv.Add("ip", Dash(Str(node, "ip")));
  kv.Add("state", StateWithReason(node));
  if (std::string stage = Str(node, "stage"); !stage.empty()) kv.Add("stage", stage);
  kv.Add("profile", Dash(Str(node, "profile")));
  kv.Add("image", node.value("installed", false) ? "none: it boots its own OS (adopted)"
                                                 : Dash(Str(node, "image")));
  kv.Add("power", Dash(FormatPowerSpec(node.value("power", json::object()))));
  // Which driver does what, and the fallback: provisiond's words.
  if (std::string plan = Str(node, "power_plan"); !plan.empty()) kv.Add("power plan", plan);
  if (std::string l = Str(node, "uefi_loader"); !l.empty())
    kv.Add("uefi loader", l + " (this node's own choice)");
  if (const json& h = node.value("health", json()); h.is_object()) {
    std::string line = h.value("status", "?");
    for (const auto& c : h.value("checks", json::array()))
      line += "; " + c.value("name", "") + " " + c.value("status", "") +
              (c.value("detail", "").empty() ? "" : " (" + c.value("detail", "") + ")");
    kv.Add("health", line + " (" + FormatTime(Int(h, "time")) + ", run " + Str(h, "run") + ")");
  }
  kv.Add("host key", Dash(Str(node, "host_key")));
  int64_t seen = Int(node, "last_seen");
  kv.Add("last seen", seen ? FormatTime(seen) + " (" + FormatAge(seen, now_ms) + ")" : "never");
  kv.Add("created", FormatTime(Int(node, "created")));
  kv.Add("updated", FormatTime(Int(node, "updated")));
  kv.Add("id", Str(node, "id"));
  std::string out = kv.Render();

  json facts = node.value("facts", json::object());
  if (facts.empty()) {
    out += "facts: none yet (a node reports them when it has booted)\n";
  } else {
    // Disks and storage as tables of their own; the other facts flat.
    if (const json& disks = facts.value("disks", json()); disks.is_array() && !disks.empty()) {
      Table t({"DISK", "BY-ID", "TRANSPORT", "SIZE", "MODEL", "HOLDS"});
      for (const auto& d : disks) {
        std::string id = Str(d, "by_id");
        if (id.rfind("/dev/disk/by-id/", 0) == 0) id = id.substr(16);
        std::string holds = Dash(Str(d, "content"));
        if (d.value("system", false)) holds += " (the system)";
        t.AddRow({Str(d, "name"), Dash(id), Dash(Str(d, "transport")),
                  FormatSize(d.value("size_bytes", int64_t{0})), Dash(Str(d, "model")), holds});
      }
      out += "disks:\n" + PrefixLines(t.Render(), "  ");
    }
    if (const json& st = facts.value("storage", json()); st.is_object()) {
      out += "storage: " + Str(st, "state") + "\n";
      for (const auto& v : st.value("volumes", json::array())) {
        std::string line = "  " + Str(v, "name") + ": " + Str(v, "state");
        if (!Str(v, "mount").empty()) line += " at " + Str(v, "mount");
        if (!Str(v, "device").empty()) line += " on " + Str(v, "device");
        if (!Str(v, "uuid").empty()) line += " (UUID " + Str(v, "uuid") + ")";
        if (v.contains("wiped")) line += "; wiped: " + Join(Strings(v["wiped"]), ", ");
        if (!Str(v, "reason").empty()) line += "; " + Str(v, "reason");
        out += line + "\n";
      }
    }
    facts.erase("disks");
    facts.erase("storage");
    KeyValues f;
    FlattenFacts(facts, "", f);
    out += "facts:\n" + f.Render("  ");
  }
  if (const json& wipe = node.value("storage_wipe", json()); wipe.is_array() && !wipe.empty())
    out += "storage wipe allowed at its next boot: " + Join(Strings(wipe), ", ") + "\n";
  if (events.empty()) {
    out += "events: none\n";
  } else {
    out += "events (last " + std::to_string(events.size()) + "):\n";
    for (const auto& e : events) out += "  " + RenderEvent(e);
  }
  return out;
}

std::string RenderConsoleLine(const json& line) {
  // "HH:MM:SS.mmm" of the local time: the date is the boot's.
  std::string time = FormatTime(Int(line, "time"));
  if (time.size() >= 23) time = time.substr(11, 12);
  return time + "  " + Pad(Str(line, "source"), 10) + "  " + Str(line, "text");
}

std::string RenderWhy(const json& why) {
  const std::string node = Dash(Str(why, "node")), mac = Str(why, "mac");
  const std::string image = Str(why, "image");
  std::string out = node + (mac.empty() || mac == node ? "" : " (" + mac + ")") + " " +
                    Dash(Str(why, "state")) +
                    (image.empty() ? ", no image assigned" : ", image " + image) + "\n";

  // Times right-aligned, stages padded to the longest stage name (the
  // daemon's list), so attempts line up from one node to the next.
  const json& steps = Array(why, "steps");
  std::vector<std::string> offsets;
  size_t offset_width = 0, stage_width = 0;
  for (const auto& stage : Array(why, "stages"))
    if (stage.is_string()) stage_width = std::max(stage_width, stage.get<std::string>().size());
  for (const auto& step : steps) {
    offsets.push_back(FormatOffset(Int(step, "after_ms")));
    offset_width = std::max(offset_width, offsets.back().size());
    stage_width = std::max(stage_width, Str(step, "stage").size());
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    std::string line = "  " + std::string(offset_width - offsets[i].size(), ' ') + offsets[i] +
                       "  " + Pad(Str(steps[i], "stage"), stage_width) + "  " +
                       Str(steps[i], "detail");
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  for (const auto& e : Array(why, "errors")) out += "error: " + Scalar(e) + "\n";
  if (std::string cmdline = Str(why, "kernel_cmdline"); !cmdline.empty())
    out += "kernel command line: " + cmdline + "\n";
  // The node's own last words (the network console), and the failing line
  // when it is further up: for a node that is not ready.
  const json& tail = Array(why, "console");
  if (!tail.empty() && Str(why, "state") != "ready") {
    out += "its console, boot " + std::to_string(Int(tail.back(), "boot")) + ", last lines:\n";
    if (why.contains("console_error") && why["console_error"].is_object())
      out += "  " + RenderConsoleLine(why["console_error"]) + "  <- the failing line\n  ...\n";
    for (const auto& l : tail) out += "  " + RenderConsoleLine(l) + "\n";
  }
  if (std::string reason = Str(why, "reason"); !reason.empty()) out += "reason: " + reason + "\n";
  for (const auto& p : Array(why, "power"))
    out += "power: " + FormatTime(Int(p, "time")) + "  " + Str(p, "detail") + " (" + Str(p, "who") +
           ")\n";
  if (std::string summary = Str(why, "summary"); !summary.empty()) out += summary + "\n";
  return out;
}

}  // namespace prov::ctl
