// control_nodes on SQLite here and on PostgreSQL under store.postgresql.
#include "ha/control_nodes.h"

#include <doctest/doctest.h>

#include <filesystem>

#include "base/file_util.h"
#include "base/temp_dir.h"
#include "store/migrations.h"
#include "store/store.h"
#include "store/testing/test_database.h"

namespace prov {

TEST_CASE("control nodes: each one's report, replaced, read back with its age") {
  auto db = sql::Database::Open(testing::TestDatabase(), sql::Database::Mode::kReadWrite);
  REQUIRE_MESSAGE(db.ok(), db.status().message());
  REQUIRE(ApplyMigrations(*db, static_cast<int>(Migrations().size())).ok());

  ControlNodeReport cn1{.name = "cn1",
                        .role = "active",
                        .url = "https://10.0.0.1:8443",
                        .tls_pin = "sha256//abc=",
                        .images = {"lab@0000000000000001", "lab@0000000000000002"},
                        .current = {{"lab", "0000000000000002"}},
                        .nfs_clients = {"10.0.0.1:2049>10.0.0.101:872"},
                        .alike = {{"control key", "ab12"}, {"profiles", "cd34"}}};
  ControlNodeReport cn2{.name = "cn2", .role = "standby", .images = {"lab@0000000000000001"}};
  cn2.copying = "lab@0000000000000002: 40% of 700 MiB";
  REQUIRE(WriteControlNode(*db, cn1).ok());
  REQUIRE(WriteControlNode(*db, cn2).ok());
  cn2.copying.clear();
  cn2.images.push_back("lab@0000000000000002");
  REQUIRE(WriteControlNode(*db, cn2).ok());  // replaces its row

  auto all = ReadControlNodes(*db);
  REQUIRE_MESSAGE(all.ok(), all.status().message());
  REQUIRE(all->size() == 2);
  const ControlNodeReport& a = (*all)[0];
  CHECK(a.name == "cn1");
  CHECK(a.role == "active");
  CHECK(a.url == "https://10.0.0.1:8443");
  CHECK(a.tls_pin == "sha256//abc=");
  CHECK(a.current.at("lab") == "0000000000000002");
  CHECK(a.nfs_clients == std::vector<std::string>{"10.0.0.1:2049>10.0.0.101:872"});
  CHECK(a.alike ==
        std::map<std::string, std::string>{{"control key", "ab12"}, {"profiles", "cd34"}});
  CHECK(a.reported_ms > 1700000000000);
  CHECK(a.age_ms >= 0);
  CHECK(a.age_ms < 600000);
  const ControlNodeReport& b = (*all)[1];
  CHECK(b.images == std::vector<std::string>{"lab@0000000000000001", "lab@0000000000000002"});
  CHECK(b.copying.empty());
  CHECK(b.nfs_clients.empty());
  CHECK(Lacking(b, a.images).empty());
  cn2.images = {"lab@0000000000000002"};
  CHECK(Lacking(cn2, {"lab@0000000000000001", "lab@0000000000000002", "oci@00000000000000ff"}) ==
        std::vector<std::string>{"lab@0000000000000001", "oci@00000000000000ff"});
}

TEST_CASE("control nodes: what must be alike, as digests; how two differ") {
  TempDir dir;
  const std::string a = dir.path() + "/a", b = dir.path() + "/b";
  for (const std::string& d : {a, b}) {
    std::filesystem::create_directories(d + "/profiles/lab");
    std::filesystem::create_directories(d + "/playbooks");
    std::filesystem::create_directories(d + "/secrets");
    REQUIRE(WriteFileAtomic(d + "/profiles/lab/profile.yaml", "version: lab\n", 0644).ok());
    REQUIRE(WriteFileAtomic(d + "/playbooks/site.yml", "- hosts: all\n", 0644).ok());
  }
  REQUIRE(WriteFileAtomic(a + "/id.pub", "ssh-ed25519 AAAAC3Nza provisiond@cn1\n", 0644).ok());
  REQUIRE(WriteFileAtomic(b + "/id.pub", "ssh-ed25519 AAAAC3Nza provisiond@cn2\n", 0644).ok());
  REQUIRE(WriteFileAtomic(a + "/secrets/munge", "c2VjcmV0\n", 0600).ok());
  REQUIRE(WriteFileAtomic(b + "/secrets/munge", "c2VjcmV0\n", 0600).ok());
  auto mine = AlikeDigests(a + "/id.pub", a + "/profiles", a + "/playbooks", a + "/secrets");
  auto theirs = AlikeDigests(b + "/id.pub", b + "/profiles", b + "/playbooks", b + "/secrets");
  CHECK(mine.size() == 4);
  CHECK(mine.at("secrets").find("c2VjcmV0") == std::string::npos);
  CHECK(mine == theirs);  // the same files elsewhere; the key's comment aside
  CHECK(Unlike(mine, theirs).empty());

  // A profile changed, another key: named; a part not reported: not compared.
  REQUIRE(WriteFileAtomic(b + "/profiles/lab/profile.yaml", "version: lab2\n", 0644).ok());
  REQUIRE(WriteFileAtomic(b + "/id.pub", "ssh-ed25519 AAAAC3Nzb provisiond@cn2\n", 0644).ok());
  REQUIRE(WriteFileAtomic(b + "/secrets/munge", "b3RoZXI=\n", 0600).ok());
  theirs = AlikeDigests(b + "/id.pub", b + "/profiles", b + "/playbooks", b + "/secrets");
  CHECK(Unlike(mine, theirs) == std::vector<std::string>{"control key", "profiles", "secrets"});
  theirs.erase("secrets");
  theirs.erase("control key");
  CHECK(Unlike(mine, theirs) == std::vector<std::string>{"profiles"});
  // A file more is a difference too; a missing key is said so.
  REQUIRE(WriteFileAtomic(b + "/playbooks/more.yml", "- hosts: all\n", 0644).ok());
  auto none = AlikeDigests(b + "/missing.pub", b + "/profiles", b + "/playbooks", b + "/secrets");
  CHECK(none.at("control key").rfind("unreadable: ", 0) == 0);
  CHECK(Unlike(mine, none) ==
        std::vector<std::string>{"control key", "playbooks", "profiles", "secrets"});
  // No secrets folder yet (a standby before its first start as the active)
  // is an empty one.
  std::filesystem::create_directories(b + "/empty");
  CHECK(AlikeDigests(a + "/id.pub", a + "/profiles", a + "/playbooks", b + "/nothing")
            .at("secrets") ==
        AlikeDigests(a + "/id.pub", a + "/profiles", a + "/playbooks", b + "/empty").at("secrets"));
}

}  // namespace prov
