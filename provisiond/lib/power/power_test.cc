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
  REQUIRE(
      WriteFileAtomic(script, "#!/bin/sh\necho \"$1 $2 $3\" >> \"$0.log\"\necho done $1\n", 0755)
          .ok());
  s.command = script;
  auto r = PowerAction(s, {{"driver", "command"}}, "cycle", "n0", "52:54:00:00:00:01");
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  CHECK(*r == "command: done cycle");
  CHECK(*ReadFile(script + ".log") == "cycle n0 52:54:00:00:00:01\n");

  // IPMI credentials readable by others are refused before anything runs.
  s.ipmi_credentials_file = (dir / "ipmi").string();
  REQUIRE(WriteFileAtomic(s.ipmi_credentials_file, "10.0.0.5 admin secret\n", 0644).ok());
  auto ipmi = PowerAction(s, {{"driver", "ipmi"}, {"address", "10.0.0.5"}}, "on", "n0", "x");
  CHECK(ipmi.status().code() == Code::kForbidden);
  CHECK(ipmi.status().message().find("secret") == std::string::npos);
  chmod(s.ipmi_credentials_file.c_str(), 0600);
  auto missing = PowerAction(s, {{"driver", "ipmi"}, {"address", "10.0.0.6"}}, "on", "n0", "x");
  CHECK(missing.status().message().find("no IPMI credentials for 10.0.0.6") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("power drivers: the registry names them, and each validates its own settings") {
  CHECK(PowerDriverNames() == std::vector<std::string_view>{"wol", "ipmi", "command"});
  CHECK(PowerDriverList() == "wol, ipmi or command");
  for (std::string_view name : PowerDriverNames()) {
    const PowerDriver* d = FindPowerDriver(name);
    REQUIRE(d != nullptr);
    CHECK(d->name() == name);
  }
  CHECK(FindPowerDriver("redfish") == nullptr);
  auto unknown = LookupPowerDriver("redfish");
  CHECK(unknown.status().code() == Code::kInvalid);
  CHECK(unknown.status().message() == "unknown power driver 'redfish' (wol, ipmi or command)");

  struct Case {
    const char* driver;
    nlohmann::json config;
    const char* error;  // "" when valid
  };
  const Case cases[] = {
      {"wol", {{"driver", "wol"}}, ""},
      {"wol", {{"driver", "wol"}, {"address", "10.0.0.5"}}, "has no setting 'address'"},
      {"ipmi", {{"driver", "ipmi"}, {"address", "10.0.0.5"}}, ""},
      {"ipmi", {{"driver", "ipmi"}}, "needs 'address' (the BMC's address)"},
      {"ipmi", {{"driver", "ipmi"}, {"address", 5}}, "setting 'address' must be a string"},
      // Passwords live in the credentials file, never in a node's config.
      {"ipmi",
       {{"driver", "ipmi"}, {"address", "10.0.0.5"}, {"password", "x"}},
       "power driver 'ipmi' has no setting 'password'"},
      {"command", {{"driver", "command"}}, ""},
      {"command", {{"driver", "command"}, {"program", "/bin/x"}}, "has no setting 'program'"},
  };
  for (const auto& c : cases) {
    INFO(c.config.dump());
    Status s = FindPowerDriver(c.driver)->Validate(c.config);
    if (*c.error == '\0') {
      CHECK(s.ok());
    } else {
      CHECK(s.message().find(c.error) != std::string::npos);
    }
    CHECK(ValidatePowerConfig(c.config).message() == s.message());  // the same through the registry
  }
  CHECK(ValidatePowerConfig({{"driver", 1}}).message() ==
        "power needs a 'driver': wol, ipmi or command");
}

TEST_CASE("power drivers: what each can do; Wake-on-LAN only powers on") {
  const PowerCapabilities wol = FindPowerDriver("wol")->capabilities();
  CHECK(wol.can(PowerOp::kOn));
  CHECK_FALSE(wol.can(PowerOp::kOff));
  CHECK_FALSE(wol.can(PowerOp::kCycle));
  CHECK_FALSE(wol.can(PowerOp::kStatus));
  CHECK(FindPowerDriver("ipmi")->capabilities().can(PowerOp::kStatus));
  CHECK_FALSE(FindPowerDriver("command")->capabilities().can(PowerOp::kStatus));
  CHECK(FindPowerDriver("command")->capabilities().can(PowerOp::kCycle));

  PowerSettings s;
  const nlohmann::json config = {{"driver", "wol"}};
  for (PowerOp op : {PowerOp::kOff, PowerOp::kCycle}) {
    auto r = RunPowerOp(*FindPowerDriver("wol"), op, s, {config, "n0", "52:54:00:00:00:01"});
    CHECK(r.status().message() ==
          std::string("Wake-on-LAN can only power n0 on, not ") + ToString(op));
  }
  CHECK(PowerStatus(s, config, "n0", "52:54:00:00:00:01").status().message() ==
        "Wake-on-LAN cannot tell whether n0 is on");
  CHECK(PowerStatus(s, {{"driver", "command"}}, "n0", "52:54:00:00:00:01").status().message() ==
        "the command power driver cannot tell whether n0 is on");
}

TEST_CASE("power drivers: ipmitool gets the password in its environment, never in argv") {
  namespace fs = std::filesystem;
  auto dir = fs::temp_directory_path() / ("provision-ipmi-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  PowerSettings s;
  s.ipmi_credentials_file = (dir / "ipmi").string();
  REQUIRE(
      WriteFileAtomic(s.ipmi_credentials_file, "# BMCs\n10.0.0.5 admin s3cret-pw\n", 0600).ok());
  // A fake ipmitool: logs its argv and whether the password came in the
  // environment, answers like the real one; exits 1 for the BMC ".9".
  s.ipmitool = (dir / "ipmitool").string();
  REQUIRE(WriteFileAtomic(
              s.ipmitool,
              "#!/bin/sh\n"
              "echo \"argv: $*\" >> \"$0.log\"\n"
              "[ \"$IPMI_PASSWORD\" = s3cret-pw ] && echo \"env: ok\" >> \"$0.log\"\n"
              "case \"$4\" in *.9) echo 'Error: Unable to establish IPMI v2 session'; exit 1;; "
              "esac\n"
              "[ \"${10}\" = status ] && echo 'Chassis Power is on' || echo 'Chassis Power "
              "Control: Up/On'\n",
              0755)
              .ok());
  const nlohmann::json bmc = {{"driver", "ipmi"}, {"address", "10.0.0.5"}};
  auto on = PowerAction(s, bmc, "on", "n0", "52:54:00:00:00:01");
  REQUIRE_MESSAGE(on.ok(), on.status().message());
  CHECK(*on == "ipmi: Chassis Power Control: Up/On");
  auto state = PowerStatus(s, bmc, "n0", "52:54:00:00:00:01");
  REQUIRE_MESSAGE(state.ok(), state.status().message());
  CHECK(*state == "ipmi: Chassis Power is on");
  const std::string log = *ReadFile(s.ipmitool + ".log");
  CHECK(log ==
        "argv: -I lanplus -H 10.0.0.5 -U admin -E chassis power on\nenv: ok\n"
        "argv: -I lanplus -H 10.0.0.5 -U admin -E chassis power status\nenv: ok\n");
  CHECK(log.find("s3cret-pw") == std::string::npos);

  // A failing ipmitool: the error shows the command line, not the password.
  REQUIRE(WriteFileAtomic(s.ipmi_credentials_file, "10.0.0.9 admin s3cret-pw\n", 0600).ok());
  auto failed = PowerAction(s, {{"driver", "ipmi"}, {"address", "10.0.0.9"}}, "cycle", "n1", "x");
  CHECK(failed.status().code() == Code::kUnavailable);
  CHECK(failed.status().message().find("-H 10.0.0.9 -U admin -E chassis power cycle failed "
                                       "(exit 1): Error: Unable to establish") !=
        std::string::npos);
  CHECK(failed.status().message().find("s3cret-pw") == std::string::npos);
  fs::remove_all(dir);
}

}  // namespace prov
