#include "configure/sessions.h"

#include <atomic>

namespace prov {

// A node's session; its mutex is held by the lease that uses it.
struct Sessions::Slot {
  std::mutex mu;
  std::atomic<int> waiting{0};  // in Acquire, the lease held by another
  std::unique_ptr<NodeSession> session;
};

SessionConnector SshConnector(std::string key_path) {
  return [key_path = std::move(key_path)](
             const SshEndpoint& endpoint) -> Result<std::unique_ptr<NodeSession>> {
    auto session = SshSession::Connect(endpoint, key_path);
    if (!session.ok()) return session.status();
    return std::unique_ptr<NodeSession>(std::move(*session));
  };
}

bool SameHostKey(const std::string& a, const std::string& b) {
  auto head = [](const std::string& k) {
    auto first = k.find(' ');
    if (first == std::string::npos) return k;
    auto second = k.find(' ', first + 1);
    return k.substr(0, second);
  };
  return head(a) == head(b);
}

Sessions::Sessions(Store& store, SessionSettings settings, SessionConnector connect)
    : store_(store), settings_(std::move(settings)), connect_(std::move(connect)) {}

Sessions::~Sessions() = default;

Sessions::Lease::Lease(Sessions& owner, std::shared_ptr<Slot> slot,
                       std::unique_lock<std::mutex> lock)
    : owner_(&owner), slot_(std::move(slot)), lock_(std::move(lock)) {}
Sessions::Lease::Lease(Lease&&) noexcept = default;
Sessions::Lease::~Lease() = default;

std::shared_ptr<Sessions::Slot> Sessions::SlotFor(int64_t node_id) {
  std::lock_guard lock(mu_);
  auto& slot = slots_[node_id];
  if (!slot) slot = std::make_shared<Slot>();
  return slot;
}

Sessions::Lease Sessions::Acquire(int64_t node_id) {
  auto slot = SlotFor(node_id);
  std::unique_lock lock(slot->mu, std::try_to_lock);
  if (!lock.owns_lock()) {
    ++slot->waiting;
    lock.lock();
    --slot->waiting;
  }
  return Lease(*this, std::move(slot), std::move(lock));
}

int Sessions::waiting(int64_t node_id) {
  return SlotFor(node_id)->waiting.load();
}

Sessions::Lease Sessions::AcquireOrSpare(int64_t node_id) {
  auto slot = SlotFor(node_id);
  std::unique_lock lock(slot->mu, std::try_to_lock);
  if (lock.owns_lock()) return Lease(*this, std::move(slot), std::move(lock));
  return Lease(*this, std::make_shared<Slot>(), {});
}

Result<NodeSession*> Sessions::Lease::Get(const NodeRecord& node) {
  if (node.ip.empty())
    return Status::Error(Code::kUnavailable, node.name() +
                                                 " has no address yet (it has not booted, or was "
                                                 "enrolled without --ip)");
  auto& session = slot_->session;
  if (session && session->alive() &&
      (node.host_key.empty() || SameHostKey(session->host_key(), node.host_key)))
    return session.get();
  session.reset();
  auto fresh = owner_->Connect(node);
  if (!fresh.ok()) return fresh.status();
  session = std::move(*fresh);
  return session.get();
}

void Sessions::Lease::Drop() {
  slot_->session.reset();
}

Result<std::unique_ptr<NodeSession>> Sessions::Connect(const NodeRecord& node) {
  SshEndpoint ep;
  ep.node = node.name();
  ep.host = node.ip;
  ep.port = settings_.ssh_port;
  ep.user = settings_.ssh_user;
  ep.pinned_host_key = node.host_key;
  ep.connect_timeout_ms = settings_.connect_timeout_ms;
  auto session = connect_(ep);
  if (!session.ok()) {
    if (session.status().code() == Code::kForbidden) {
      EventRecord e{.node_id = node.id,
                    .node = node.name(),
                    .kind = "ssh",
                    .detail = session.status().message(),
                    .who = "provisiond"};
      store_.RecordEvent(e);
    }
    return session.status();
  }
  if ((*session)->pinned_now()) PinFirstContact(node, (*session)->host_key());
  return session;
}

// Stores the key on the node unless one was pinned meanwhile (a hello).
void Sessions::PinFirstContact(const NodeRecord& node, const std::string& key) {
  // The session goes on with the key it checked either way; a key not stored
  // is offered again (and pinned) at the next contact.
  Status s = store_.Transact([&](StoreTx& tx) -> Status {
    auto n = tx.NodeById(node.id);
    if (!n.ok() || !n->host_key.empty()) return Status::Ok();
    n->host_key = key;
    Status s = tx.UpdateNode(*n);
    if (!s.ok()) return s;
    EventRecord e{
        .node_id = n->id,
        .node = n->name(),
        .kind = "ssh",
        .detail = "host key pinned at first contact over SSH: " + key.substr(0, 60) + "...",
        .who = "provisiond"};
    return tx.AppendEvent(e);
  });
  if (!s.ok()) spdlog::warn("{}: host key not pinned: {}", node.name(), s.message());
}

}  // namespace prov
