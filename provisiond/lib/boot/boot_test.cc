#include "boot/boot.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>

#include "base/file_util.h"
#include "store/testing/test_database.h"

namespace prov {
namespace {

namespace fs = std::filesystem;

struct BootServiceFixture {
  fs::path dir = fs::temp_directory_path() / ("provision-boot-" + std::to_string(getpid()));
  std::unique_ptr<Store> store = std::move(*Store::Open(::prov::testing::TestDatabase()));
  std::unique_ptr<ImageCatalog> images;
  std::unique_ptr<BootService> boot;
  ImageVersion image;

  explicit BootServiceFixture(bool tftp = false, const std::string& uefi_loader = "grub") {
    fs::remove_all(dir);
    fs::create_directories(dir);
    REQUIRE(WriteFileAtomic((dir / "k").string(), "KERNEL-BYTES-0123456789").ok());
    REQUIRE(WriteFileAtomic((dir / "i").string(), "INITRD").ok());
    images = std::make_unique<ImageCatalog>((dir / "store").string());
    image = *images->Import("lab", (dir / "k").string(), (dir / "i").string());
    BootSettings s;
    s.boot_url = "http://10.99.0.1:8080";
    s.pxe_dir = PROVISION_SOURCE_DIR "/pxe";
    // The signed chain's test runs in full DHCP mode (reserved addresses).
    if (tftp) s.tftp_dir = (dir / "tftp").string();
    s.reserved_addresses = tftp;
    s.profile_kernel_args = [](const std::string& v) {
      return v == "lab" ? std::vector<std::string>{"console=ttyS0"} : std::vector<std::string>{};
    };
    s.uefi_loader = uefi_loader;
    s.profile_uefi_loader = [](const std::string& v) {
      return v == "lab-ipxe" ? std::string("ipxe") : v == "lab-grub" ? "grub" : "";
    };
    auto b = BootService::Create(s, *store, *images);
    REQUIRE_MESSAGE(b.ok(), b.status().message());
    boot = std::move(*b);
  }
  ~BootServiceFixture() { fs::remove_all(dir); }

  NodeRecord Enroll(const std::string& host, const std::string& mac, const std::string& image_ref) {
    NodeRecord n;
    n.hostname = host;
    n.mac = mac;
    n.token = "0123456789abcdef0123456789abcdef";
    n.profile_version = image_ref.empty() ? "" : "lab";
    n.image_version = image_ref;
    REQUIRE(store
                ->Transact([&](StoreTx& tx) {
                  auto r = tx.InsertNode(n);
                  n = *r;
                  return r.status();
                })
                .ok());
    return n;
  }
  // Changes a node row as an operator or a profile apply would.
  void Set(const std::string& node, const std::function<void(NodeRecord&)>& change) {
    REQUIRE(store
                ->Transact([&](StoreTx& tx) {
                  auto n = tx.FindNode(node);
                  change(*n);
                  return tx.UpdateNode(*n);
                })
                .ok());
  }
  std::vector<std::string> Kinds(const std::string& node) {
    std::vector<std::string> out;
    auto n = store->FindNode(node);
    for (const auto& e : store->ListEvents(0, n->id, 100)) out.push_back(e.kind + " " + e.detail);
    return out;
  }
};

}  // namespace

TEST_CASE("boot: an enrolled node gets its script (golden), and moves to booting") {
  BootServiceFixture f;
  f.Enroll("lab0", "52:54:00:00:00:01", "lab");
  HttpResponse r = f.boot->NodeScript("52-54-00-00-00-01", "10.99.0.100");
  REQUIRE(r.status == 200);
  const std::string v = f.image.version;
  std::string expected =
      R"(#!ipxe
# provisiond boot script for lab0 (52:54:00:00:00:01)
# profile lab, image lab@)" +
      v + R"(
set base http://10.99.0.1:8080/boot/52-54-00-00-00-01
set tries:int32 0
echo provisiond: booting lab0 with image lab@)" +
      v + R"(

:kernel
kernel ${base}/vmlinuz?v=)" +
      v +
      R"( initrd=initrd.img initrd=ticket.img provision.url=http://10.99.0.1:8080 provision.mac=52:54:00:00:00:01 provision.node=lab0 provision.image=lab@)" +
      v + R"( console=ttyS0 && goto initrd ||
