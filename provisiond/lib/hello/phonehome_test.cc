#include "hello/phonehome.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>

#include "base/file_util.h"
#include "base/process.h"
#include "base/temp_dir.h"

namespace prov {
namespace {

struct PhoneHomeFixture {
  std::unique_ptr<Store> store = std::move(*Store::Open(":memory:"));
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
  return {{"pci", pci},
          {"memory_bytes", 64ULL << 30},
          {"ssh_host_key", "ssh-ed25519 AAAAhost root@node0"},
          {"image", "ubuntu-arc@0123"}};
}

}  // namespace

TEST_CASE("phone-home: the overlay carries the node's identity, only for its token") {
  PhoneHomeFixture f;
  NodeRecord n = f.Enroll("node0", "52:54:00:00:00:01", "v0.1");
  f.Enroll("node1", "52:54:00:00:00:02", "v0.1");
  CHECK(f.home.Overlay(n.mac, "wrong", "10.99.0.10").status().code() == Code::kForbidden);
  CHECK(f.Events("node0").back() == "refused overlay request from 10.99.0.10 with a wrong token");
  auto tar = f.home.Overlay(n.mac, n.token, "10.99.0.10");
  REQUIRE(tar.ok());
  namespace fs = std::filesystem;
  auto dir = fs::temp_directory_path() / ("provision-overlay-" + std::to_string(getpid()));
  fs::create_directories(dir / "root");
  WriteFileAtomic((dir / "o.tar").string(), *tar);
  ProcessSpec x;
  x.argv = {"/usr/bin/tar", "-C", (dir / "root").string(), "-xf", (dir / "o.tar").string()};
  REQUIRE(RunProcess(x, 10000)->exit_code == 0);
  CHECK(*ReadFile((dir / "root/etc/hostname").string()) == "node0\n");
  std::string hosts = *ReadFile((dir / "root/etc/hosts").string());
  CHECK(hosts.find("10.99.0.1\tprovisiond\n") != std::string::npos);
  CHECK(hosts.find("10.99.0.10\tnode0\n") != std::string::npos);
  CHECK(hosts.find("\tnode1\n") != std::string::npos);
  CHECK(*ReadFile((dir / "root/root/.ssh/authorized_keys").string()) ==
        "ssh-ed25519 AAAAcontrol provisiond@control\n");
  CHECK(ReadFile((dir / "root/etc/provision/agent.conf").string())
            ->find("PROVISION_TOKEN=" + n.token) != std::string::npos);
  CHECK(ReadFile((dir / "root/etc/motd").string())->find("profile v0.1") !=
        std::string::npos);  // profile overlay
  fs::remove_all(dir);
}

TEST_CASE("phone-home: the right hardware makes a node booted and pins its host key") {
  PhoneHomeFixture f;
  NodeRecord n = f.Enroll("node0", "52:54:00:00:00:01", "v0.1");
  CHECK(f.home.Hello(n.mac, "", ArcFacts(true), "x").status().code() == Code::kForbidden);
  CHECK(f.store->FindNode("node0")->state == NodeState::kEnrolled);
  auto r = f.home.Hello(n.mac, n.token, ArcFacts(true), "10.99.0.10");
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  auto node = f.store->FindNode("node0");
  CHECK(node->state == NodeState::kBooted);
  CHECK(node->host_key == "ssh-ed25519 AAAAhost root@node0");
  CHECK(node->stage == "hello");
  auto events = f.Events("node0");
  CHECK(events.back() == "boot hello: from 10.99.0.10, image ubuntu-arc@0123; host key pinned");
}

TEST_CASE("phone-home: a v0.1 node without its Arc A770 is failed, with the reason") {
  PhoneHomeFixture f;
  NodeRecord n = f.Enroll("node0", "52:54:00:00:00:01", "v0.1");
  auto r = f.home.Hello(n.mac, n.token, ArcFacts(false), "10.99.0.10");
  REQUIRE(r.ok());
  auto node = f.store->FindNode("node0");
  CHECK(node->state == NodeState::kFailed);
  CHECK(node->reason.find("hardware: expected 1 x intel Arc A770 (8086:56a0), found 0") == 0);
}

TEST_CASE("phone-home: failure reports from the initrd become events") {
  PhoneHomeFixture f;
  NodeRecord n = f.Enroll("node0", "52:54:00:00:00:01", "v0.1");
  CHECK(f.home.Report(n.mac, n.token, "nfs mount", "No such file or directory", "x").ok());
  CHECK(f.Events("node0").back() == "boot-error nfs mount: No such file or directory");
  CHECK(f.home.Report(n.mac, "nope", "x", "y", "x").code() == Code::kForbidden);
}

}  // namespace prov
