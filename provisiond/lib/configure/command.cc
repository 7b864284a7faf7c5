#include "configure/command.h"
#include "base/clock.h"

#include <chrono>
#include <thread>

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
  r.out = std::move(out->out);
  r.err = std::move(out->err);
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
  std::vector<std::thread> threads;
  threads.reserve(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i)
    threads.emplace_back(
        [&, i] { results[i] = RunOnNode(store, sessions, nodes[i], command, user, timeout_ms); });
  for (auto& t : threads) t.join();
  return results;
}

}  // namespace prov