inc tries
iseq ${tries} 10 && goto failed ||
echo kernel download failed (try ${tries}); retrying in JITTER s
sleep JITTER
goto kernel

:initrd
initrd --name initrd.img ${base}/initrd.img?v=)" +
      v + R"( && initrd --name ticket.img ${base}/ticket.img && goto boot ||
inc tries
iseq ${tries} 10 && goto failed ||
echo initrd download failed (try ${tries}); retrying in JITTER s
sleep JITTER
goto initrd

:boot
boot ||
echo boot failed

:failed
echo provisiond: giving up after ${tries} failed downloads; asking for a new script in 30 s
sleep 30
chain --replace http://10.99.0.1:8080/boot/52-54-00-00-00-01.ipxe
)";
  // The jitter is random per script: normalize it before comparing.
  std::string body = r.body;
  for (const char* marker : {"retrying in ", "sleep "}) {
    size_t pos = 0;
    while ((pos = body.find(marker, pos)) != std::string::npos) {
      pos += strlen(marker);
      if (pos < body.size() && isdigit(static_cast<unsigned char>(body[pos])) &&
          body[pos + 1] != '0') {
        int d = body[pos] - '0';
        CHECK(d >= 1);
        CHECK(d <= 5);
        body.replace(pos, 1, "JITTER");
      }
    }
  }
  CHECK(body == expected);  // no secret in it: the ticket comes as ticket.img
  CHECK(f.store->FindNode("lab0")->state == NodeState::kBooting);
  CHECK(f.Kinds("lab0") ==
        std::vector<std::string>{"state enrolled -> booting: script: from 10.99.0.100",
                                 "boot script: from 10.99.0.100"});
}

TEST_CASE(
    "boot: the script issues a one-boot ticket, served as ticket.img to the reserved address") {
  BootServiceFixture f;
  f.Enroll("lab0", "52:54:00:00:00:01", f.image.ref());
  HttpRequest req;
  req.remote = "10.99.0.100";
  CHECK(f.boot->NodeFile(req, "52:54:00:00:00:01", "ticket.img").status == 404);  // none yet
  REQUIRE(f.boot->NodeScript("52:54:00:00:00:01", "10.99.0.100").status == 200);
  const std::string ticket = f.store->FindNode("lab0")->ticket;
  CHECK(ticket.size() == 32);
  // Another script of the same boot keeps it (iPXE retries).
  f.boot->NodeScript("52:54:00:00:00:01", "10.99.0.100");
  CHECK(f.store->FindNode("lab0")->ticket == ticket);
  HttpResponse r = f.boot->NodeFile(req, "52:54:00:00:00:01", "ticket.img");
  REQUIRE(r.status == 200);
  CHECK(r.body.compare(0, 6, "070701") == 0);
  CHECK(r.body.find("provision/ticket") != std::string::npos);
  CHECK(r.body.find(ticket + "\n") != std::string::npos);

  // Where provisiond reserves addresses (full DHCP mode), only the node's own.
  BootSettings s;
  s.boot_url = "http://10.99.0.1:8080";
  s.pxe_dir = PROVISION_SOURCE_DIR "/pxe";
  s.reserved_addresses = true;
  auto reserved = BootService::Create(s, *f.store, *f.images);
  REQUIRE(reserved.ok());
  REQUIRE(f.store
              ->Transact([&](StoreTx& tx) {
                auto n = tx.FindNode("lab0");
                n->ip = "10.99.0.10";
                return tx.UpdateNode(*n);
              })
              .ok());
  CHECK((*reserved)->NodeFile(req, "52:54:00:00:00:01", "ticket.img").status == 403);
  CHECK(f.Kinds("lab0").back() ==
        "refused boot ticket asked for from 10.99.0.100, not from 10.99.0.10");
  req.remote = "10.99.0.10";
  CHECK((*reserved)->NodeFile(req, "52:54:00:00:00:01", "ticket.img").status == 200);
}

