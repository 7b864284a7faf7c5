#include "profiles/storage.h"

#include <doctest/doctest.h>

#include "profiles/hardware_check.h"
#include "profiles/profile.h"

namespace prov {
namespace {

using json = nlohmann::json;

Result<Profile> WithStorage(const std::string& storage) {
  return ParseProfile(
      "version: s1\nimage: {name: lab}\nnodes: {pattern: 'n*'}\nstorage:\n" + storage,
      "s1/profile.yaml", "s1", "/nonexistent");
}

json Disk(const std::string& id, const std::string& transport, uint64_t bytes,
          bool system = false) {
  return {{"name", id.substr(id.size() - 3)},
          {"by_id", "/dev/disk/by-id/" + id},
          {"ids", {id}},
          {"transport", transport},
          {"model", transport == "nvme" ? "Samsung SSD 990 PRO 2TB" : "QEMU"},
          {"size_bytes", bytes},
          {"rotational", false},
          {"content", "empty"},
          {"system", system}};
}

}  // namespace

TEST_CASE("storage: a profile's volumes, as written and as the node receives them") {
  auto p = WithStorage(R"(  - name: models
    disks: {transport: nvme, min_size: 1T, count: all}
    layout: raid0
    filesystem: xfs
    mount: /mnt/resource_nvme
    binds:
      - /var/lib/docker
      - {path: /home/compute/.cache/huggingface, owner: compute, mode: "0700"}
  - name: state
    disks: {ids: [ata-WDC_WD10_123]}
    mount: /var/spool/slurmctld
    wipe: true
)");
  REQUIRE_MESSAGE(p.ok(), p.status().message());
  REQUIRE(p->storage.size() == 2);
  const StorageVolume& v = p->storage[0];
  CHECK(v.layout == StorageLayout::kRaid0);
  CHECK(v.disks.min_bytes == 1000000000000ULL);
  CHECK(v.disks.count == 0);
  CHECK(v.binds.at(1).owner == "compute");
  CHECK(v.line == 5);
  CHECK(StorageLabel(v) == "pv-models");
  auto back = StorageVolumeFromJson(ToJson(v));
  REQUIRE(back.ok());
  CHECK(ToJson(*back) == ToJson(v));
  CHECK(p->storage[1].wipe);
  CHECK(ToJson(*p)["storage"].size() == 2);
}

TEST_CASE("storage: profile errors say what and where") {
  struct Case {
    const char* yaml;
    const char* error;
  } cases[] = {
      {"  - {name: Scratch, mount: /mnt/s, disks: {transport: nvme}}\n", "volume name 'Scratch'"},
      {"  - {name: s, mount: /usr/local, disks: {transport: nvme}}\n", "inside /usr"},
      {"  - {name: s, mount: relative, disks: {transport: nvme}}\n", "must be an absolute path"},
      {"  - {name: s, mount: /mnt/s, layout: raid5, disks: {}}\n",
       "layout 'raid5' is not one of single, raid0, raid1"},
      {"  - {name: s, mount: /mnt/s, layout: raid1, disks: {count: 1}}\n",
       "raid1 needs at least 2 disks"},
      {"  - {name: s, mount: /mnt/s, disks: {min_size: lots}}\n", "size 'lots'"},
      {"  - {name: s, mount: /mnt/s, disks: {transport: floppy}}\n", "transport 'floppy'"},
      {"  - {name: s, mount: /mnt/s, disks: {}, binds: [/mnt/s/x]}\n", "overlaps the mount point"},
      {"  - {name: s, mount: /mnt/s, disks: {}, filesystem: ntfs}\n", "filesystem 'ntfs'"},
      {"  - {name: s, mount: /mnt/s, disks: {}}\n  - {name: s, mount: /mnt/t, disks: {}}\n",
       "volume 's' is named twice"},
      {"  - {name: s, mount: /mnt/s}\n", "disks"},
      {"  - {name: s, mount: /mnt/s, disks: {colour: red}}\n", "colour"},
  };
  for (const auto& c : cases) {
    auto p = WithStorage(c.yaml);
    CAPTURE(c.yaml);
    REQUIRE_FALSE(p.ok());
    CHECK_MESSAGE(p.status().message().find(c.error) != std::string::npos, p.status().message());
    CHECK(p.status().message().find("s1/profile.yaml:") != std::string::npos);
  }
}

TEST_CASE("storage: which disks a volume takes") {
  json disks = {Disk("nvme-Samsung_B", "nvme", 2000398934016ULL),
                Disk("nvme-Samsung_A", "nvme", 2000398934016ULL),
                Disk("ata-Boot_SSD_1", "sata", 500107862016ULL, true),
                Disk("usb-Stick_9", "usb", 32000000000ULL)};
  StorageVolume raid{.name = "models", .layout = StorageLayout::kRaid0, .mount = "/mnt/m"};
  raid.disks.transport = "nvme";
  auto m = MatchDisks(raid, disks);
  REQUIRE(m.ok());
  REQUIRE(m->size() == 2);
  CHECK((*m)[0]["by_id"] == "/dev/disk/by-id/nvme-Samsung_A");  // by-id order

  StorageVolume any{.name = "any", .mount = "/mnt/a"};
  auto one = MatchDisks(any, disks);
  REQUIRE(one.ok());
  CHECK(one->size() == 1);  // single: one disk

  // The system's disk is never taken, even named.
  StorageVolume boot{.name = "b", .mount = "/mnt/b"};
  boot.disks.ids = {"/dev/disk/by-id/ata-Boot_SSD_1"};
  auto none = MatchDisks(boot, disks);
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().message().find("holds the system") != std::string::npos);

