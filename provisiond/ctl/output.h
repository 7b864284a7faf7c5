// How provisionctl shows the API's JSON to people: tables, key: value blocks,
// plans and event lines. Pure functions from JSON to text, so they are tested
// without a daemon; a missing field shows as "-" rather than failing.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace prov::ctl {

// Columns padded to their widest cell and separated by two spaces; the last
// column is not padded.
class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void AddRow(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  size_t size() const { return rows_.size(); }
  std::string Render() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// Milliseconds since the epoch as local ISO-8601 with milliseconds and the
// offset: "2026-11-22T01:37:32.123+01:00". 0 is "-".
std::string FormatTime(int64_t ms);

// How long before `now_ms` `ms` was: "45s ago", "3m ago", "2h ago", "4d ago";
// 0 is "never".
std::string FormatAge(int64_t ms, int64_t now_ms);

// The first 12 hex digits of a SHA-256, as git shows commits.
std::string ShortSha(const std::string& sha256);

// A size in bytes for people: "812 B", "11.9 MiB", "1.2 GiB".
std::string FormatSize(int64_t bytes);

// Time since the start of a boot attempt: "+2.1s", "+3m05s", "+1h02m".
std::string FormatOffset(int64_t ms);

// A node's "power" object in the syntax `node set --power` takes:
// {"driver": "ipmi", "address": "10.0.0.5"} -> "ipmi,address=10.0.0.5";
// "" when there is no driver.
std::string FormatPowerSpec(const nlohmann::json& power);

// GET /api/v1/status for people; `url` is where it was asked.
std::string RenderStatus(const nlohmann::json& status, const std::string& url);

// The "nodes" array of GET /api/v1/nodes as a table.
std::string RenderNodeTable(const nlohmann::json& nodes, int64_t now_ms);

// One node as key: value lines, its facts flattened ("cpu.model: ..."), then
// `events` (an array, oldest first) as event lines.
std::string RenderNode(const nlohmann::json& node, const nlohmann::json& events, int64_t now_ms);

// One event: "TIME NODE KIND DETAIL (who)" and a newline.
std::string RenderEvent(const nlohmann::json& event);

// GET /api/v1/nodes/<node>/why: a header (node, MAC, state, image), one line
// per boot stage with its time since the first, the errors, the kernel
// command line, and the summary sentence last.
std::string RenderWhy(const nlohmann::json& why);

// GET /api/v1/preflight: "ok" or "FAIL", the check's name and its detail, one
// check a line, then a count.
std::string RenderPreflight(const nlohmann::json& reply);

// A duration for people: "12.3s", "3m05s", "1h02m".
std::string FormatDuration(int64_t ms);

// GET /api/v1/images as a table: NAME VERSION CURRENT KERNEL INITRD ROOT
// CREATED, CURRENT "*" on the version a bare NAME stands for.
std::string RenderImageTable(const nlohmann::json& reply);

// GET /api/v1/images/<ref>: its ref, whether it is the version its name
// stands for, sizes, root, and how it was built (from its image.json) or that
// it was imported. `current` is the reply of GET /api/v1/images/<name> (the
// version the name stands for), or null when the name stands for none; the
// image's own "current" field wins when it has one.
std::string RenderImage(const nlohmann::json& image, const nlohmann::json& current);

// POST /api/v1/images/<ref>/verify: one line per check (kernel, initrd, root,
// nfs) as "ok", "FAIL" or "-" (not applicable), the kernel's root arguments,
// and a last line saying whether the image can be served.
std::string RenderImageVerify(const nlohmann::json& reply);

// Whether a verify reply says the image can be served: "ok", and a kernel and
// an initrd.
bool ImageVerified(const nlohmann::json& reply);

// An event of an image build: kind "image-build", "image-built" or
// "image-build-failed", detail "<image>: <text>".
struct ImageBuildEvent {
  std::string kind;
  std::string image;
  std::string text;  // the detail after "<image>: "
  int64_t time_ms = 0;
};

// The event as an image build's, or nullopt when it is of another kind.
std::optional<ImageBuildEvent> ParseImageBuildEvent(const nlohmann::json& event);

// A build's progress line: "[ 12.3s] mmdebstrap: I: ..." and a newline; the
// lines of a text of several lines after the first are indented under it.
std::string RenderBuildProgress(const std::string& text, int64_t elapsed_ms);

// GET /api/v1/profiles as a table, with a note for profiles that changed
// since they were applied.
std::string RenderProfileTable(const nlohmann::json& reply);

// GET /api/v1/profiles/<v>: hardware, image, kernel args, overlay, playbooks
// with their vars, health checks and nodes.
std::string RenderProfile(const nlohmann::json& profile);

// GET /api/v1/profiles/<v>/plan: what is applied now against this version,
// then one line per node and a count per action.
std::string RenderPlan(const nlohmann::json& plan);

// The line for a plan that changes nothing.
std::string NothingChanges(const nlohmann::json& plan);

// The reply of POST /api/v1/profiles/<v>/apply: per node the stages
// provisiond carried out, what is left to the operator (a reboot into the new
// image) and what it has not implemented yet (SSH configuration), then a
// summary.
std::string RenderApplied(const nlohmann::json& plan);

}  // namespace prov::ctl