TEST_CASE("boot: unknown MACs are recorded up to discovery.max_pending, then only answered") {
  BootServiceFixture f;
  BootSettings s;
  s.boot_url = "http://10.99.0.1:8080";
  s.pxe_dir = PROVISION_SOURCE_DIR "/pxe";
  s.max_discovered = 2;
  auto capped = BootService::Create(s, *f.store, *f.images);
  REQUIRE(capped.ok());
  for (const char* mac : {"02:00:00:00:00:01", "02:00:00:00:00:02", "02:00:00:00:00:03"}) {
    HttpResponse r = (*capped)->NodeScript(mac, "10.99.0.50");
    CHECK(r.status == 200);
    CHECK(r.body.find("#!ipxe") == 0);
  }
  CHECK(f.store->CountByState()[NodeState::kDiscovered] == 2);
  CHECK_FALSE(f.store->FindNode("02:00:00:00:00:03").ok());
  // A known node still boots.
  f.Enroll("lab0", "52:54:00:00:00:01", f.image.ref());
  CHECK((*capped)->NodeScript("52:54:00:00:00:01", "10.99.0.100").body.find("kernel") !=
        std::string::npos);
}

TEST_CASE("boot: an unknown MAC asking again and again is recorded once a minute") {
  BootServiceFixture f;
  for (int i = 0; i < 20; ++i) f.boot->NodeScript("02:00:00:00:00:09", "10.99.0.50");
  CHECK(f.Kinds("02:00:00:00:00:09").size() == 1);  // "discovered ...", then nothing
}

TEST_CASE("boot: the initrd's DHCP is the network stage of the same boot") {
  BootServiceFixture f;
  f.Enroll("lab0", "52:54:00:00:00:01", "lab");
  REQUIRE(f.boot->RecordStage("52:54:00:00:00:01", BootStage::kDhcp, "10.99.0.100", "10.99.0.100")
              .ok());
  f.boot->NodeScript("52:54:00:00:00:01", "10.99.0.100");
  HttpRequest req;
  f.boot->NodeFile(req, "52:54:00:00:00:01", "initrd.img");
  REQUIRE(f.boot->RecordStage("52:54:00:00:00:01", BootStage::kDhcp, "10.99.0.100", "10.99.0.100")
              .ok());
  auto n = f.store->FindNode("lab0");
  CHECK(n->stage == BootStage::kNetwork);
  CHECK(f.Kinds("lab0").back() == "boot network: 10.99.0.100 (the initrd's DHCP)");
}

TEST_CASE("boot: unknown MACs are discovered and wait; retired nodes boot locally") {
  BootServiceFixture f;
  HttpResponse r = f.boot->NodeScript("52:54:00:00:00:99", "10.99.0.150");
  CHECK(r.status == 200);
  CHECK(r.body.find("is not enrolled yet") != std::string::npos);
  CHECK(r.body.find("chain --replace http://10.99.0.1:8080/boot/52-54-00-00-00-99.ipxe") !=
        std::string::npos);
  CHECK(r.body.find("kernel") == std::string::npos);  // never an install
  auto n = f.store->FindNode("52:54:00:00:00:99");
  REQUIRE(n.ok());
  CHECK(n->state == NodeState::kDiscovered);
  CHECK(n->ip == "10.99.0.150");
  // Asking again does not create a second node.
  f.boot->NodeScript("52:54:00:00:00:99", "10.99.0.150");
  CHECK(f.store->ListNodes().size() == 1);

  NodeRecord old = f.Enroll("old", "52:54:00:00:00:02", "lab");
  REQUIRE(
      f.store
          ->Transact([&](StoreTx& tx) { return tx.Transition(old, NodeState::kRetired, "", "t"); })
          .ok());
  r = f.boot->NodeScript("52:54:00:00:00:02", "x");
  CHECK(r.body.find("\nexit\n") != std::string::npos);
  CHECK(f.store->FindNode("old")->state == NodeState::kRetired);

  CHECK(f.boot->NodeScript("zz", "x").status == 400);
}

