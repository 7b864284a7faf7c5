#include "output.h"

#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "base/hostlist.h"

namespace prov::ctl {
namespace {

using json = nlohmann::json;

// A field as text: strings as they are, other scalars as JSON, absent or
// null as "".
std::string Str(const json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  return it->dump();
}

int64_t Int(const json& j, const char* key) {
  if (!j.is_object()) return 0;
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<int64_t>() : 0;
}

bool Bool(const json& j, const char* key) {
  if (!j.is_object()) return false;
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

const json& Array(const json& j, const char* key) {
  static const json empty = json::array();
  if (!j.is_object()) return empty;
  auto it = j.find(key);
  return it != j.end() && it->is_array() ? *it : empty;
}

std::string Dash(const std::string& s) {
  return s.empty() ? "-" : s;
}

std::string Scalar(const json& j) {
  return j.is_string() ? j.get<std::string>() : j.dump();
}

std::string Join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

std::vector<std::string> Strings(const json& array) {
  std::vector<std::string> out;
  for (const auto& v : array) out.push_back(Scalar(v));
  return out;
}

std::string Pad(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

// "key:" lines with the values aligned.
class KeyValues {
 public:
  void Add(std::string key, std::string value) { lines_.emplace_back(std::move(key), value); }
  std::string Render(const std::string& indent = "") const {
    size_t width = 0;
    for (const auto& [k, v] : lines_) width = std::max(width, k.size() + 1);
    std::string out;
    for (const auto& [k, v] : lines_) {
      // A value of several lines (a profile's errors) continues under itself.
      std::string value = v;
      for (size_t nl = value.find('\n'); nl != std::string::npos; nl = value.find('\n', nl + 1))
        value.insert(nl + 1, indent + std::string(width + 1, ' '));
      out += indent + Pad(k + ":", width) + " " + value + "\n";
    }
    return out;
  }

 private:
  std::vector<std::pair<std::string, std::string>> lines_;
};

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

// Counts of the actions in a plan, in the order they are reported.
std::map<std::string, int> CountActions(const json& plan) {
  std::map<std::string, int> counts;
  for (const auto& n : Array(plan, "nodes")) counts[Str(n, "action")]++;
  return counts;
}

std::string VersionAndSha(const std::string& version, const std::string& sha) {
  return version + " (sha256 " + ShortSha(sha) + ")";
}

}  // namespace

std::string Table::Render() const {
  std::vector<size_t> widths(header_.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size() && i < widths.size(); ++i)
      widths[i] = std::max(widths[i], row[i].size());
  };
  measure(header_);
  for (const auto& r : rows_) measure(r);
  auto line = [&](const std::vector<std::string>& row) {
    std::string out;
    for (size_t i = 0; i < row.size(); ++i) {
      bool last = i + 1 == row.size();
      out += last || i >= widths.size() ? row[i] : Pad(row[i], widths[i]) + "  ";
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(header_);
  for (const auto& r : rows_) out += line(r);
  return out;
}

std::string FormatTime(int64_t ms) {
  if (ms <= 0) return "-";
  time_t seconds = static_cast<time_t>(ms / 1000);
  struct tm tm {};
  localtime_r(&seconds, &tm);
  char date[32];
  strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
  long offset = tm.tm_gmtoff / 60;  // minutes east of UTC
  char out[64];
  snprintf(out, sizeof out, "%s.%03d%c%02ld:%02ld", date, static_cast<int>(ms % 1000),
           offset < 0 ? '-' : '+', std::labs(offset) / 60, std::labs(offset) % 60);
  return out;
}

std::string FormatAge(int64_t ms, int64_t now_ms) {
  if (ms <= 0) return "never";
  int64_t s = std::max<int64_t>(0, (now_ms - ms) / 1000);
  if (s < 120) return std::to_string(s) + "s ago";
  if (s < 120 * 60) return std::to_string(s / 60) + "m ago";
  if (s < 48 * 3600) return std::to_string(s / 3600) + "h ago";
  return std::to_string(s / 86400) + "d ago";
}

std::string ShortSha(const std::string& sha256) {
  return sha256.substr(0, 12);
}

std::string FormatSize(int64_t bytes) {
  if (bytes < 1024) return std::to_string(std::max<int64_t>(bytes, 0)) + " B";
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes) / 1024;
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(units)) {
    value /= 1024;
    ++unit;
  }
  char out[32];
  snprintf(out, sizeof out, "%.1f %s", value, units[unit]);
  return out;
}

std::string FormatOffset(int64_t ms) {
  ms = std::max<int64_t>(ms, 0);
  char out[32];
  if (int64_t tenths = (ms + 50) / 100; tenths < 600) {
    snprintf(out, sizeof out, "+%lld.%llds", static_cast<long long>(tenths / 10),
             static_cast<long long>(tenths % 10));
  } else if (int64_t s = (ms + 500) / 1000; s < 3600) {
    snprintf(out, sizeof out, "+%lldm%02llds", static_cast<long long>(s / 60),
             static_cast<long long>(s % 60));
  } else {
    int64_t m = s / 60;
    snprintf(out, sizeof out, "+%lldh%02lldm", static_cast<long long>(m / 60),
             static_cast<long long>(m % 60));
  }
  return out;
}

std::string FormatPowerSpec(const json& power) {
  std::string driver = Str(power, "driver");
  if (driver.empty()) return "";
  std::string out = driver;
  for (const auto& [key, value] : power.items())
    if (key != "driver") out += "," + key + "=" + Scalar(value);
  return out;
}

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
  return kv.Render();
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
  kv.Add("image", Dash(Str(node, "image")));
  kv.Add("power", Dash(FormatPowerSpec(node.value("power", json::object()))));
  kv.Add("host key", Dash(Str(node, "host_key")));
  int64_t seen = Int(node, "last_seen");
  kv.Add("last seen", seen ? FormatTime(seen) + " (" + FormatAge(seen, now_ms) + ")" : "never");
  kv.Add("created", FormatTime(Int(node, "created")));
  kv.Add("updated", FormatTime(Int(node, "updated")));
  kv.Add("id", Str(node, "id"));
  std::string out = kv.Render();

