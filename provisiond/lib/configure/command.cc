#include "configure/command.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "base/clock.h"
#include "configure/play_runner.h"

namespace prov {

nlohmann::json ToJson(const CommandResult& c) {
  nlohmann::json j = {{"node", c.node},  {"status", c.status}, {"exit_code", c.exit_code},
                      {"stdout", c.out}, {"stderr", c.err},    {"duration_ms", c.duration_ms}};
  if (!c.error.empty()) j["error"] = c.error;
  return j;
}

namespace {

CommandResult RunOnNode(Store& store, Sessions& sessions, const std::string& name,
                        const std::string& command, const std::string& user, int timeout_ms) {
  auto start = std::chrono::steady_clock::now();
  CommandResult r;
  r.node = name;
  auto node = store.FindNode(name);
  if (!node.ok()) {
    r.status = "failed";
    r.error = node.status().message();
    return r;
  }
  r.node = node->name();
  auto lease = sessions.AcquireOrSpare(node->id);
  auto session = lease.Get(*node);
  if (!session.ok()) {
    r.status = session.status().code() == Code::kUnavailable ? "unreachable" : "failed";
    r.error = session.status().message();
    r.duration_ms = SinceMs(start);
    return r;
  }
  auto out = (*session)->Run(command, "", user, timeout_ms);
  r.duration_ms = SinceMs(start);
  if (!out.ok()) {
    r.status = "unreachable";
    r.error = out.status().message();
    lease.Drop();
    return r;
  }
  r.exit_code = out->exit_code;
  // The last kCommandOutputBytes of each stream: the answer stays bounded
  // however much a command prints on however many nodes.
  auto tail = [](const std::string& text) {
    if (text.size() <= kCommandOutputBytes) return text;
    return "[" + std::to_string(text.size() - kCommandOutputBytes) + " bytes cut]\n" +
           OutputTail(text, kCommandOutputBytes);
  };
  r.out = tail(out->out);
  r.err = tail(out->err);
  r.status = out->timed_out ? "timeout" : out->exit_code == 0 ? "ok" : "failed";
  if (out->timed_out) r.error = "timed out after " + std::to_string(timeout_ms / 1000) + " s";
  return r;
}

}  // namespace

std::vector<CommandResult> RunCommandOnNodes(Store& store, Sessions& sessions,
                                             const std::vector<std::string>& nodes,
                                             const std::string& command, const std::string& user,
                                             int timeout_ms) {
  std::vector<CommandResult> results(nodes.size());
  // At most kCommandWorkers sessions at once, however many nodes are named:
  // each worker takes the next node until none is left.
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < nodes.size();)
      results[i] = RunOnNode(store, sessions, nodes[i], command, user, timeout_ms);
  };
  std::vector<std::thread> threads;
  const size_t workers = std::min(nodes.size(), kCommandWorkers);
  threads.reserve(workers);
  for (size_t w = 0; w < workers; ++w) threads.emplace_back(work);
  for (auto& t : threads) t.join();
  return results;
}

}  // namespace prov
