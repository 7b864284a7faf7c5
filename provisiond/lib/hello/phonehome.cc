#include "hello/phonehome.h"

#include <openssl/crypto.h>

#include "base/json_fields.h"
#include "base/tar.h"
#include "hello/facts.h"
#include "profiles/hardware_check.h"
#include "store/node_state.h"

namespace prov {

namespace {

bool Same(const std::string& given, const std::string& expected) {
  return !given.empty() && given.size() == expected.size() &&
         CRYPTO_memcmp(given.data(), expected.data(), given.size()) == 0;
}

}  // namespace

NodeCaller NodeCaller::From(const HttpRequest& request) {
  NodeCaller c;
  const std::string auth = request.Header("authorization");
  if (auth.rfind("Bearer ", 0) == 0) c.token = auth.substr(7);
  c.ticket = request.Header("x-provision-ticket");
  if (c.ticket.empty()) c.ticket = request.Query("ticket");
  c.remote = request.remote;
  c.privileged_port = request.FromPrivilegedPort();
  return c;
}

Status PhoneHome::Refuse(const NodeRecord& node, const std::string& what, const std::string& why,
                         const NodeCaller& caller) {
  EventRecord e{.node_id = node.id,
                .node = node.name(),
                .kind = "refused",
                .detail = what + " from " + caller.remote + ": " + why,
                .who = "boot"};
  inventory_.store().RecordEvent(e);
  return Status::Error(Code::kForbidden, what + " for " + node.name() + " refused: " + why);
}

Result<NodeRecord> PhoneHome::Authenticate(const std::string& mac_text, const NodeCaller& caller,
                                           int accepted, const std::string& what) {
  // Nodes name themselves by MAC; a hostname works too.
  auto mac = NormalizeMac(mac_text);
  auto node = inventory_.store().FindNode(mac.ok() ? *mac : mac_text);
  if (!node.ok()) return node.status();
  const bool ticket = (accepted & kTicket) && Same(caller.ticket, node->ticket);
  const bool token = (accepted & kToken) && Same(caller.token, node->token);
  if (!ticket && !token) {
    const std::string needs = accepted == kTicket  ? "this boot's ticket"
                              : accepted == kToken ? "that node's own token"
                                                   : "this boot's ticket or that node's own token";
    const bool none = caller.token.empty() && caller.ticket.empty();
    const std::string wrong = accepted == kTicket  ? " (wrong ticket)"
                              : accepted == kToken ? " (wrong token)"
                                                   : " (wrong ticket or token)";
    return Refuse(*node, what, "it needs " + needs + (none ? " (none given)" : wrong), caller);
  }
  if (!caller.privileged_port)
    return Refuse(*node, what,
                  "it must come from a privileged port (below 1024: only root on the node can "
                  "send it)",
                  caller);
  return node;
}

Result<std::string> PhoneHome::Overlay(const std::string& mac, const NodeCaller& caller) {
  auto node = Authenticate(mac, caller, kTicket, "overlay request");
  if (!node.ok()) return node.status();
  std::vector<TarEntry> files;
  files.push_back({"etc/hostname", node->hostname + "\n", 0644});
  std::string hosts = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n";
  const std::string url = boot_url_();
  // The control node, by the address nodes reach it at.
  size_t host_start = url.find("://");
  if (host_start != std::string::npos) {
    std::string host = url.substr(host_start + 3);
    host = host.substr(0, host.find_first_of(":/"));
    hosts += host + "\tprovisiond\n";
  }
  // Every node's overlay lists every node: the address book is read from the
  // store only when an address changed, not per overlay.
  const auto book = inventory_.store().Addresses();  // held: the loop reads it
  for (const auto& n : book->entries)
    if (!n.hostname.empty()) hosts += n.ip + "\t" + n.hostname + "\n";
  files.push_back({"etc/hosts", hosts, 0644});
  files.push_back({"root/.ssh", "", 0700, 0, 0, true});
  files.push_back({"root/.ssh/authorized_keys", control_key_ + "\n", 0600});
  files.push_back({"etc/provision", "", 0755, 0, 0, true});
  files.push_back({"etc/provision/control.pub", control_key_ + "\n", 0644});
  files.push_back({"etc/provision/agent.conf",
                   "# Written by provisiond for " + node->hostname +
                       "; read by provision-hello.\n"
                       "PROVISION_URL=" +
                       url + "\nPROVISION_MAC=" + node->mac + "\nPROVISION_NODE=" + node->hostname +
                       "\nPROVISION_TOKEN=" + node->token + "\nPROVISION_TICKET=" + node->ticket +
                       "\n",
                   0600});
  if (!node->profile_version.empty()) {
    auto profile = inventory_.Snapshot(node->profile_version);
    if (profile.ok()) {
      for (const auto& o : (*profile)->overlay)
        files.push_back({o.path, o.content, std::stoi(o.mode, nullptr, 8)});
      if (!(*profile)->storage.empty()) {
        // The volumes, and the wipes the operator allowed for this boot;
        // provision-storage.service runs when this file is there. md arrays
        // are provisiond's to assemble, not udev's (AUTO -all).
        nlohmann::json spec = {{"volumes", nlohmann::json::array()},
                               {"wipe", nlohmann::json::array()}};
        for (const auto& v : (*profile)->storage) spec["volumes"].push_back(ToJson(v));
        auto wipe = nlohmann::json::parse(node->storage_wipe, nullptr, false);
        if (wipe.is_array()) spec["wipe"] = wipe;
        files.push_back({"etc/provision/storage.json", spec.dump(2) + "\n", 0644});
        files.push_back({"etc/mdadm", "", 0755, 0, 0, true});
        files.push_back({"etc/mdadm/mdadm.conf",
                         "# Written by provisiond: the profile's arrays are assembled by "
                         "provision-storage.service.\nAUTO -all\n",
                         0644});
      }
    }
  }
  auto tar = WriteTar(files, NowMs() / 1000);
  if (!tar.ok()) return tar.status();
  EventRecord e{.node_id = node->id,
                .node = node->name(),
                .kind = "boot",
                .detail = StageText(BootStage::kOverlay, std::to_string(files.size()) + " files"),
                .who = "boot",
                .stage = BootStage::kOverlay};
  // The overlay is what the node asked for; its stage is only told.
  Status recorded = inventory_.store().Transact([&](StoreTx& tx) {
    auto n = tx.NodeById(node->id);
    if (!n.ok()) return n.status();
    n->stage = BootStage::kOverlay;
    n->last_seen_ms = NowMs();
    Status s = tx.UpdateNode(*n);
    return s.ok() ? tx.AppendEvent(e) : s;
  });
  if (!recorded.ok())
    spdlog::warn("{}: overlay stage not recorded: {}", node->name(), recorded.message());
  return tar;
}

Status PhoneHome::Report(const std::string& mac, const NodeCaller& caller, const std::string& stage,
                         const std::string& error) {
  auto node = Authenticate(mac, caller, kTicket | kToken, "failure report");
  if (!node.ok()) return node.status();
  EventRecord e{.node_id = node->id,
                .node = node->name(),
                .kind = "boot-error",
                .detail = stage + ": " + error,
                .who = "node"};
  return inventory_.store().AppendEvent(e);
}

Result<NodeRecord> PhoneHome::Hello(const std::string& mac, const NodeCaller& caller,
                                    const nlohmann::json& facts) {
  auto node = Authenticate(mac, caller, kToken, "phone-home");
  if (!node.ok()) return node.status();
  if (Status valid = ValidateFacts(facts); !valid.ok())
    return Status::Invalid("the phone-home of " + node->name() + " is refused: " + valid.message());
  if (node->state == NodeState::kRetired || node->state == NodeState::kMaintenance ||
      node->state == NodeState::kDiscovered)
    return Status::Conflict(node->name() + " is " + std::string(ToString(node->state)) +
                            ": its phone-home is not accepted");
  const std::string key = JsonString(facts, "ssh_host_key");
  if (!Same(caller.ticket, node->ticket)) {
    // Not the hello of a boot: the facts of a booted node, refreshed by its
    // agent. Its host key must be the pinned one: a new key comes only with
    // a new boot, through the boot path.
    if (node->host_key.empty() || node->state == NodeState::kEnrolled ||
        node->state == NodeState::kBooting)
      return Refuse(*node, "phone-home",
                    "the first phone-home of a boot needs this boot's ticket" +
                        std::string(caller.ticket.empty() ? " (none given)" : " (wrong ticket)"),
                    caller);
    if (!key.empty() && key != node->host_key)
      return Refuse(*node, "phone-home",
                    "it would change the pinned host key, which only a new boot (with its "
                    "ticket) may do",
                    caller);
    NodeRecord result;
    Status s = inventory_.store().Transact([&](StoreTx& tx) -> Status {
      auto n = tx.NodeById(node->id);
      if (!n.ok()) return n.status();
      n->facts = facts.dump();
      n->last_seen_ms = NowMs();
      Status u = tx.UpdateNode(*n);
      if (!u.ok()) return u;
      result = *n;
      EventRecord e{.node_id = n->id,
                    .node = n->name(),
                    .kind = "facts",
                    .detail = "facts refreshed from " + caller.remote,
                    .who = "node"};
      return tx.AppendEvent(e);
    });
    if (!s.ok()) return s;
    return result;
  }
  std::shared_ptr<const Profile> profile;
  if (!node->profile_version.empty()) {
    auto p = inventory_.Snapshot(node->profile_version);
    if (p.ok()) profile = std::move(*p);
  }
  // Why the node cannot be used as it booted: its hardware, or its storage.
  Status hardware = profile ? CheckHardware(*profile, facts) : Status::Ok();
  if (!hardware.ok())
    hardware = Status::Invalid("hardware: " + hardware.message());
  else if (profile)
    hardware = CheckStorageOutcome(*profile, facts);
  NodeRecord result;
  Status s = inventory_.store().Transact([&](StoreTx& tx) -> Status {
    auto n = tx.NodeById(node->id);
    if (!n.ok()) return n.status();
    NodeRecord updated = *n;
    updated.facts = facts.dump();
    updated.stage = BootStage::kHello;
    updated.configured.clear();  // a new boot: its RAM overlay is fresh
    updated.last_seen_ms = NowMs();
    updated.ticket.clear();  // spent
    // A wipe the operator allowed went with this boot's overlay: spent too.
    if (!updated.storage_wipe.empty()) {
      updated.storage_wipe.clear();
      EventRecord spent{.node_id = updated.id,
                        .node = updated.name(),
                        .kind = "storage",
                        .detail = "the wipe allowed for this boot is spent",
                        .who = "node"};
      Status w = tx.AppendEvent(spent);
      if (!w.ok()) return w;
    }
    // Host keys are made in the node's RAM overlay at every boot: the hello
    // of the boot, with its ticket, pins the key of this boot.
    std::string key_note;
    if (!key.empty() && key != updated.host_key) {
      key_note = updated.host_key.empty() ? "host key pinned"
                                          : "host key of this boot pinned (it changed)";
      updated.host_key = key;
    }
    const std::string image = JsonString(facts, "image");
    EventRecord e{
        .node_id = updated.id,
        .node = updated.name(),
        .kind = "boot",
        .detail = StageText(BootStage::kHello, "from " + caller.remote +
                                                   (image.empty() ? "" : ", image " + image) +
                                                   (key_note.empty() ? "" : "; " + key_note)),
        .who = "node",
        .stage = BootStage::kHello};
    if (updated.state != NodeState::kBooting) {
      Status t =
          tx.Transition(updated, NodeState::kBooting, "phoned home without a boot seen", "node");
      if (!t.ok()) return t;
    }
    Status t = hardware.ok()
                   ? tx.Transition(updated, NodeState::kBooted, "phoned home", "node")
                   : tx.Transition(updated, NodeState::kFailed, hardware.message(), "node");
    if (!t.ok()) return t;
    t = tx.AppendEvent(e);
    if (!t.ok()) return t;
    result = updated;
    return Status::Ok();
  });
  if (!s.ok()) return s;
  return result;
}

}  // namespace prov
