#include "power/power.h"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "base/file_util.h"

namespace prov {

TEST_CASE("power: specs and validation") {
  CHECK(*ParsePowerSpec("wol") == nlohmann::json{{"driver", "wol"}});
  CHECK(*ParsePowerSpec("driver=ipmi,address=10.0.0.5") ==
        nlohmann::json{{"driver", "ipmi"}, {"address", "10.0.0.5"}});
  CHECK(ParsePowerSpec("none")->empty());
  CHECK(ParsePowerSpec("driver=ipmi").status().message().find("needs 'address'") !=
        std::string::npos);
  CHECK(ParsePowerSpec("driver=magic").status().message().find("unknown power driver") !=
        std::string::npos);
  CHECK(ParsePowerSpec("wol,speed=1").status().message().find("has no setting 'speed'") !=
        std::string::npos);
}

TEST_CASE("power: the Wake-on-LAN magic packet") {
  auto p = MagicPacket("52:54:00:01:02:03");
  REQUIRE(p.ok());
  CHECK(p->size() == 102);
  CHECK(p->substr(0, 6) == std::string(6, '\xff'));
  CHECK(p->substr(6, 6) == std::string("\x52\x54\x00\x01\x02\x03", 6));
  CHECK(p->substr(96, 6) == std::string("\x52\x54\x00\x01\x02\x03", 6));
}

TEST_CASE("power: drivers refuse what they cannot do, and the command driver runs") {
  PowerSettings s;
  CHECK(PowerAction(s, {}, "on", "n0", "52:54:00:00:00:01")
            .status()
            .message()
            .find("no power driver") != std::string::npos);
  CHECK(PowerAction(s, {{"driver", "wol"}}, "off", "n0", "52:54:00:00:00:01")
            .status()
            .message()
            .find("can only power n0 on") != std::string::npos);
  CHECK_FALSE(PowerAction(s, {{"driver", "wol"}}, "explode", "n0", "x").ok());

  namespace fs = std::filesystem;
  auto dir = fs::temp_directory_path() / ("provision-power-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::string script = (dir / "power.sh").string();
  WriteFileAtomic(script, "#!/bin/sh\necho \"$1 $2 $3\" >> \"$0.log\"\necho done $1\n", 0755);
  s.command = script;
  auto r = PowerAction(s, {{"driver", "command"}}, "cycle", "n0", "52:54:00:00:00:01");
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  CHECK(*r == "command: done cycle");
  CHECK(*ReadFile(script + ".log") == "cycle n0 52:54:00:00:00:01\n");

  // IPMI credentials readable by others are refused before anything runs.
  s.ipmi_credentials_file = (dir / "ipmi").string();
  WriteFileAtomic(s.ipmi_credentials_file, "10.0.0.5 admin secret\n", 0644);
  auto ipmi = PowerAction(s, {{"driver", "ipmi"}, {"address", "10.0.0.5"}}, "on", "n0", "x");
  CHECK(ipmi.status().code() == Code::kForbidden);
  CHECK(ipmi.status().message().find("secret") == std::string::npos);
  chmod(s.ipmi_credentials_file.c_str(), 0600);
  auto missing = PowerAction(s, {{"driver", "ipmi"}, {"address", "10.0.0.6"}}, "on", "n0", "x");
  CHECK(missing.status().message().find("no IPMI credentials for 10.0.0.6") != std::string::npos);
  fs::remove_all(dir);
}

}  // namespace prov
