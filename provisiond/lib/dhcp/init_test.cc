#include "dhcp/init.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>

#include "base/file_util.h"
#include "config.h"

namespace prov {
namespace {

namespace fs = std::filesystem;

// A cluster interface at 10.77.0.1/24, and a probe that sees `servers`.
InitOptions Options(const fs::path& dir, std::vector<DhcpServerSeen> servers) {
  InitOptions o;
  o.interface = "enx8cae4cf44e21";
  o.config_path = (dir / "etc/provisiond.yaml").string();
  o.default_config = (dir / "provisiond.yaml.default").string();
  o.data_dir = (dir / "var").string();
  o.lookup = [](const std::string& name) -> Result<InterfaceAddress> {
    InterfaceAddress a;
    a.name = name;
    a.address = "10.77.0.1";
    a.prefix = 24;
    a.address_host = 0x0a4d0001;
    a.netmask_host = 0xffffff00;
    return a;
  };
  o.probe = [servers](const std::string&, int) -> Result<std::vector<DhcpServerSeen>> {
    return servers;
  };
  return o;
}

struct Dir {
  fs::path path = fs::temp_directory_path() / ("provision-init-" + std::to_string(getpid()));
  Dir() { fs::create_directories(path); }
  ~Dir() { fs::remove_all(path); }
};

}  // namespace

TEST_CASE("init: no other DHCP server: full mode, a lease range without our address") {
  Dir d;
  auto r = InitControlNode(Options(d.path, {}));
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  CHECK(r->mode == DhcpMode::kFull);
  CHECK(r->range == "10.77.0.128-10.77.0.254");
  CHECK(r->token_created);
  auto config = LoadConfig(d.path / "etc/provisiond.yaml");
  REQUIRE_MESSAGE(config.ok(), config.status().message());
  CHECK(config->interface == "enx8cae4cf44e21");
  CHECK(config->dhcp_mode == DhcpMode::kFull);
  CHECK(config->dhcp_range_first == "10.77.0.128");
  CHECK(config->boot_url == "http://10.77.0.1:8080");
  CHECK(config->data_dir == (d.path / "var").string());
  // The token file is its owner's alone and holds one admin token.
  auto tokens = ReadFile(r->tokens_file);
  REQUIRE(tokens.ok());
  CHECK(tokens->find(" init admin\n") != std::string::npos);
  CHECK((fs::status(r->tokens_file).permissions() & fs::perms::all) ==
        (fs::perms::owner_read | fs::perms::owner_write));
  CHECK(r->next.front().find("provisiond --check") != std::string::npos);
}

TEST_CASE("init: a DHCP server that leases means proxy mode; a PXE proxy is a warning") {
  Dir d;
  DhcpServerSeen router{"10.77.0.254", false, "10.77.0.50"}, pxe{"10.77.0.9", true, ""};
  auto r = InitControlNode(Options(d.path, {router, pxe}));
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  CHECK(r->mode == DhcpMode::kProxy);
  CHECK(r->reason.find("10.77.0.254") != std::string::npos);
  REQUIRE(r->notes.size() == 1);
  CHECK(r->notes[0].find("another PXE service") != std::string::npos);
  CHECK(r->notes[0].find("10.77.0.9") != std::string::npos);
  auto config = LoadConfig(d.path / "etc/provisiond.yaml");
  REQUIRE(config.ok());
  CHECK(config->dhcp_mode == DhcpMode::kProxy);
}

TEST_CASE("init: an operator's config is kept unless --force; the package default is replaced") {
  Dir d;
  auto o = Options(d.path, {});
  fs::create_directories(d.path / "etc");
  REQUIRE(WriteFileAtomic(o.default_config, "listen: 127.0.0.1:8080\n").ok());
  REQUIRE(WriteFileAtomic(o.config_path, "listen: 127.0.0.1:8080\n").ok());
  auto r = InitControlNode(o);  // the untouched default
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  CHECK(*ReadFile(r->backup_of_old) == "listen: 127.0.0.1:8080\n");

  REQUIRE(WriteFileAtomic(o.config_path, "listen: 127.0.0.1:9999\n").ok());  // the operator's own
  auto refused = InitControlNode(o);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("--force") != std::string::npos);
  CHECK(*ReadFile(o.config_path) == "listen: 127.0.0.1:9999\n");
  o.force = true;
  auto forced = InitControlNode(o);
  REQUIRE(forced.ok());
  CHECK(*ReadFile(forced->backup_of_old) == "listen: 127.0.0.1:9999\n");
  CHECK_FALSE(forced->token_created);  // the first run's token stays
}

TEST_CASE("init: bad ranges, modes and a probe that cannot run are clear errors") {
  Dir d;
  auto o = Options(d.path, {});
  o.range = "10.77.0.1-10.77.0.20";  // holds our own address
  auto r = InitControlNode(o);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("without 10.77.0.1") != std::string::npos);
  o.range = "10.78.0.10-10.78.0.20";
  CHECK_FALSE(InitControlNode(o).ok());
  o.range = "10.77.0.10-10.77.0.20";
  auto ok = InitControlNode(o);
  REQUIRE(ok.ok());
  CHECK(ok->range == "10.77.0.10-10.77.0.20");

  o.force = true;
  o.dhcp_mode = "maybe";
  CHECK_FALSE(InitControlNode(o).ok());
  o.dhcp_mode = "auto";
  o.probe = [](const std::string&, int) -> Result<std::vector<DhcpServerSeen>> {
    return Status::Error(Code::kUnavailable, "UDP port 68 is busy");
  };
  auto busy = InitControlNode(o);
  REQUIRE_FALSE(busy.ok());
  CHECK(busy.status().message().find("--dhcp-mode") != std::string::npos);
  o.dhcp_mode = "proxy";  // chosen: no probe needed
  CHECK(InitControlNode(o).ok());
}

}  // namespace prov
