#include "api/boot.h"

#include <doctest/doctest.h>

#include "api/routes.h"
#include "base/file_util.h"
#include "base/temp_dir.h"
#include "boot/boot.h"
#include "images/image_catalog.h"
#include "store/store.h"

namespace prov {
namespace {

// The boot service over an image catalog with image "lab", a node enrolled
// with it, and every route of the table bound to it.
struct BootFixture {
  TempDir dir{"provision-api-boot"};
  std::unique_ptr<Store> store = std::move(*Store::Open(":memory:"));
  std::unique_ptr<ImageCatalog> images;
  std::unique_ptr<BootService> boot;
  ApiContext context;
  Router router{nullptr};

  BootFixture() {
    WriteFileAtomic(dir.path() + "/k", "KERNEL-BYTES-0123456789");
    WriteFileAtomic(dir.path() + "/i", "INITRD");
    images = std::make_unique<ImageCatalog>(dir.path() + "/store");
    REQUIRE(images->Import("lab", dir.path() + "/k", dir.path() + "/i").ok());
    BootSettings s;
    s.boot_url = "http://10.99.0.1:8080";
    s.pxe_dir = PROVISION_SOURCE_DIR "/pxe";
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
    store->Transact([&](StoreTx& tx) {
      auto r = tx.InsertNode(n);
      return r.status();
    });
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
  CHECK(other.body.find("no boot script 'grub.cfg'") != std::string::npos);
  CHECK(f.Get("/boot/.ipxe").status == 404);
  CHECK(f.boot->loader().name() == "ipxe");
  HttpResponse kernel = f.Get("/boot/52:54:00:00:00:01/vmlinuz");
  CHECK(kernel.status == 200);
  CHECK(kernel.file_length == 23);
  CHECK(f.Get("/boot/52:54:00:00:00:01/image.json").status == 404);
}

}  // namespace prov
