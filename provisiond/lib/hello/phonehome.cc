#include "hello/phonehome.h"

#include <openssl/crypto.h>

#include "base/json_fields.h"
#include "base/tar.h"
#include "profiles/hardware_check.h"
#include "store/node_state.h"

namespace prov {

Result<NodeRecord> PhoneHome::Authenticate(const std::string& mac_text, const std::string& token,
                                           const std::string& what, const std::string& remote) {
  // Nodes name themselves by MAC; a hostname works too.
  auto mac = NormalizeMac(mac_text);
  auto node = inventory_.store().FindNode(mac.ok() ? *mac : mac_text);
  if (!node.ok()) return node.status();
  bool good = !token.empty() && token.size() == node->token.size() &&
              CRYPTO_memcmp(token.data(), node->token.data(), token.size()) == 0;
  if (!good) {
    EventRecord e{
        0,
        0,
        node->id,
        node->name(),
        "refused",
        what + " from " + remote + " with " + (token.empty() ? "no token" : "a wrong token"),
        "boot"};
    inventory_.store().AppendEvent(e);
    return Status::Error(Code::kForbidden,
                         what + " for " + node->name() + " needs that node's own token");
  }
  return node;
}

Result<std::string> PhoneHome::Overlay(const std::string& mac, const std::string& token,
                                       const std::string& remote) {
  auto node = Authenticate(mac, token, "overlay request", remote);
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
  for (const auto& n : inventory_.store().Addresses()->entries)
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
                       "\nPROVISION_TOKEN=" + node->token + "\n",
                   0600});
  if (!node->profile_version.empty()) {
    auto profile = inventory_.Snapshot(node->profile_version);
    if (profile.ok())
      for (const auto& o : (*profile)->overlay)
        files.push_back({o.path, o.content, std::stoi(o.mode, nullptr, 8)});
  }
  auto tar = WriteTar(files, NowMs() / 1000);
  if (!tar.ok()) return tar.status();
  EventRecord e{0,        0,
                node->id, node->name(),
                "boot",   "overlay: " + std::to_string(files.size()) + " files",
                "boot"};
  inventory_.store().Transact([&](StoreTx& tx) {
    auto n = tx.NodeById(node->id);
    if (!n.ok()) return n.status();
    n->stage = "overlay";
    n->last_seen_ms = NowMs();
    Status s = tx.UpdateNode(*n);
    return s.ok() ? tx.AppendEvent(e) : s;
  });
  return tar;
}

Status PhoneHome::Report(const std::string& mac, const std::string& token, const std::string& stage,
                         const std::string& error, const std::string& remote) {
  auto node = Authenticate(mac, token, "failure report", remote);
  if (!node.ok()) return node.status();
  EventRecord e{0, 0, node->id, node->name(), "boot-error", stage + ": " + error, "node"};
  return inventory_.store().AppendEvent(e);
}

Result<NodeRecord> PhoneHome::Hello(const std::string& mac, const std::string& token,
                                    const nlohmann::json& facts, const std::string& remote) {
  auto node = Authenticate(mac, token, "phone-home", remote);
  if (!node.ok()) return node.status();
  if (!facts.is_object()) return Status::Invalid("the facts must be a JSON object");
  if (node->state == NodeState::kRetired || node->state == NodeState::kMaintenance ||
      node->state == NodeState::kDiscovered)
    return Status::Conflict(node->name() + " is " + std::string(ToString(node->state)) +
                            ": its phone-home is not accepted");
  std::shared_ptr<const Profile> profile;
  if (!node->profile_version.empty()) {
    auto p = inventory_.Snapshot(node->profile_version);
    if (p.ok()) profile = std::move(*p);
  }
  Status hardware = profile ? CheckHardware(*profile, facts) : Status::Ok();
  NodeRecord result;
  Status s = inventory_.store().Transact([&](StoreTx& tx) -> Status {
    auto n = tx.NodeById(node->id);
    if (!n.ok()) return n.status();
    NodeRecord updated = *n;
    updated.facts = facts.dump();
    updated.stage = "hello";
    updated.configured.clear();  // a new boot: its RAM overlay is fresh
    updated.last_seen_ms = NowMs();
    std::string key = JsonString(facts, "ssh_host_key");
    // Host keys are made in the node's RAM overlay at every boot: the hello,
    // authenticated by the node's token, pins the key of this boot.
    std::string key_note;
    if (!key.empty() && key != updated.host_key) {
      key_note = updated.host_key.empty() ? "host key pinned"
                                          : "host key of this boot pinned (it changed)";
      updated.host_key = key;
    }
    const std::string image = JsonString(facts, "image");
    EventRecord e{0,
                  0,
                  updated.id,
                  updated.name(),
                  "boot",
                  "hello: from " + remote + (image.empty() ? "" : ", image " + image) +
                      (key_note.empty() ? "" : "; " + key_note),
                  "node"};
    if (updated.state != NodeState::kBooting) {
      Status t =
          tx.Transition(updated, NodeState::kBooting, "phoned home without a boot seen", "node");
      if (!t.ok()) return t;
    }
    Status t = hardware.ok() ? tx.Transition(updated, NodeState::kBooted, "phoned home", "node")
                             : tx.Transition(updated, NodeState::kFailed,
                                             "hardware: " + hardware.message(), "node");
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