TEST_CASE("boot: a node whose image is missing gets a waiting script and an error event") {
  BootServiceFixture f;
  f.Enroll("lab1", "52:54:00:00:00:03", "nosuch");
  HttpResponse r = f.boot->NodeScript("52:54:00:00:00:03", "x");
  CHECK(r.body.find("cannot boot yet: image 'nosuch' has not been built or imported") !=
        std::string::npos);
  auto kinds = f.Kinds("lab1");
  CHECK(kinds.back() == "boot-error script: image 'nosuch' has not been built or imported");
}

TEST_CASE("boot: kernel and initrd with Range and ETag, no path from the URL") {
  BootServiceFixture f;
  f.Enroll("lab0", "52:54:00:00:00:01", "lab");
  HttpRequest req;
  req.remote = "10.99.0.100";
  HttpResponse r = f.boot->NodeFile(req, "52:54:00:00:00:01", "vmlinuz");
  CHECK(r.status == 200);
  CHECK(r.file_path == f.image.kernel);
  CHECK(r.file_length == 23);
  std::string etag;
  for (auto& [k, v] : r.headers)
    if (k == "ETag") etag = v;
  CHECK(etag == "\"" + f.image.version + "-vmlinuz\"");

  req.headers["range"] = "bytes=7-11";
  r = f.boot->NodeFile(req, "52:54:00:00:00:01", "vmlinuz");
  CHECK(r.status == 206);
  CHECK(r.file_offset == 7);
  CHECK(r.file_length == 5);
  req.headers["range"] = "bytes=-3";
  r = f.boot->NodeFile(req, "52:54:00:00:00:01", "vmlinuz");
  CHECK(r.file_offset == 20);
  CHECK(r.file_length == 3);
  req.headers["range"] = "bytes=100-";
  CHECK(f.boot->NodeFile(req, "52:54:00:00:00:01", "vmlinuz").status == 416);
  req.headers.clear();
  req.headers["if-none-match"] = etag;
  CHECK(f.boot->NodeFile(req, "52:54:00:00:00:01", "vmlinuz").status == 304);

  CHECK(f.boot->NodeFile(req, "52:54:00:00:00:01", "..%2F..%2Fetc%2Fpasswd").status == 404);
  CHECK(f.boot->NodeFile(req, "52:54:00:00:00:01", "image.json").status == 404);
  CHECK(f.boot->NodeFile(req, "52:54:00:00:00:77", "vmlinuz").status == 404);
  auto kinds = f.Kinds("lab0");
  CHECK(std::count(kinds.begin(), kinds.end(), "boot kernel: lab@" + f.image.version) >= 1);
}

