#include "images/image_service.h"

#include <doctest/doctest.h>

#include <thread>

#include "base/file_util.h"
#include "base/temp_dir.h"
#include "store/store.h"
#include "store/testing/test_database.h"

namespace prov {

TEST_CASE("image service: prune keeps derived images in use and the newest, removes the rest") {
  TempDir tmp{"image-service-test"};
  auto store = std::move(*Store::Open(::prov::testing::TestDatabase()));
  Inventory inventory(*store, tmp.path() + "/profiles", tmp.path() + "/playbooks",
                      tmp.path() + "/snapshots");
  ImageCatalog catalog(tmp.path() + "/store");
  ImageService service(inventory, catalog, tmp.path() + "/images", ImageBuildOptions{});
  service.set_keep_derived(1);
  // Four versions of lab.baked, oldest first, and one of a base image.
  std::vector<std::string> versions;
  REQUIRE(WriteFileAtomic(tmp.path() + "/k", "kernel").ok());
  for (int i = 0; i < 4; ++i) {
    REQUIRE(WriteFileAtomic(tmp.path() + "/i", "initrd-" + std::to_string(i)).ok());
    auto v = catalog.Import("lab.baked", tmp.path() + "/k", tmp.path() + "/i");
    REQUIRE(v.ok());
    versions.push_back(v->version);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // distinct creation times
  }
  auto base = catalog.Import("lab", tmp.path() + "/k", tmp.path() + "/i");
  REQUIRE(base.ok());
  // A node boots the oldest.
  EnrollRequest r;
  r.hostname = "n1";
  r.mac = "52:54:00:00:00:01";
  REQUIRE(inventory.Enroll(r, "test").ok());
  auto node = store->FindNode("n1");
  REQUIRE(node.ok());
  node->image_version = "lab.baked@" + versions[0];
  REQUIRE(store->Transact([&](StoreTx& tx) { return tx.UpdateNode(*node); }).ok());

  auto removed = service.PruneDerived("test");
  REQUIRE_MESSAGE(removed.ok(), removed.status().message());
  // Kept: the node's (in use, not counted) and the newest; removed: the two between.
  CHECK(*removed ==
        std::vector<std::string>{"lab.baked@" + versions[2], "lab.baked@" + versions[1]});
  CHECK(catalog.Resolve("lab.baked@" + versions[0]).ok());
  CHECK(catalog.Resolve("lab.baked@" + versions[3]).ok());
  CHECK_FALSE(catalog.Resolve("lab.baked@" + versions[1]).ok());
  CHECK(catalog.Resolve(base->ref()).ok());  // base images are never pruned
  // Nothing more to do.
  CHECK(service.PruneDerived("test")->empty());
  // What a node boots cannot be removed by hand either.
  CHECK(service.Remove("lab.baked@" + versions[0], "test").code() == Code::kConflict);
}

}  // namespace prov
