// How provisionctl shows nodes: the node table, one node with its facts and
// events, its latest boot (node why), and its power driver.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace prov::ctl {

// A node's "power" object in the syntax `node set --power` takes:
// {"driver": D, "address": A} -> "D,address=A";
// "" when there is no driver.
std::string FormatPowerSpec(const nlohmann::json& power);

// The "nodes" array of GET /api/v1/nodes as a table.
std::string RenderNodeTable(const nlohmann::json& nodes, int64_t now_ms);

// One node as key: value lines, its facts flattened ("cpu.model: ..."), then
// `events` (an array, oldest first) as event lines.
std::string RenderNode(const nlohmann::json& node, const nlohmann::json& events, int64_t now_ms);

// GET /api/v1/nodes/<node>/why: a header (node, MAC, state, image), one line
// per boot stage with its time since the first, the errors, the kernel
// command line, and the summary sentence last.
std::string RenderWhy(const nlohmann::json& why);
// One line of a node's network console: "HH:MM:SS.mmm  SOURCE  TEXT".
std::string RenderConsoleLine(const nlohmann::json& line);

}  // namespace prov::ctl