  // Sizes, model globs; two volumes never share a disk.
  StorageVolume big{.name = "big", .mount = "/mnt/big"};
  big.disks.min_bytes = 1000000000000ULL;
  big.disks.model = "Samsung*";
  StorageVolume small{.name = "small", .mount = "/mnt/small"};
  small.disks.max_bytes = 100000000000ULL;
  auto both = MatchVolumes({big, small}, disks);
  REQUIRE(both.ok());
  CHECK((*both)[0][0]["by_id"] == "/dev/disk/by-id/nvme-Samsung_A");
  CHECK((*both)[1][0]["by_id"] == "/dev/disk/by-id/usb-Stick_9");
  StorageVolume twice = big;
  twice.name = "again";
  twice.mount = "/mnt/again";
  twice.layout = StorageLayout::kRaid1;
  auto taken = MatchVolumes({big, twice}, disks);
  REQUIRE_FALSE(taken.ok());
  CHECK(taken.status().message().find("volume again needs 2 disks") != std::string::npos);
  CHECK(taken.status().message().find("taken by an earlier volume") != std::string::npos);
}

TEST_CASE("storage: the node's outcome and the plan's check") {
  auto p =
      WithStorage("  - {name: models, mount: /mnt/m, layout: raid0, disks: {transport: nvme}}\n");
  REQUIRE(p.ok());
  json facts = {{"disks", {Disk("nvme-Samsung_A", "nvme", 2000398934016ULL)}}};
  Status fits = CheckStorageFits(*p, facts);
  REQUIRE_FALSE(fits.ok());
  CHECK(fits.message().find("volume models needs 2 disks (transport nvme), found 1") !=
        std::string::npos);
  CHECK(CheckStorageFits(*p, json::object()).ok());  // never phoned home: nothing known

  CHECK(CheckStorageOutcome(*p, facts).message().find("reported no storage outcome") !=
        std::string::npos);
  facts["storage"] = {{"state", "failed"}, {"reason", "volume models: disk X holds gpt"}};
  CHECK(CheckStorageOutcome(*p, facts).message() == "storage: volume models: disk X holds gpt");
  facts["storage"] = {{"state", "ready"}};
  CHECK(CheckStorageOutcome(*p, facts).ok());
}

TEST_CASE("storage: sizes") {
  CHECK(*ParseByteSize("500G") == 500000000000ULL);
  CHECK(*ParseByteSize("1.5T") == 1500000000000ULL);
  CHECK(*ParseByteSize("2TiB") == 2199023255552ULL);
  CHECK(*ParseByteSize("1024") == 1024);
  CHECK_FALSE(ParseByteSize("big").ok());
  CHECK_FALSE(ParseByteSize("5X").ok());
  CHECK(FormatByteSize(2000398934016ULL) == "2.0 TB");
  CHECK(FormatByteSize(500107862016ULL) == "500 GB");
  CHECK(GlobMatch("Samsung*PRO?2TB", "Samsung SSD 990 PRO 2TB"));
  CHECK_FALSE(GlobMatch("WD*", "Samsung"));
}

}  // namespace prov