TEST_CASE("boot: the signed chain's configs are TFTP files; the initrd asks for its ticket") {
  BootServiceFixture f(/*tftp=*/true);
  const fs::path tftp = f.dir / "tftp";
  REQUIRE(f.boot->WriteTftpStartScripts().ok());
  CHECK(ReadFile((tftp / "grub/grub.cfg").string())->find("${net_default_mac}") !=
        std::string::npos);
  CHECK(f.boot->uefi_loader().name() == "grub");

  NodeRecord n = f.Enroll("lab0", "52:54:00:00:00:01", "lab");
  REQUIRE(f.boot->RecordStage(n.mac, BootStage::kDhcp, "10.99.0.100", "10.99.0.100").ok());
  f.boot->WriteTftpNodeScript(n.mac);
  const std::string dir = "images/lab/" + f.image.version;
  auto config = ReadFile((tftp / "grub/nodes/52:54:00:00:00:01.cfg").string());
  REQUIRE(config.ok());
  CHECK(config->find("if linux /" + dir +
                     "/vmlinuz provision.url=http://10.99.0.1:8080 "
                     "provision.mac=52:54:00:00:00:01 provision.node=lab0 provision.image=lab@" +
                     f.image.version + " console=ttyS0; then") != std::string::npos);
  CHECK(config->find("initrd=") == std::string::npos);
  CHECK(config->find("ticket") == std::string::npos);  // TFTP is readable by anyone
  CHECK(fs::read_symlink(tftp / dir / "vmlinuz") == f.image.kernel);
  CHECK(fs::read_symlink(tftp / dir / "initrd.img") == f.image.initrd);
  CHECK(f.store->FindNode("lab0")->ticket.empty());  // not issued by writing a config

  // What dnsmasq sent becomes the stages of the signed chain.
  f.boot->RecordTftpSent("10.99.0.100", (tftp / "shimx64.efi").string());
  CHECK(f.store->FindNode("lab0")->stage == BootStage::kShim);
  f.boot->RecordTftpSent("10.99.0.100", (tftp / "grub/nodes/52:54:00:00:00:01.cfg").string());
  CHECK(f.store->FindNode("lab0")->stage == BootStage::kGrubConfig);
  CHECK(f.store->FindNode("lab0")->state == NodeState::kBooting);
  f.boot->RecordTftpSent("10.99.0.100", (tftp / dir / "initrd.img").string());
  CHECK(f.store->FindNode("lab0")->stage == BootStage::kInitrd);
  f.boot->RecordTftpSent("10.99.0.100", (tftp / "grub/grub.cfg").string());  // not a stage
  f.boot->RecordTftpSent("10.99.0.222", (tftp / "shimx64.efi").string());    // nobody's
  CHECK(f.store->FindNode("lab0")->stage == BootStage::kInitrd);

  // The ticket: to root (a privileged port) at the reserved address only.
  HttpRequest req;
  req.remote = "10.99.0.100";
  req.remote_port = 40000;
  HttpResponse r = f.boot->NodeFile(req, n.mac, "ticket");
  CHECK(r.status == 403);
  CHECK(r.body.find("from port 40000") != std::string::npos);
  req.remote = "10.99.0.101";
  req.remote_port = 600;
  CHECK(f.boot->NodeFile(req, n.mac, "ticket").status == 403);
  req.remote = "10.99.0.100";
  r = f.boot->NodeFile(req, n.mac, "ticket");
  REQUIRE(r.status == 200);
  const std::string ticket = f.store->FindNode("lab0")->ticket;
  CHECK(ticket.size() == 32);
  CHECK(r.body == ticket + "\n");
  CHECK(f.boot->NodeFile(req, n.mac, "ticket").body == ticket + "\n");  // the same, until spent
  auto kinds = f.Kinds("lab0");
  CHECK(std::count_if(kinds.begin(), kinds.end(), [](const std::string& k) {
          return k.rfind("refused boot ticket asked for", 0) == 0;
        }) == 2);
  // Not outside a boot: a booted node's root user is the node, but nothing
  // running on it can make a new ticket without booting.
  REQUIRE(f.store
              ->Transact([&](StoreTx& tx) {
                auto cur = tx.FindNode("lab0");
                cur->ticket = "";
                Status u = tx.UpdateNode(*cur);
                return u.ok() ? tx.Transition(*cur, NodeState::kBooted, "", "t") : u;
              })
              .ok());
  CHECK(f.boot->NodeFile(req, n.mac, "ticket").status == 403);

  // An unknown MAC gets a config that waits and restarts, never an install.
  REQUIRE(f.boot->RecordStage("52:54:00:00:00:99", BootStage::kDhcp, "10.99.0.150", "10.99.0.150")
              .ok());
  f.boot->WriteTftpNodeScript("52:54:00:00:00:99");
  auto waiting = ReadFile((tftp / "grub/nodes/52:54:00:00:00:99.cfg").string());
  REQUIRE(waiting.ok());
  CHECK(waiting->find("is not enrolled yet") != std::string::npos);
  CHECK(waiting->find("linux") == std::string::npos);
}

