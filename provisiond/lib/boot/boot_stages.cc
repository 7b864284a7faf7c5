// The boot stage machine: each stage a node reaches (DHCP, loader, kernel,
// initrd, hello...) recorded as an event with its stage, moving the node
// to booting when a boot begins, and what is recorded of unknown MACs.
#include "boot/boot.h"

#include <spdlog/spdlog.h>

#include "base/mac.h"
#include "store/node_state.h"

namespace prov {

namespace {

// States in which a boot request means the node is (re)booting now.
bool BootMovesToBooting(NodeState s) {
  return s == NodeState::kEnrolled || s == NodeState::kBooted || s == NodeState::kConfiguring ||
         s == NodeState::kReady || s == NodeState::kFailed;
}

}  // namespace

void BootService::NoteStage(const std::string& mac, BootStage stage, const std::string& detail,
                            const std::string& ip) {
  if (auto n = RecordStage(mac, stage, detail, ip); !n.ok())
    spdlog::warn("{}: stage {} not recorded: {}", mac, ToString(stage), n.status().message());
}

Result<NodeRecord> BootService::RecordStage(const std::string& mac, BootStage stage,
                                            const std::string& detail, const std::string& ip) {
  constexpr int64_t kRepeatWindowMs = 3000;
  // An unknown machine that keeps asking (or someone making up requests in
  // its name) is recorded once a minute, not once a request.
  constexpr int64_t kDiscoveredWindowMs = 60000;
  const std::string key = mac + '\0' + std::string(ToString(stage));
  const int64_t now = NowMs();
  // The hot path (a storm of requests): a node already booting that asks for
  // the same stage again needs no write.
  auto found = store_.FindNode(mac);
  if (found.ok() && found->stage == stage &&
      (found->state == NodeState::kBooting || found->state == NodeState::kDiscovered)) {
    const int64_t window =
        found->state == NodeState::kDiscovered ? kDiscoveredWindowMs : kRepeatWindowMs;
    std::lock_guard lock(recent_mu_);
    auto it = recent_.find(key);
    if (it != recent_.end() && now - it->second < window) return found;
  }
  const std::string text = StageText(stage, detail);
  NodeRecord result;
  bool capped = false;
  std::string staged;  // the event's text, when one was written
  BootStage staged_stage = stage;
  Status s = store_.Transact([&](StoreTx& tx) -> Status {
    auto current = tx.FindNode(mac);
    if (!current.ok()) {
      if (tx.CountInState(NodeState::kDiscovered) >= settings_.max_discovered) {
        capped = true;
        return Status::Ok();
      }
      NodeRecord n;
      n.mac = mac;
      n.ip = ip;
      n.state = NodeState::kDiscovered;
      n.stage = stage;
      n.last_seen_ms = now;
      auto inserted = tx.InsertNode(n);
      if (!inserted.ok()) return inserted.status();
      result = *inserted;
      EventRecord e{.node_id = inserted->id,
                    .node = mac,
                    .kind = "discovered",
                    .detail = "unknown MAC seen at " + text,
                    .who = "boot"};
      return tx.AppendEvent(e);
    }
    NodeRecord node = *current;
    // After the initrd is downloaded, a DHCP request is the initrd bringing
    // up the network: a stage of its own, not a new boot.
    if (stage == BootStage::kDhcp && node.state == NodeState::kBooting &&
        (node.stage == BootStage::kInitrd || node.stage == BootStage::kKernel)) {
      node.stage = BootStage::kNetwork;
      node.last_seen_ms = now;
      Status u = tx.UpdateNode(node);
      if (!u.ok()) return u;
      result = node;
      EventRecord e{.node_id = node.id,
                    .node = node.name(),
                    .kind = "boot",
                    .detail = StageText(BootStage::kNetwork, detail + " (the initrd's DHCP)"),
                    .who = "boot",
                    .stage = BootStage::kNetwork};
      staged = e.detail;
      staged_stage = BootStage::kNetwork;
      return tx.AppendEvent(e);
    }
    // A DHCP renewal from a running node is not a boot.
    if (stage == BootStage::kDhcp && !BootMovesToBooting(node.state) &&
        node.state != NodeState::kBooting && node.state != NodeState::kDiscovered) {
      node.last_seen_ms = now;
      result = node;
      return tx.UpdateNode(node);
    }
    node.stage = stage;
    node.last_seen_ms = now;
    // An address learnt from a request is only the peer's: with reservations
    // (full DHCP) only dnsmasq's lease counts, or a request from anywhere
    // could claim the address a node's ticket is then served to.
    if (node.ip.empty() && !ip.empty() &&
        (!settings_.reserved_addresses || stage == BootStage::kDhcp))
      node.ip = ip;
    if (BootMovesToBooting(node.state) && node.state != NodeState::kBooting &&
        !(stage == BootStage::kDhcp && node.state != NodeState::kEnrolled &&
          node.state != NodeState::kFailed)) {
      Status t = tx.Transition(node, NodeState::kBooting, text, "boot");
      if (!t.ok()) return t;
    } else {
      Status u = tx.UpdateNode(node);
      if (!u.ok()) return u;
    }
    result = node;
    EventRecord e{.node_id = node.id,
                  .node = node.name(),
                  .kind = "boot",
                  .detail = text,
                  .who = "boot",
                  .stage = stage};
    staged = text;
    return tx.AppendEvent(e);
  });
  if (!s.ok()) return s;
  if (!staged.empty() && settings_.on_stage) settings_.on_stage(result, staged_stage, staged);
  if (capped) {
    // Said once a minute at most: the flood is what is being bounded.
    static std::atomic<int64_t> last_said{0};
    if (now - last_said.exchange(now) > 60000)
      spdlog::warn("{} discovered nodes already (discovery.max_pending): {} is not recorded",
                   settings_.max_discovered, mac);
    NodeRecord unknown;
    unknown.mac = mac;
    unknown.state = NodeState::kDiscovered;
    return unknown;
  }
  std::lock_guard lock(recent_mu_);
  if (recent_.size() > 100000) recent_.clear();  // bounded; only an optimization
  recent_[key] = now;
  return result;
}

}  // namespace prov
