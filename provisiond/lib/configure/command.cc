#include "configure/command.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "base/clock.h"
#include "base/strings.h"
#include "base/thread.h"
#include "configure/play_runner.h"

namespace prov {

nlohmann::json ToJson(const CommandResult& c) {
  nlohmann::json j = {{"node", c.node},           {"status", ToString(c.status)},
                      {"exit_code", c.exit_code}, {"stdout", c.out},
                      {"stderr", c.err},          {"duration_ms", c.duration_ms}};
  if (!c.error.empty()) j["error"] = c.error;
  return j;
}

namespace {

CommandResult RunOnNode(Store& store, Sessions& sessions, const std::string& name,
                        const std::string& command, const std::string& user, int timeout_ms,
                        size_t output_bytes) {
  auto start = std::chrono::steady_clock::now();
  CommandResult r;
  r.node = name;
  auto node = store.FindNode(name);
  if (!node.ok()) {
    r.status = CommandStatus::kFailed;
    r.error = node.status().message();
    return r;
  }
  r.node = node->name();
  auto lease = sessions.AcquireOrSpare(node->id);
  auto session = lease.Get(*node);
  if (!session.ok()) {
    r.status = session.status().code() == Code::kUnavailable ? CommandStatus::kUnreachable
                                                             : CommandStatus::kFailed;
    r.error = session.status().message();
    r.duration_ms = SinceMs(start);
    return r;
  }
  auto out = (*session)->Run(command, "", user, timeout_ms);
  r.duration_ms = SinceMs(start);
  if (!out.ok()) {
    r.status = CommandStatus::kUnreachable;
    r.error = out.status().message();
    lease.Drop();
    return r;
  }
  r.exit_code = out->exit_code;
  // The last output_bytes of each stream: the answer stays bounded however
  // much a command prints on however many nodes.
  auto tail = [output_bytes](const std::string& text) {
    if (text.size() <= output_bytes) return text;
    return "[" + std::to_string(text.size() - output_bytes) + " bytes cut]\n" +
           OutputTail(text, output_bytes);
  };
  r.out = tail(out->out);
  r.err = tail(out->err);
  r.status = out->timed_out        ? CommandStatus::kTimeout
             : out->exit_code == 0 ? CommandStatus::kOk
                                   : CommandStatus::kFailed;
  if (out->timed_out) r.error = "timed out after " + std::to_string(timeout_ms / 1000) + " s";
  return r;
}

}  // namespace

std::vector<CommandResult> RunCommandOnNodes(Store& store, Sessions& sessions,
                                             const std::vector<std::string>& nodes,
                                             const std::string& command, const std::string& user,
                                             int timeout_ms, size_t output_bytes) {
  std::vector<CommandResult> results(nodes.size());
  // At most kCommandWorkers sessions at once, however many nodes are named:
  // each worker takes the next node until none is left.
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < nodes.size();) {
      bool ran = false;
      RunGuarded("command", [&] {
        results[i] = RunOnNode(store, sessions, nodes[i], command, user, timeout_ms, output_bytes);
        ran = true;
      });
      if (!ran) {  // it threw: a failure of this node's alone
        results[i].node = nodes[i];
        results[i].status = CommandStatus::kFailed;
        results[i].error = "internal error (see provisiond's log)";
      }
    }
  };
  std::vector<std::thread> threads;
  const size_t workers = std::min(nodes.size(), kCommandWorkers);
  threads.reserve(workers);
  for (size_t w = 0; w < workers; ++w) threads.emplace_back(work);
  for (auto& t : threads) t.join();
  return results;
}

nlohmann::json ToJson(const GatherResult& g) {
  nlohmann::json j = {
      {"node", g.node}, {"status", ToString(g.status)}, {"duration_ms", g.duration_ms}};
  if (g.status == CommandStatus::kOk) {
    j["size"] = g.size;
    j["content_base64"] = g.base64;
  }
  if (!g.error.empty()) j["error"] = g.error;
  return j;
}

Status ValidateGatherPath(const std::string& path) {
  if (path.empty() || path[0] != '/')
    return Status::Invalid("path '" + path.substr(0, 200) + "' must be absolute");
  if (path.size() > 4096) return Status::Invalid("path is longer than 4096 bytes");
  for (char c : path)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      return Status::Invalid("path has a control character");
  return Status::Ok();
}

std::vector<GatherResult> GatherFromNodes(Store& store, Sessions& sessions,
                                          const std::vector<std::string>& nodes,
                                          const std::string& path, const std::string& user,
                                          int timeout_ms) {
  // Exit 3: what the node says on stderr is the node's error.
  const std::string quoted = ShlexQuote(path);
  const std::string max = std::to_string(kGatherMaxBytes);
  const std::string script =
      "f=" + quoted +
      "\n"
      "if [ ! -e \"$f\" ]; then\n"
      "  case \"$(LC_ALL=C ls -d -- \"$f\" 2>&1)\" in\n"
      "  *'Permission denied'*) echo \"cannot reach $f as $(id -un)\" >&2 ;;\n"
      "  *) echo \"no such file: $f\" >&2 ;;\n"
      "  esac\n"
      "  exit 3\n"
      "fi\n"
      "if [ ! -f \"$f\" ]; then echo \"not a regular file: $f\" >&2; exit 3; fi\n"
      "if [ ! -r \"$f\" ]; then echo \"cannot read $f as $(id -un)\" >&2; exit 3; fi\n"
      "size=$(stat -L -c %s -- \"$f\") || exit 3\n"
      "if [ \"$size\" -gt " +
      max + " ]; then echo \"$f has $size bytes, more than the " + max +
      " gather takes\" >&2; exit 3; fi\n"
      "head -c " +
      max + " -- \"$f\" | base64 -w 0\n";
  // Base64 of kGatherMaxBytes, and a little: a file that grew while it was
  // read shows as cut, never as a part.
  const size_t output_bytes = (kGatherMaxBytes + 2) / 3 * 4 + 64;
  auto commands = RunCommandOnNodes(store, sessions, nodes, script, user, timeout_ms, output_bytes);
  std::vector<GatherResult> out;
  out.reserve(commands.size());
  for (auto& c : commands) {
    GatherResult g;
    g.node = c.node;
    g.duration_ms = c.duration_ms;
    g.status = c.status;
    g.error = c.error;
    if (c.status == CommandStatus::kFailed && c.exit_code == 3) {
      g.error = OutputTail(c.err, 500);
      while (!g.error.empty() && g.error.back() == '\n') g.error.pop_back();
    } else if (c.status == CommandStatus::kFailed && g.error.empty()) {
      g.error = "exit code " + std::to_string(c.exit_code) + ": " + OutputTail(c.err, 500);
    } else if (c.status == CommandStatus::kOk) {
      size_t pad = 0;
      while (pad < c.out.size() && pad < 2 && c.out[c.out.size() - 1 - pad] == '=') ++pad;
      const bool whole = c.out.size() % 4 == 0 && c.out.size() <= output_bytes &&
                         c.out.find_first_not_of(
                             "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstu"
                             "vwxyz0123456789+/=") == std::string::npos;
      if (!whole) {
        g.status = CommandStatus::kFailed;
        g.error = "the file changed while it was read (its content did not arrive whole)";
      } else {
        g.size = static_cast<int64_t>(c.out.size() / 4 * 3 - pad);
        g.base64 = std::move(c.out);
      }
    }
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace prov