TEST_CASE("boot: with reservations a script request does not give a node its address") {
  BootServiceFixture f(/*tftp=*/true);  // full DHCP mode: reserved_addresses
  f.Enroll("lab0", "52:54:00:00:00:01", "lab");
  f.boot->NodeScript("52:54:00:00:00:01", "127.0.0.1");
  CHECK(f.store->FindNode("lab0")->ip.empty());
  REQUIRE(f.boot->RecordStage("52:54:00:00:00:01", BootStage::kDhcp, "10.99.0.100", "10.99.0.100")
              .ok());
  CHECK(f.store->FindNode("lab0")->ip == "10.99.0.100");
}

TEST_CASE("boot: a node or its profile chooses the UEFI loader; its TFTP directory follows") {
  BootServiceFixture f(/*tftp=*/true);  // UEFI default: the signed chain
  const fs::path tftp = f.dir / "tftp";
  REQUIRE(f.boot->WriteTftpStartScripts().ok());
  REQUIRE(WriteFileAtomic((tftp / "ipxe.efi").string(), "IPXE-EFI").ok());  // as dnsmasq's start
  f.Enroll("lab0", "52:54:00:00:00:01", "lab");
  f.Enroll("lab1", "52:54:00:00:00:02", "lab");
  f.Enroll("lab2", "52:54:00:00:00:03", "lab");
  f.Set("lab1", [](NodeRecord& n) { n.uefi_loader = "ipxe"; });
  f.Set("lab2", [](NodeRecord& n) { n.profile_version = "lab-ipxe"; });
  f.Enroll("", "52:54:00:00:00:04", "");  // discovered: the default, always
  f.Set("52:54:00:00:00:04", [](NodeRecord& n) {
    n.state = NodeState::kDiscovered;
    n.uefi_loader = "ipxe";
  });
  CHECK(f.boot->UefiLoaderFor(*f.store->FindNode("lab0")).name() == "grub");
  CHECK(f.boot->UefiLoaderFor(*f.store->FindNode("lab1")).name() == "ipxe");
  CHECK(f.boot->UefiLoaderFor(*f.store->FindNode("lab2")).name() == "ipxe");

  CHECK(f.boot->SyncTftpNodeDirs() == 2);
  CHECK(f.boot->SyncTftpNodeDirs() == 0);  // nothing moved
  CHECK_FALSE(fs::exists(tftp / "52-54-00-00-00-01"));
  CHECK_FALSE(fs::exists(tftp / "52-54-00-00-00-04"));
  for (const char* dir : {"52-54-00-00-00-02", "52-54-00-00-00-03"}) {
    CAPTURE(dir);
    // What UEFI firmware is told to load is iPXE in the node's directory;
    // BIOS gets iPXE either way.
    CHECK(fs::read_symlink(tftp / dir / "shimx64.efi") == "../ipxe.efi");
    CHECK(fs::read_symlink(tftp / dir / "shimx64.0") == "../ipxe.efi");  // proxy-DHCP's name
    CHECK(fs::read_symlink(tftp / dir / "undionly.kpxe") == "../undionly.kpxe");
    CHECK(*ReadFile((tftp / dir / "shimx64.efi").string()) == "IPXE-EFI");  // the link resolves
    CHECK_FALSE(fs::exists(tftp / dir / "grubx64.efi"));
  }
  CHECK_FALSE(fs::exists(tftp / ".52-54-00-00-00-02.tmp"));

  // dnsmasq's "sent" line names the link; the stage is iPXE's. iPXE reads its
  // scripts over HTTP: no grub config is written for it.
  REQUIRE(f.boot->RecordStage("52:54:00:00:00:02", BootStage::kDhcp, "10.99.0.101", "10.99.0.101")
              .ok());
  f.boot->RecordTftpSent("10.99.0.101", (tftp / "52-54-00-00-00-02/shimx64.efi").string());
  CHECK(f.store->FindNode("lab1")->stage == BootStage::kIpxeBinary);
  f.boot->WriteTftpNodeScript("52:54:00:00:00:02");
  CHECK_FALSE(fs::exists(tftp / "grub/nodes/52:54:00:00:00:02.cfg"));
  f.boot->WriteTftpNodeScript("52:54:00:00:00:01");
  CHECK(fs::exists(tftp / "grub/nodes/52:54:00:00:00:01.cfg"));

  // The node's own choice comes before its profile's; back to the default,
  // the directory goes.
  f.Set("lab2", [](NodeRecord& n) { n.uefi_loader = "grub"; });
  f.Set("lab1", [](NodeRecord& n) { n.uefi_loader = ""; });
  CHECK(f.boot->SyncTftpNodeDirs() == 2);
  CHECK_FALSE(fs::exists(tftp / "52-54-00-00-00-02"));
  CHECK_FALSE(fs::exists(tftp / "52-54-00-00-00-03"));

  // A directory an earlier run left for a node that is gone is removed at
  // the first sync.
  fs::create_directories(tftp / "52-54-00-00-00-77");
  BootSettings settings;
  settings.pxe_dir = PROVISION_SOURCE_DIR "/pxe";
  settings.tftp_dir = tftp.string();
  auto again = BootService::Create(settings, *f.store, *f.images);
  REQUIRE(again.ok());
  CHECK((*again)->SyncTftpNodeDirs() == 1);
  CHECK_FALSE(fs::exists(tftp / "52-54-00-00-00-77"));
}

