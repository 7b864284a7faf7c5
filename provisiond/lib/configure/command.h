// `provisionctl cmd`: one command on many nodes at once, over the nodes'
// persistent sessions, with each node's exit code and output.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "configure/sessions.h"
#include "store/store.h"

namespace prov {

struct CommandResult {
  std::string node;
  CommandStatus status = CommandStatus::kOk;
  int exit_code = -1;
  std::string out, err;
  std::string error;  // why it could not run
  int64_t duration_ms = 0;
};

nlohmann::json ToJson(const CommandResult& c);

// Sessions a command runs on at once (more nodes wait for a free one).
inline constexpr size_t kCommandWorkers = 64;
// What is kept of a command's stdout and of its stderr on each node: the end.
inline constexpr size_t kCommandOutputBytes = 64 * 1024;

// Runs `command` on every node of `nodes` (names or MACs), on at most
// kCommandWorkers at once, and waits for all of them; the results are in the order of
// `nodes`. `user` empty: the login user; timeout_ms <= 0: no limit. A node
// busy with a run gets a second session for the command, closed after it.
// `output_bytes`: what is kept of each stream (its end).
std::vector<CommandResult> RunCommandOnNodes(Store& store, Sessions& sessions,
                                             const std::vector<std::string>& nodes,
                                             const std::string& command, const std::string& user,
                                             int timeout_ms,
                                             size_t output_bytes = kCommandOutputBytes);

// `provisionctl gather`: one file from every node (seed 002: logs and
// results from the whole cluster), read over the same sessions.
struct GatherResult {
  std::string node;
  CommandStatus status = CommandStatus::kOk;
  std::string base64;  // the file's content (ok)
  int64_t size = 0;    // its size in bytes (ok)
  std::string error;   // why not: "no such file: /var/log/x", ...
  int64_t duration_ms = 0;
};

nlohmann::json ToJson(const GatherResult& g);

// The largest file gather takes from a node; a larger one is that node's
// error, never a part of it.
inline constexpr int64_t kGatherMaxBytes = 16 * 1024 * 1024;

// Checks a path to gather: absolute, at most 4096 bytes, no control
// characters; the error says which.
Status ValidateGatherPath(const std::string& path);

// Reads `path` (a regular file, or a link to one) on every node of `nodes`
// as `user` (empty: the login user), at most kCommandWorkers at once; a node
// without the file, with a larger one, or unreachable is its own error and
// the others go on. In the order of `nodes`.
std::vector<GatherResult> GatherFromNodes(Store& store, Sessions& sessions,
                                          const std::vector<std::string>& nodes,
                                          const std::string& path, const std::string& user,
                                          int timeout_ms);

}  // namespace prov