  const json facts = node.value("facts", json::object());
  if (facts.empty()) {
    out += "facts: none yet (a node reports them when it has booted)\n";
  } else {
    KeyValues f;
    FlattenFacts(facts, "", f);
    out += "facts:\n" + f.Render("  ");
  }
  if (events.empty()) {
    out += "events: none\n";
  } else {
    out += "events (last " + std::to_string(events.size()) + "):\n";
    for (const auto& e : events) out += "  " + RenderEvent(e);
  }
  return out;
}

std::string RenderEvent(const json& event) {
  std::string who = Str(event, "who");
  return FormatTime(Int(event, "time")) + "  " + Pad(Dash(Str(event, "node")), 10) + "  " +
         Pad(Str(event, "kind"), 15) + "  " + Str(event, "detail") +
         (who.empty() ? "" : " (" + who + ")") + "\n";
}

std::string RenderWhy(const json& why) {
  const std::string node = Dash(Str(why, "node")), mac = Str(why, "mac");
  const std::string image = Str(why, "image");
  std::string out = node + (mac.empty() || mac == node ? "" : " (" + mac + ")") + " " +
                    Dash(Str(why, "state")) +
                    (image.empty() ? ", no image assigned" : ", image " + image) + "\n";

  // Times right-aligned, stages padded to the longest stage name
  // ("ipxe-binary"), so attempts line up from one node to the next.
  const json& steps = Array(why, "steps");
  std::vector<std::string> offsets;
  size_t offset_width = 0, stage_width = std::string("ipxe-binary").size();
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
  if (std::string summary = Str(why, "summary"); !summary.empty()) out += summary + "\n";
  return out;
}

std::string RenderPreflight(const json& reply) {
  const json& checks = Array(reply, "checks");
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

std::string FormatDuration(int64_t ms) {
  return FormatOffset(ms).substr(1);
}

std::string RenderImageTable(const json& reply) {
  Table t({"NAME", "VERSION", "CURRENT", "KERNEL", "INITRD", "ROOT", "CREATED"});
  for (const auto& i : Array(reply, "images"))
    t.AddRow({Str(i, "name"), Str(i, "version"), Bool(i, "current") ? "yes" : "-",
              FormatSize(Int(i, "kernel_size")), FormatSize(Int(i, "initrd_size")),
              Bool(i, "root") ? "yes" : "no", FormatTime(Int(i, "created"))});
  if (!t.size())
    return "no images (build one: provisionctl image build NAME, or import one: provisionctl "
           "image import NAME --kernel PATH --initrd PATH)\n";
  return t.Render();
}

std::string RenderImage(const json& image, const json& current) {
  const std::string name = Str(image, "name"), version = Str(image, "version");
  std::string ref = Str(image, "ref");
  if (ref.empty() && !name.empty()) ref = name + "@" + version;
  static const json none = json::object();
  const json& build = image.is_object() && image.contains("build") && image["build"].is_object()
                          ? image["build"]
                          : none;

  KeyValues kv;
  kv.Add("image", Dash(ref));
  bool is_current = current.is_object() && !version.empty() && Str(current, "version") == version;
  if (image.is_object() && image.contains("current") && image["current"].is_boolean())
    is_current = image["current"].get<bool>();
  if (is_current)
    kv.Add("current", "yes (" + Dash(name) + " stands for this version)");
  else if (std::string other = Str(current, "ref"); !other.empty() && other != ref)
    kv.Add("current", "no (" + Dash(name) + " stands for " + other + ")");
  else
    kv.Add("current", "no");
  std::string kernel = FormatSize(Int(image, "kernel_size"));
  if (std::string file = Str(build, "kernel"); !file.empty()) kernel += " (" + file + ")";
  kv.Add("kernel", kernel);
  kv.Add("initrd", FormatSize(Int(image, "initrd_size")));
  kv.Add("root",
         Bool(image, "root") ? "yes (served over NFS)" : "no (a kernel and an initrd only)");
  if (std::string sha = Str(build, "sha256"); !sha.empty()) kv.Add("sha256", sha);
  kv.Add("created", FormatTime(Int(image, "created")));
  if (Bool(image, "building"))
    kv.Add("building", "a build of " + Dash(name) +
                           " runs now (provisionctl events --follow shows its progress)");
  std::string out = kv.Render();

  const bool built = build.contains("manifest_sha256") || build.contains("suite");
  if (!built) {
    const json& source = build.contains("source") ? build["source"] : none;
    std::string from = Str(source, "kernel").empty() ? ""
                                                     : " from " + Str(source, "kernel") + " and " +
                                                           Dash(Str(source, "initrd"));
    return out + "build: none (imported" + from + ")\n";
  }
  KeyValues b;
  b.Add("suite", Dash(Str(build, "suite")));
  b.Add("mirror", Dash(Str(build, "mirror")));
  const json& packages = Array(build, "packages");
  b.Add("packages", packages.empty()
                        ? "-"
                        : std::to_string(packages.size()) + ": " + Join(Strings(packages), ", "));
  b.Add("root tree",
        std::to_string(Int(build, "files")) + " files, " + FormatSize(Int(build, "bytes")));
  const auto seconds = build.find("build_seconds");
  b.Add("build time", seconds != build.end() && seconds->is_number()
                          ? FormatDuration(std::llround(seconds->get<double>() * 1000))
                          : "-");
  b.Add("manifest sha256", Dash(Str(build, "manifest_sha256")));
  return out + "build:\n" + b.Render("  ");
}

bool ImageVerified(const json& reply) {
  return Bool(reply, "ok") && Bool(reply, "kernel") && Bool(reply, "initrd");
}

std::string RenderImageVerify(const json& reply) {
  struct Check {
    const char* mark;  // "ok", "FAIL" or "-"
    const char* name;
    std::string detail;
  };
  const bool root = Bool(reply, "root");
  const bool nfs_checked = root && reply.is_object() && reply.contains("root_args");
  const char* nfs = !nfs_checked ? "-" : Bool(reply, "ok") ? "ok" : "FAIL";
  const std::vector<Check> checks = {
      {Bool(reply, "kernel") ? "ok" : "FAIL", "kernel",
       Bool(reply, "kernel") ? "present" : "missing or empty"},
      {Bool(reply, "initrd") ? "ok" : "FAIL", "initrd",
       Bool(reply, "initrd") ? "present" : "missing or empty"},
      {root ? "ok" : "-", "root", root ? "a root tree to serve" : "none (a kernel and an initrd)"},
      {nfs, "nfs", Dash(Str(reply, "nfs"))},
  };
  const std::string ref = Dash(Str(reply, "image"));
  std::string out;
  for (const auto& c : checks) {
    const std::string lead = Pad(c.mark, 4) + "  " + Pad(c.name, 6) + "  ";
    std::string detail = c.detail;
    // A reason of several lines (NFS's) continues under itself.
    for (size_t nl = detail.find('\n'); nl != std::string::npos; nl = detail.find('\n', nl + 1))
      detail.insert(nl + 1, std::string(lead.size(), ' '));
    out += lead + detail + "\n";
  }
  if (std::string args = Str(reply, "root_args"); !args.empty())
    out += "kernel root arguments: " + args + "\n";
  out += ImageVerified(reply) ? ref + " can be served\n" : ref + " failed verification\n";
  return out;
}

std::optional<ImageBuildEvent> ParseImageBuildEvent(const json& event) {
  const std::string kind = Str(event, "kind");
  if (kind != "image-build" && kind != "image-built" && kind != "image-build-failed")
    return std::nullopt;
  ImageBuildEvent e;
  e.kind = kind;
  e.time_ms = Int(event, "time");
  const std::string detail = Str(event, "detail");
  const size_t colon = detail.find(": ");
  e.image = detail.substr(0, colon);
  if (colon != std::string::npos) e.text = detail.substr(colon + 2);
  return e;
}

std::string RenderBuildProgress(const std::string& text, int64_t elapsed_ms) {
  char lead[32];
  snprintf(lead, sizeof lead, "[%5.1fs] ",
           static_cast<double>(std::max<int64_t>(elapsed_ms, 0)) / 1000);
  std::string body = text;
  for (size_t nl = body.find('\n'); nl != std::string::npos; nl = body.find('\n', nl + 1))
    body.insert(nl + 1, std::string(strlen(lead), ' '));
  while (!body.empty() && (body.back() == '\n' || body.back() == ' ')) body.pop_back();
  return lead + body + "\n";
}

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

std::string RenderPlan(const json& plan) {
  const std::string version = Str(plan, "version"), sha = Str(plan, "sha256");
  const std::string current = Str(plan, "current_version"),
                    current_sha = Str(plan, "current_sha256");
  if (!Bool(plan, "changes")) return NothingChanges(plan);

  std::string out;
  if (current.empty())
    out = "no profile is applied yet; plan for " + VersionAndSha(version, sha) + ":\n";
  else if (current == version)
    out = "applied now: " + VersionAndSha(current, current_sha) +
          "; it has changed since: " + VersionAndSha(version, sha) + "\n";
  else
    out = "applied now: " + VersionAndSha(current, current_sha) +
          "; this plan: " + VersionAndSha(version, sha) + "\n";

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
