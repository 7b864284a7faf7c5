#include "watch/heartbeat.h"

#include <spdlog/spdlog.h>

#include <set>
#include <utility>

#include "base/strings.h"
#include "hello/facts.h"

namespace prov {

namespace {

constexpr const char* kHeartbeatWho = "heartbeat";

// The start of a boot id, enough to tell two apart in an event.
std::string BootIdStart(const std::string& id) {
  return id.empty() ? std::string("none") : id.substr(0, 8);
}

}  // namespace

Heartbeat::Heartbeat(Inventory& inventory, HeartbeatProbes probes, int interval_ms)
    : inventory_(inventory), probes_(std::move(probes)), interval_ms_(interval_ms) {}

Heartbeat::~Heartbeat() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Heartbeat::Start() {
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!wake_.wait_for(lock, std::chrono::milliseconds(interval_ms_), [&] { return stop_; })) {
      lock.unlock();
      try {
        Beat();
      } catch (const std::exception& e) {
        spdlog::error("heartbeat: {}", e.what());
      }
      lock.lock();
    }
  });
}

void Heartbeat::Beat() {
  std::vector<NodeRecord> watched;
  std::vector<Recovery> recovery;
  for (const NodeRecord& n : inventory_.store().ListNodes()) {
    if (n.host_key.empty() || (n.state != NodeState::kReady && n.state != NodeState::kFailed))
      continue;
    Recovery r;
    if (!n.profile_version.empty())
      if (auto p = inventory_.Snapshot(n.profile_version); p.ok()) r = (*p)->recovery;
    if (!n.installed && !r.on()) continue;
    watched.push_back(n);
    recovery.push_back(r);
  }
  // A node not read this round (booting, being configured) starts any
  // silence afresh when it is read again.
  std::set<std::string> read;
  for (const NodeRecord& n : watched) read.insert(n.name());
  std::erase_if(silent_since_, [&](const auto& entry) { return !read.contains(entry.first); });
  if (watched.empty()) return;
  std::vector<Result<std::string>> ids = probes_.boot_ids(watched);
  for (size_t i = 0; i < watched.size(); ++i) {
    if (i >= ids.size()) {
      Silent(watched[i], "no answer was read", recovery[i]);
    } else if (!ids[i].ok()) {
      Silent(watched[i], ids[i].status().message(), recovery[i]);
    } else {
      std::string id = Trim(*ids[i]);
      if (IsBootId(id))
        Heard(watched[i], id);
      else
        Silent(watched[i], "it answered no boot id ('" + id.substr(0, 60) + "')", recovery[i]);
    }
  }
}

void Heartbeat::Event(const NodeRecord& node, const std::string& detail) {
  inventory_.store().RecordEvent({.node_id = node.id,
                                  .node = node.name(),
                                  .kind = "heartbeat",
                                  .detail = detail,
                                  .who = kHeartbeatWho});
}

void Heartbeat::Silent(const NodeRecord& node, const std::string& why, const Recovery& recovery) {
  const int64_t now = probes_.now ? probes_.now() : NowMs();
  auto since = silent_since_.try_emplace(node.name(), now).first;
  auto [it, first] = answered_.try_emplace(node.name(), false);
  if (first || it->second) Event(node, "no answer over SSH: " + why);  // once per silence
  it->second = false;
  if (!recovery.on() || node.state != NodeState::kReady) return;
  if (now - since->second < recovery.silent_for_s * 1000) return;
  if (Recover(node, recovery, now - since->second))
    silent_since_.erase(since);  // booting: its silence starts when it is ready again
  else
    since->second = now;  // the next try only after silent_for again
}