TEST_CASE("boot: with iPXE the UEFI default, a node given the signed chain reads it all by TFTP") {
  BootServiceFixture f(/*tftp=*/true, "ipxe");
  const fs::path tftp = f.dir / "tftp";
  f.Enroll("lab0", "52:54:00:00:00:01", "lab");
  f.Set("lab0", [](NodeRecord& n) { n.profile_version = "lab-grub"; });
  CHECK(f.boot->SyncTftpNodeDirs() == 1);
  const fs::path dir = tftp / "52-54-00-00-00-01";
  CHECK(fs::read_symlink(dir / "ipxe.efi") == "../shimx64.efi");
  CHECK(fs::read_symlink(dir / "grubx64.efi") == "../grubx64.efi");  // shim's next stage
  CHECK(fs::read_symlink(dir / "grub") == "../grub");                // grub's configs
  CHECK(fs::read_symlink(dir / "images") == "../images");            // the kernel, initrd
  REQUIRE(f.boot->RecordStage("52:54:00:00:00:01", BootStage::kDhcp, "10.99.0.100", "10.99.0.100")
              .ok());
  f.boot->RecordTftpSent("10.99.0.100", (dir / "ipxe.efi").string());
  CHECK(f.store->FindNode("lab0")->stage == BootStage::kShim);
  f.boot->RecordTftpSent("10.99.0.100", (dir / "grub/nodes/52:54:00:00:00:01.cfg").string());
  CHECK(f.store->FindNode("lab0")->stage == BootStage::kGrubConfig);
  // Its grub config is written as for any node of the signed chain.
  f.boot->WriteTftpNodeScript("52:54:00:00:00:01");
  CHECK(fs::exists(tftp / "grub/nodes/52:54:00:00:00:01.cfg"));
}

}  // namespace prov
