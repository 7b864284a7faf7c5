#include "hello/phonehome.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>

#include "base/file_util.h"
#include "base/process.h"
#include "base/tar.h"
#include "base/temp_dir.h"
#include "store/testing/test_database.h"

namespace prov {
namespace {

struct PhoneHomeFixture {
  std::unique_ptr<Store> store = std::move(*Store::Open(::prov::testing::TestDatabase()));
  TempDir snapshots{"snapshots"};
  Inventory inventory{*store, PROVISION_SOURCE_DIR "/profiles", PROVISION_SOURCE_DIR "/playbooks",
                      snapshots.path()};
  PhoneHome home{inventory, "ssh-ed25519 AAAAcontrol provisiond@control",
                 [] { return std::string("http://10.99.0.1:8080"); }};
  NodeRecord Enroll(const std::string& host, const std::string& mac, const std::string& profile) {
    auto n = inventory.Enroll({host, mac, "10.99.0.10", profile}, "test");
    REQUIRE_MESSAGE(n.ok(), n.status().message());
    return *n;
  }
  // What the boot script does: issues the boot's ticket.
  std::string Ticket(const std::string& host) {
    std::string ticket = "ticket-" + host + "-0123456789abcdef";
    REQUIRE(store
                ->Transact([&](StoreTx& tx) {
                  auto n = tx.FindNode(host);
                  if (!n.ok()) return n.status();
                  n->ticket = ticket;
                  return tx.UpdateNode(*n);
                })
                .ok());
    return ticket;
  }
  // A request from the node's root (port 700) or from one of its users (port 40000).
  static NodeCaller Root(std::string token, std::string ticket) {
    return {std::move(token), std::move(ticket), "10.99.0.10", true};
  }
  static NodeCaller User(std::string token, std::string ticket) {
    return {std::move(token), std::move(ticket), "10.99.0.10", false};
  }
  std::vector<std::string> Events(const std::string& node) {
    std::vector<std::string> out;
    auto n = store->FindNode(node);
    for (const auto& e : store->ListEvents(0, n->id, 100)) out.push_back(e.kind + " " + e.detail);
    return out;
  }
};

nlohmann::json ArcFacts(bool with_gpu) {
  nlohmann::json pci = nlohmann::json::array();
  if (with_gpu)
    pci.push_back({{"vendor_id", "8086"},
                   {"device_id", "56a0"},
                   {"class", "0300"},
                   {"device", "DG2 [Arc A770]"}});
  // v0.1 keeps its model cache on the node's NVMe disk: the agent set it up.
  return {{"pci", pci},
          {"memory_bytes", 64ULL << 30},
          {"ssh_host_key", "ssh-ed25519 AAAAhost root@node0"},
          {"image", "ubuntu-arc@0123"},
          {"disks",
           {{{"name", "nvme0n1"},
             {"by_id", "/dev/disk/by-id/nvme-Samsung_SSD_990_PRO_2TB_S7DN"},
             {"transport", "nvme"},
             {"size_bytes", 2000398934016ULL},
             {"content", "ext4"}}}},
          {"storage",
           {{"state", "ready"},
            {"volumes", {{{"name", "models"}, {"state", "mounted"}, {"mount", "/mnt/models"}}}}}}};
}

}  // namespace

TEST_CASE("phone-home: the overlay carries the node's identity, for this boot's ticket from root") {
  PhoneHomeFixture f;
  NodeRecord n = f.Enroll("node0", "52:54:00:00:00:01", "v0.1");
  f.Enroll("node1", "52:54:00:00:00:02", "v0.1");
  CHECK(f.home.Overlay(n.mac, PhoneHomeFixture::Root("", "x")).status().code() == Code::kForbidden);
  CHECK(f.Events("node0").back() ==
        "refused overlay request from 10.99.0.10: it needs this boot's ticket (wrong ticket)");
  const std::string ticket = f.Ticket("node0");
  // The token is not a ticket; the ticket from a user's port is refused.
  CHECK(f.home.Overlay(n.mac, PhoneHomeFixture::Root(n.token, "")).status().code() ==
        Code::kForbidden);
  CHECK(f.Events("node0").back() ==
        "refused overlay request from 10.99.0.10: it needs this boot's ticket (wrong ticket)");
  auto from_user = f.home.Overlay(n.mac, PhoneHomeFixture::User("", ticket));
  CHECK(from_user.status().code() == Code::kForbidden);
  CHECK(f.Events("node0").back().find("it must come from a privileged port") != std::string::npos);
  auto tar = f.home.Overlay(n.mac, PhoneHomeFixture::Root("", ticket));
  REQUIRE(tar.ok());
  namespace fs = std::filesystem;
  auto dir = fs::temp_directory_path() / ("provision-overlay-" + std::to_string(getpid()));
  fs::create_directories(dir / "root");
  REQUIRE(WriteFileAtomic((dir / "o.tar").string(), *tar).ok());
  ProcessSpec x;
  x.argv = {"/usr/bin/tar", "-C", (dir / "root").string(), "-xpf", (dir / "o.tar").string()};
  REQUIRE(RunProcess(x, 10000)->exit_code == 0);
  CHECK(*ReadFile((dir / "root/etc/hostname").string()) == "node0\n");
  std::string hosts = *ReadFile((dir / "root/etc/hosts").string());
  CHECK(hosts.find("10.99.0.1\tprovisiond\n") != std::string::npos);
  CHECK(hosts.find("10.99.0.10\tnode0\n") != std::string::npos);
  CHECK(hosts.find("\tnode1\n") != std::string::npos);
  CHECK(*ReadFile((dir / "root/root/.ssh/authorized_keys").string()) ==
        "ssh-ed25519 AAAAcontrol provisiond@control\n");
  const std::string conf = *ReadFile((dir / "root/etc/provision/agent.conf").string());
  CHECK(conf.find("PROVISION_TOKEN=" + n.token + "\n") != std::string::npos);
  CHECK(conf.find("PROVISION_TICKET=" + ticket + "\n") != std::string::npos);
  CHECK((fs::status(dir / "root/etc/provision/agent.conf").permissions() & fs::perms::all) ==
        (fs::perms::owner_read | fs::perms::owner_write));
  CHECK(ReadFile((dir / "root/etc/motd").string())->find("profile v0.1") !=
        std::string::npos);  // profile overlay
  // Its volumes, for provision-storage.service; no wipe allowed; md arrays
  // left to the agent, not udev.
  auto spec = nlohmann::json::parse(*ReadFile((dir / "root/etc/provision/storage.json").string()));
  CHECK(spec["volumes"].at(0)["name"] == "models");
  CHECK(spec["volumes"].at(0)["mount"] == "/mnt/models");
  CHECK(spec["wipe"] == nlohmann::json::array());
  CHECK(ReadFile((dir / "root/etc/mdadm/mdadm.conf").string())->find("AUTO -all") !=
        std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("phone-home: the boot's hello pins the host key and spends the ticket") {
  PhoneHomeFixture f;
  NodeRecord n = f.Enroll("node0", "52:54:00:00:00:01", "v0.1");
  const std::string ticket = f.Ticket("node0");
  // No token, a user's port, no ticket: refused, nothing changes.
  CHECK(f.home.Hello(n.mac, PhoneHomeFixture::Root("", ticket), ArcFacts(true)).status().code() ==
        Code::kForbidden);
  CHECK(f.home.Hello(n.mac, PhoneHomeFixture::User(n.token, ticket), ArcFacts(true))
            .status()
            .code() == Code::kForbidden);
  CHECK(f.home.Hello(n.mac, PhoneHomeFixture::Root(n.token, ""), ArcFacts(true)).status().code() ==
        Code::kForbidden);
  CHECK(f.Events("node0").back() ==
        "refused phone-home from 10.99.0.10: the first phone-home of a boot needs this boot's "
        "ticket (none given)");
  CHECK(f.store->FindNode("node0")->state == NodeState::kEnrolled);
  CHECK(f.store->FindNode("node0")->host_key.empty());

  auto r = f.home.Hello(n.mac, PhoneHomeFixture::Root(n.token, ticket), ArcFacts(true));
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  auto node = f.store->FindNode("node0");
  CHECK(node->state == NodeState::kBooted);
  CHECK(node->host_key == "ssh-ed25519 AAAAhost root@node0");
  CHECK(node->stage == BootStage::kHello);
  CHECK(node->ticket.empty());  // spent
  CHECK(f.Events("node0").back() ==
        "boot hello: from 10.99.0.10, image ubuntu-arc@0123; host key pinned");

  // Later, without a ticket: the facts are refreshed, the state stays...
  nlohmann::json facts = ArcFacts(true);
  facts["memory_bytes"] = 32ULL << 30;
  r = f.home.Hello(n.mac, PhoneHomeFixture::Root(n.token, ticket), facts);  // spent: no ticket
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  CHECK(f.store->FindNode("node0")->state == NodeState::kBooted);
  CHECK(f.store->FindNode("node0")->facts.find("34359738368") != std::string::npos);
  CHECK(f.Events("node0").back() == "facts facts refreshed from 10.99.0.10");
  // ...but a new host key needs a new boot.
  facts["ssh_host_key"] = "ssh-ed25519 AAAAattacker user@node0";
  CHECK(f.home.Hello(n.mac, PhoneHomeFixture::Root(n.token, ""), facts).status().code() ==
        Code::kForbidden);
  CHECK(f.Events("node0").back().find("it would change the pinned host key") != std::string::npos);
  CHECK(f.store->FindNode("node0")->host_key == "ssh-ed25519 AAAAhost root@node0");
  // The next boot (a new ticket) may.
  r = f.home.Hello(n.mac, PhoneHomeFixture::Root(n.token, f.Ticket("node0")), facts);
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  CHECK(f.store->FindNode("node0")->host_key == "ssh-ed25519 AAAAattacker user@node0");
}

TEST_CASE("phone-home: a v0.1 node without its Arc A770 is failed, with the reason") {
  PhoneHomeFixture f;
  NodeRecord n = f.Enroll("node0", "52:54:00:00:00:01", "v0.1");
  auto r = f.home.Hello(n.mac, PhoneHomeFixture::Root(n.token, f.Ticket("node0")), ArcFacts(false));
  REQUIRE(r.ok());
  auto node = f.store->FindNode("node0");
  CHECK(node->state == NodeState::kFailed);
  CHECK(node->reason.find("hardware: expected 1 x intel Arc A770 (8086:56a0), found 0") == 0);
}

TEST_CASE(
    "phone-home: a node whose storage failed is failed with the agent's reason; a wipe is "
    "spent by the boot that carried it") {
  PhoneHomeFixture f;
  NodeRecord n = f.Enroll("node0", "52:54:00:00:00:01", "v0.1");
  auto facts = ArcFacts(true);
  facts["storage"] = {{"state", "failed"},
                      {"reason", "volume models: disk /dev/disk/by-id/nvme-X (2.0 TB) holds gpt"}};
  REQUIRE(f.home.Hello(n.mac, PhoneHomeFixture::Root(n.token, f.Ticket("node0")), facts).ok());
  auto node = f.store->FindNode("node0");
  CHECK(node->state == NodeState::kFailed);
  CHECK(node->reason == "storage: volume models: disk /dev/disk/by-id/nvme-X (2.0 TB) holds gpt");

  // An image without the agent's unit reports nothing: failed too, saying so.
  facts.erase("storage");
  REQUIRE(f.home.Hello(n.mac, PhoneHomeFixture::Root(n.token, f.Ticket("node0")), facts).ok());
  CHECK(f.store->FindNode("node0")->reason.find("reported no storage outcome") !=
        std::string::npos);

  // The operator allows a wipe: the next overlay carries it, its hello spends it.
  auto allowed = f.inventory.AllowStorageWipe("node0", {"nvme-X"}, "admin");
  REQUIRE_MESSAGE(allowed.ok(), allowed.status().message());
  CHECK(f.Events("node0").back() ==
        "storage wipe allowed at its next boot: /dev/disk/by-id/nvme-X (what they hold is erased "
        "if it is not the volume)");
  const std::string ticket = f.Ticket("node0");
  auto tar = f.home.Overlay(n.mac, PhoneHomeFixture::Root("", ticket));
  REQUIRE(tar.ok());
  auto entries = ReadTar(*tar);
  REQUIRE(entries.ok());
  bool carried = false;
  for (const auto& e : *entries)
    if (e.path == "etc/provision/storage.json")
      carried =
          nlohmann::json::parse(e.content)["wipe"] == nlohmann::json{"/dev/disk/by-id/nvme-X"};
  CHECK(carried);
  REQUIRE(f.home.Hello(n.mac, PhoneHomeFixture::Root(n.token, ticket), ArcFacts(true)).ok());
  CHECK(f.store->FindNode("node0")->storage_wipe.empty());
  CHECK(f.store->FindNode("node0")->state == NodeState::kBooted);

  // Not a by-id name, or a node whose profile has no volumes: refused.
  CHECK(f.inventory.AllowStorageWipe("node0", {"../sda"}, "admin").status().code() ==
        Code::kInvalid);
  f.Enroll("plain", "52:54:00:00:00:09", "");
  CHECK(f.inventory.AllowStorageWipe("plain", {}, "admin").status().code() == Code::kConflict);
}

TEST_CASE("phone-home: failure reports from the initrd (its ticket) become events") {
  PhoneHomeFixture f;
  NodeRecord n = f.Enroll("node0", "52:54:00:00:00:01", "v0.1");
  const std::string ticket = f.Ticket("node0");
  CHECK(f.home
            .Report(n.mac, PhoneHomeFixture::Root("", ticket), "nfs mount",
                    "No such file or directory")
            .ok());
  CHECK(f.Events("node0").back() == "boot-error nfs mount: No such file or directory");
  CHECK(f.home.Report(n.mac, PhoneHomeFixture::Root(n.token, ""), "agent", "x").ok());
  CHECK(f.home.Report(n.mac, PhoneHomeFixture::Root("nope", "nope"), "x", "y").code() ==
        Code::kForbidden);
  CHECK(f.home.Report(n.mac, PhoneHomeFixture::User("", ticket), "x", "y").code() ==
        Code::kForbidden);
}

}  // namespace prov