bool Heartbeat::Recover(const NodeRecord& node, const Recovery& recovery, int64_t silent_ms) {
  // The tries in the window, from the node's own events.
  const int64_t from = NowMs() - recovery.window_s * 1000;
  long tries = 0;
  for (const EventRecord& e : inventory_.store().LastEvents(node.id, 500))
    if (e.time_ms >= from && e.kind == "power" && e.who == kHeartbeatWho &&
        e.detail.rfind("cycle (recovery", 0) == 0)
      ++tries;
  const std::string silence = "no answer over SSH for " + std::to_string(silent_ms / 1000) + " s";
  if (tries >= recovery.cycles) {
    const std::string reason = silence + " after " + std::to_string(tries) +
                               " power cycle(s) in the last " + std::to_string(recovery.window_s) +
                               " s (its profile's recovery allows " +
                               std::to_string(recovery.cycles) + "): not cycled again";
    Status s = inventory_.store().Transact([&](StoreTx& tx) {
      auto n = tx.FindNode(node.name());
      if (!n.ok()) return n.status();
      if (n->state != NodeState::kReady) return Status::Ok();  // someone else moved it
      return tx.Transition(*n, NodeState::kFailed, reason, kHeartbeatWho);
    });
    if (!s.ok()) spdlog::warn("heartbeat: {}: {}", node.name(), s.message());
    spdlog::warn("heartbeat: {} failed: {}", node.name(), reason);
    return false;
  }
  const std::string why = "recovery: " + silence + ", try " + std::to_string(tries + 1) + " of " +
                          std::to_string(recovery.cycles) + " in " +
                          std::to_string(recovery.window_s) + " s";
  if (!probes_.power_cycle) return false;
  auto done = probes_.power_cycle(node, why);
  spdlog::info("heartbeat: {} power-cycled ({}): {}", node.name(), why,
               done.ok() ? *done : done.status().message());
  if (!done.ok() || node.installed) return false;
  // A netbooted node's boot path takes it from here (booting → ready); until
  // it is ready again it is not read, so its boot is not taken for silence.
  Status s = inventory_.store().Transact([&](StoreTx& tx) {
    auto n = tx.FindNode(node.name());
    if (!n.ok()) return n.status();
    if (n->state != NodeState::kReady) return Status::Ok();
    return tx.Transition(*n, NodeState::kBooting, "power-cycled by its profile's recovery",
                         kHeartbeatWho);
  });
  if (!s.ok()) spdlog::warn("heartbeat: {}: {}", node.name(), s.message());
  return s.ok();
}

void Heartbeat::Heard(const NodeRecord& node, const std::string& boot_id) {
  silent_since_.erase(node.name());
  auto [it, first] = answered_.try_emplace(node.name(), true);
  if (!first && !it->second) Event(node, "answers again over SSH");
  it->second = true;
  auto known = nlohmann::json::parse(node.facts.empty() ? "{}" : node.facts, nullptr, false);
  if (!known.is_object()) known = nlohmann::json::object();
  const std::string before = known.value("boot_id", "");
  // A netbooted node's boots are seen on its boot path (boot stages, the
  // phone-home): here it has only answered.
  if (before == boot_id || before.empty() || !node.installed) {
    // The same boot (or a node adopted before facts had boot ids: this one
    // is its boot from now on): it answered now.
    Status s = inventory_.store().Transact([&](StoreTx& tx) {
      auto n = tx.FindNode(node.name());
      if (!n.ok()) return n.status();
      n->last_seen_ms = NowMs();
      if (before.empty()) {
        auto facts = nlohmann::json::parse(n->facts.empty() ? "{}" : n->facts, nullptr, false);
        if (facts.is_object()) {
          facts["boot_id"] = boot_id;
          n->facts = facts.dump();
        }
      }
      return tx.UpdateNode(*n);
    });
    if (!s.ok()) spdlog::warn("heartbeat: {}: {}", node.name(), s.message());
    return;
  }
  // It has booted since: what it is now, then its configuration again.
  auto facts = probes_.facts(node);
  Status valid = facts.ok() ? ValidateFacts(*facts) : facts.status();
  if (valid.ok() && facts->value("boot_id", "") != boot_id && facts->contains("boot_id"))
    valid = Status::Invalid("its facts name boot " + BootIdStart(facts->value("boot_id", "")) +
                            ", not the one it answered");
  if (!valid.ok()) {
    // Said once per boot; each round tries again.
    if (std::exchange(unread_boot_[node.name()], boot_id) != boot_id)
      Event(node, "rebooted (boot " + BootIdStart(before) + " → " + BootIdStart(boot_id) +
                      "), but its facts could not be collected: " + valid.message());
    return;
  }
  unread_boot_.erase(node.name());
  (*facts)["boot_id"] = boot_id;
  auto rebooted = inventory_.Rebooted(node.name(), *facts,
                                      "rebooted (boot " + BootIdStart(before) + " → " +
                                          BootIdStart(boot_id) + "), seen by its heartbeat",
                                      kHeartbeatWho);
  if (!rebooted.ok()) {
    spdlog::info("heartbeat: {} rebooted: {}", node.name(), rebooted.status().message());
    return;
  }
  spdlog::info("heartbeat: {} rebooted (boot {} → {})", node.name(), BootIdStart(before),
               BootIdStart(boot_id));
  if (rebooted->state == NodeState::kBooted && !rebooted->profile_version.empty() &&
      probes_.configure)
    probes_.configure(rebooted->name());
}

}  // namespace prov
