#include "api/boot.h"

#include <doctest/doctest.h>

#include "api/routes.h"
#include "base/file_util.h"
#include "base/temp_dir.h"
#include "boot/boot.h"
#include "images/image_catalog.h"
#include "store/store.h"
#include "store/testing/test_database.h"

namespace prov {
namespace {

// The boot service over an image catalog with image "lab", a node enrolled
// with it, and every route of the table bound to it.
struct BootFixture {
  TempDir dir{"provision-api-boot"};
  std::unique_ptr<Store> store = std::move(*Store::Open(::prov::testing::TestDatabase()));
  std::unique_ptr<ImageCatalog> images;
  std::unique_ptr<BootService> boot;
  ApiContext context;
  Router router{nullptr};

  BootFixture() {
    REQUIRE(WriteFileAtomic(dir.path() + "/k", "KERNEL-BYTES-0123456789").ok());
    REQUIRE(WriteFileAtomic(dir.path() + "/i", "INITRD").ok());
    images = std::make_unique<ImageCatalog>(dir.path() + "/store");
    REQUIRE(images->Import("lab", dir.path() + "/k", dir.path() + "/i").ok());
    // The iPXE binaries, as the ipxe package puts them in /usr/lib/ipxe.
    REQUIRE(MakeDirs(dir.path() + "/ipxe").ok());
    for (const char* f : {"undionly.kpxe", "ipxe.efi", "snponly.efi"})
      REQUIRE(WriteFileAtomic(dir.path() + "/ipxe/" + f, std::string("MZ binary of ") + f).ok());
    BootSettings s;
    s.boot_url = "http://10.99.0.1:8080";
    s.pxe_dir = PROVISION_SOURCE_DIR "/pxe";
    s.loader_dir = dir.path() + "/ipxe";
    auto b = BootService::Create(s, *store, *images);
    REQUIRE_MESSAGE(b.ok(), b.status().message());
    boot = std::move(*b);
    context.boot = boot.get();
    context.images = images.get();
    AddRoutes(router, context);
  }

  void Enroll(const std::string& host, const std::string& mac) {
    NodeRecord n;
    n.hostname = host;
    n.mac = mac;
    n.token = "0123456789abcdef0123456789abcdef";
    n.profile_version = "lab";
    n.image_version = "lab";
    REQUIRE(store
                ->Transact([&](StoreTx& tx) {
                  auto r = tx.InsertNode(n);
                  return r.status();
                })
                .ok());
  }

  HttpResponse Get(const std::string& path) {
    HttpRequest r;
    r.method = "GET";
    r.path = path;
    r.remote = "10.99.0.100";
    return router.Handle(r);
  }
};

}  // namespace

TEST_CASE("boot routes: the loader's script names, the node's files") {
  BootFixture f;
  f.Enroll("lab0", "52:54:00:00:00:01");
  HttpResponse start = f.Get("/boot/start.ipxe");
  CHECK(start.status == 200);
  CHECK(start.body.find("chain --replace http://10.99.0.1:8080/boot/${netX/mac:hexhyp}.ipxe") !=
        std::string::npos);
  HttpResponse node = f.Get("/boot/52-54-00-00-00-01.ipxe");
  CHECK(node.status == 200);
  CHECK(node.body.find("# provisiond boot script for lab0") != std::string::npos);
  HttpResponse other = f.Get("/boot/grub.cfg");
  CHECK(other.status == 404);
  CHECK(other.body.find("no boot script or loader 'grub.cfg'") != std::string::npos);
  CHECK(f.Get("/boot/.ipxe").status == 404);
  CHECK(f.boot->loader().name() == "ipxe");
  HttpResponse kernel = f.Get("/boot/52:54:00:00:00:01/vmlinuz");
  CHECK(kernel.status == 200);
  CHECK(kernel.file_length == 23);
  CHECK(f.Get("/boot/52:54:00:00:00:01/image.json").status == 404);
}

TEST_CASE("boot routes: UEFI HTTP boot loads iPXE's binary by HTTP, recorded as its stage") {
  BootFixture f;
  f.Enroll("lab0", "52:54:00:00:00:01");
  NodeRecord n = *f.store->FindNode("lab0");
  n.ip = "10.99.0.100";
  REQUIRE(f.store->Transact([&](StoreTx& tx) { return tx.UpdateNode(n); }).ok());
  CHECK(f.boot->HttpLoaderUrl() == "http://10.99.0.1:8080/boot/ipxe.efi");
  HttpResponse efi = f.Get("/boot/ipxe.efi");
  CHECK(efi.status == 200);
  CHECK(efi.content_type == "application/efi");
  CHECK(efi.file_length == std::string("MZ binary of ipxe.efi").size());
  CHECK(f.store->FindNode("lab0")->stage == BootStage::kIpxeBinary);
  CHECK(f.Get("/boot/undionly.kpxe").status == 200);
  CHECK(f.Get("/boot/shimx64.efi").status == 404);
  CHECK(f.Get("/boot/..%2Fetc%2Fshadow").status == 404);
}

}  // namespace prov
