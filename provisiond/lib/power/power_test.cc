#include "power/power.h"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "base/file_util.h"
#include "http/http_server.h"
#include "power/redfish.h"

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

namespace {

PowerTarget Node0(const nlohmann::json& config) {
  return {config, "n0", "52:54:00:00:00:01"};
}

}  // namespace

TEST_CASE("power: drivers refuse what they cannot do, and the command driver runs") {
  PowerSettings s;
  CHECK(PowerAction(s, {}, PowerOp::kOn, Node0({})).status().message().find("no power driver") !=
        std::string::npos);
  const nlohmann::json wol = {{"driver", "wol"}};
  CHECK(PowerAction(s, wol, PowerOp::kOff, Node0(wol))
            .status()
            .message()
            .find("can only power n0 on") != std::string::npos);
  CHECK_FALSE(ParsePowerOp("explode").ok());

  namespace fs = std::filesystem;
  auto dir = fs::temp_directory_path() / ("provision-power-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::string script = (dir / "power.sh").string();
  REQUIRE(
      WriteFileAtomic(script, "#!/bin/sh\necho \"$1 $2 $3\" >> \"$0.log\"\necho done $1\n", 0755)
          .ok());
  s.site["power.command"] = script;
  const nlohmann::json command = {{"driver", "command"}};
  auto r = PowerAction(s, command, PowerOp::kCycle, Node0(command));
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  CHECK(*r == "command: done cycle");
  CHECK(*ReadFile(script + ".log") == "cycle n0 52:54:00:00:00:01\n");

  // A chain: ssh first (the node does not answer), then the command.
  int ssh_calls = 0;
  s.node_command = [&](const std::string& node, const std::string& cmd) -> Result<std::string> {
    ++ssh_calls;
    CHECK(node == "n0");
    CHECK(cmd == "systemctl --no-block poweroff");
    return Status::Error(Code::kUnavailable, "n0: connection refused");
  };
  const nlohmann::json chain = {{"driver", "command"}, {"off", "ssh+command"}};
  auto off = PowerAction(s, chain, PowerOp::kOff, Node0(chain));
  REQUIRE_MESSAGE(off.ok(), off.status().message());
  CHECK(*off == "ssh failed (n0: connection refused), then command: done off");
  CHECK(ssh_calls == 1);
  CHECK(DescribePowerPlan(chain) ==
        "on: command; off: ssh, then command if ssh fails; cycle: command");
  // Both failing: each failure is said, in order.
  s.site["power.command"] = (dir / "missing.sh").string();
  auto both = PowerAction(s, chain, PowerOp::kOff, Node0(chain));
  CHECK(both.status().message().find(
            "ssh failed (n0: connection refused), then command failed (") == 0);

  // IPMI credentials readable by others are refused before anything runs.
  const std::string creds = (dir / "ipmi").string();
  s.site["ipmi_credentials_file"] = creds;
  REQUIRE(WriteFileAtomic(creds, "10.0.0.5 admin secret\n", 0644).ok());
  const nlohmann::json bmc5 = {{"driver", "ipmi"}, {"address", "10.0.0.5"}};
  auto ipmi = PowerAction(s, bmc5, PowerOp::kOn, Node0(bmc5));
  CHECK(ipmi.status().code() == Code::kForbidden);
  CHECK(ipmi.status().message().find("secret") == std::string::npos);
  chmod(creds.c_str(), 0600);
  const nlohmann::json bmc6 = {{"driver", "ipmi"}, {"address", "10.0.0.6"}};
  auto missing = PowerAction(s, bmc6, PowerOp::kOn, Node0(bmc6));
  CHECK(missing.status().message().find("no IPMI credentials for 10.0.0.6") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("power drivers: the registry names them, and each validates its own settings") {
  CHECK(PowerDriverNames() ==
        std::vector<std::string_view>{"wol", "ssh", "webhook", "ipmi", "redfish", "command"});
  CHECK(PowerDriverList() == "wol, ssh, webhook, ipmi, redfish or command");
  for (std::string_view name : PowerDriverNames()) {
    const PowerDriver* d = FindPowerDriver(name);
    REQUIRE(d != nullptr);
    CHECK(d->name() == name);
  }
  CHECK(FindPowerDriver("amt") == nullptr);
  auto unknown = LookupPowerDriver("amt");
  CHECK(unknown.status().code() == Code::kInvalid);
  CHECK(unknown.status().message() ==
        "unknown power driver 'amt' (wol, ssh, webhook, ipmi, redfish or command)");

  struct Case {
    nlohmann::json config;
    const char* error;  // "" when valid
  };
  using J = nlohmann::json;
  const Case cases[] = {
      {{{"driver", "wol"}}, ""},
      {{{"driver", "wol"}, {"address", "10.0.0.5"}}, "power driver 'wol' has no setting 'address'"},
      {{{"driver", "ipmi"}, {"address", "10.0.0.5"}}, ""},
      {{{"driver", "ipmi"}}, "needs 'address' (the BMC's address)"},
      {{{"driver", "ipmi"}, {"address", 5}}, "setting 'address' must be a string"},
      {{{"driver", "ipmi"}, {"address", "10.0.0.5"}, {"port", "70000"}}, "ipmi 'port' must be"},
      {{{"driver", "ipmi"}, {"address", "10.0.0.5"}, {"user", "admin"}},
       "takes 'user' and 'secret' together"},
      // Passwords are named secrets, never in a node's config.
      {{{"driver", "ipmi"}, {"address", "10.0.0.5"}, {"password", "x"}},
       "power driver 'ipmi' has no setting 'password'"},
      {{{"driver", "command"}}, ""},
      {{{"driver", "command"}, {"program", "/bin/x"}}, "has no setting 'program'"},
      {{{"driver", "webhook"}, {"preset", "tasmota"}, {"host", "10.0.0.50"}}, ""},
      {{{"driver", "webhook"}, {"preset", "tasmota"}}, "needs 'host'"},
      {{{"driver", "webhook"}, {"preset", "zigbee"}, {"host", "p"}}, "'preset' must be tasmota"},
      {{{"driver", "webhook"}, {"preset", "homeassistant"}, {"url", "http://ha:8123"}},
       "needs 'entity'"},
      {{{"driver", "webhook"}, {"host", "p"}, {"on_request", "GET /on"}},
       "needs on_request and off_request"},
      {{{"driver", "webhook"},
        {"host", "p"},
        {"on_request", "GET /on/{{outlet}}"},
        {"off_request", "GET /off"}},
       "uses {{outlet}}, which has no value here"},
      {{{"driver", "webhook"},
        {"host", "p"},
        {"on_request", "GET /on"},
        {"off_request", "GET /off"},
        {"status_request", "GET /"}},
       "needs status_on and status_off"},
      {{{"driver", "webhook"}, {"preset", "shelly"}, {"host", "p"}, {"status_on", "(("}},
       "'status_on' is not a pattern"},
      {{{"driver", "redfish"}, {"address", "bmc0"}, {"user", "root"}, {"secret", "bmc"}}, ""},
      {{{"driver", "redfish"}, {"address", "http://bmc0"}, {"user", "root"}, {"secret", "b"}},
       "must be https://"},
      {{{"driver", "redfish"}, {"address", "bmc0"}}, "needs 'user' and 'secret'"},
      // Chains: each driver must do its action, and the settings are theirs.
      {{{"on", "wol"}, {"off", "ssh+webhook"}, {"preset", "tasmota"}, {"host", "p"}}, ""},
      {{{"on", "ssh"}}, "power 'on': the ssh power driver cannot power a node on"},
      {{{"status", "wol"}}, "power 'status': Wake-on-LAN cannot tell whether a node is on"},
      {{{"off", "ssh+plug"}}, "power 'off': unknown power driver 'plug'"},
      {{{"on", "wol"}, {"off", "ssh"}, {"host", "p"}},
       "none of the power drivers wol and ssh has no setting 'host'"},
      {{{"driver", 1}}, "power setting 'driver' must be a string"},
      {J::object({{"host", "p"}}), "power needs a 'driver' (wol, ssh, webhook"},
  };
  for (const auto& c : cases) {
    INFO(c.config.dump());
    Status s = ValidatePowerConfig(c.config);
    if (*c.error == '\0') {
      CHECK_MESSAGE(s.ok(), s.message());
    } else {
      CHECK_MESSAGE(s.message().find(c.error) != std::string::npos, s.message());
    }
  }
  // The CLI's form: chains and a preset in one spec.
  auto spec =
      ParsePowerSpec("driver=webhook,preset=tasmota,host=10.0.0.50,secret=plug,on=wol+webhook");
  REQUIRE_MESSAGE(spec.ok(), spec.status().message());
  CHECK(DescribePowerPlan(*spec) ==
        "on: wol, then webhook if wol fails; off: webhook; cycle: webhook; status: webhook");
}

TEST_CASE("power drivers: what each can do; Wake-on-LAN only powers on") {
  const PowerCapabilities wol = FindPowerDriver("wol")->capabilities();
  CHECK(wol.can(PowerOp::kOn));
  CHECK_FALSE(wol.can(PowerOp::kOff));
  CHECK_FALSE(wol.can(PowerOp::kCycle));
  CHECK_FALSE(wol.can(PowerOp::kStatus));
  CHECK(FindPowerDriver("ipmi")->capabilities().can(PowerOp::kStatus));
  CHECK(FindPowerDriver("redfish")->capabilities().can(PowerOp::kStatus));
  CHECK(FindPowerDriver("webhook")->capabilities().can(PowerOp::kStatus));
  CHECK_FALSE(FindPowerDriver("ssh")->capabilities().can(PowerOp::kOn));
  CHECK_FALSE(FindPowerDriver("command")->capabilities().can(PowerOp::kStatus));
  CHECK(FindPowerDriver("command")->capabilities().can(PowerOp::kCycle));

  PowerSettings s;
  const nlohmann::json config = {{"driver", "wol"}};
  for (PowerOp op : {PowerOp::kOff, PowerOp::kCycle}) {
    auto r = RunPowerOp(*FindPowerDriver("wol"), op, s, Node0(config));
    CHECK(r.status().message() ==
          std::string("Wake-on-LAN can only power n0 on, not ") + ToString(op));
  }
  CHECK(PowerAction(s, config, PowerOp::kStatus, Node0(config)).status().message() ==
        "Wake-on-LAN cannot tell whether n0 is on");
  const nlohmann::json command = {{"driver", "command"}};
  CHECK(PowerAction(s, command, PowerOp::kStatus, Node0(command)).status().message() ==
        "the command power driver cannot tell whether n0 is on");
}

TEST_CASE("power drivers: ipmitool gets the password in its environment, never in argv") {
  namespace fs = std::filesystem;
  auto dir = fs::temp_directory_path() / ("provision-ipmi-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  PowerSettings s;
  const std::string creds = (dir / "ipmi").string();
  s.site["ipmi_credentials_file"] = creds;
  REQUIRE(WriteFileAtomic(creds, "# BMCs\n10.0.0.5 admin s3cret-pw\n", 0600).ok());
  // A fake ipmitool: logs its argv and whether the password came in the
  // environment, answers like the real one; exits 1 for the BMC ".9".
  const std::string tool = (dir / "ipmitool").string();
  s.site["power.ipmitool"] = tool;
  REQUIRE(WriteFileAtomic(
              tool,
              "#!/bin/sh\n"
              "echo \"argv: $*\" >> \"$0.log\"\n"
              "[ \"$IPMI_PASSWORD\" = s3cret-pw ] && echo \"env: ok\" >> \"$0.log\"\n"
              "case \"$4\" in *.9) echo 'Error: Unable to establish IPMI v2 session'; exit 1;; "
              "esac\n"
              "case \"$*\" in *bootdev*) echo 'Set Boot Device to pxe';; *status) echo 'Chassis "
              "Power is on';; *) echo 'Chassis Power Control: Up/On';; esac\n",
              0755)
              .ok());
  const nlohmann::json bmc = {{"driver", "ipmi"}, {"address", "10.0.0.5"}};
  auto on = PowerAction(s, bmc, PowerOp::kOn, Node0(bmc));
  REQUIRE_MESSAGE(on.ok(), on.status().message());
  CHECK(*on == "ipmi: next boot from the network, then Chassis Power Control: Up/On");
  auto state = PowerAction(s, bmc, PowerOp::kStatus, Node0(bmc));
  REQUIRE_MESSAGE(state.ok(), state.status().message());
  CHECK(*state == "on (ipmi: Chassis Power is on)");
  // An installed machine boots its own disk: no override.
  PowerTarget installed = Node0(bmc);
  installed.netboot = false;
  CHECK(PowerAction(s, bmc, PowerOp::kCycle, installed).ok());
  const std::string log = *ReadFile(tool + ".log");
  CHECK(log ==
        "argv: -I lanplus -H 10.0.0.5 -U admin -E chassis bootdev pxe\nenv: ok\n"
        "argv: -I lanplus -H 10.0.0.5 -U admin -E chassis power on\nenv: ok\n"
        "argv: -I lanplus -H 10.0.0.5 -U admin -E chassis power status\nenv: ok\n"
        "argv: -I lanplus -H 10.0.0.5 -U admin -E chassis power cycle\nenv: ok\n");
  CHECK(log.find("s3cret-pw") == std::string::npos);

  // The secrets store, a port and a cipher suite.
  s.secret = [](const std::string& name) -> Result<std::string> {
    if (name == "bmc9") return std::string("s3cret-pw");
    return Status::NotFound("secret '" + name + "' is not set");
  };
  const nlohmann::json stored = {{"driver", "ipmi"}, {"address", "10.0.0.7"}, {"port", "6230"},
                                 {"cipher", "3"},    {"user", "root"},        {"secret", "bmc9"},
                                 {"boot", "none"}};
  REQUIRE(ValidatePowerConfig(stored).ok());
  CHECK(PowerAction(s, stored, PowerOp::kOff, Node0(stored)).ok());
  CHECK(ReadFile(tool + ".log")
            ->find("argv: -I lanplus -H 10.0.0.7 -p 6230 -C 3 -U root -E chassis power off\nenv: "
                   "ok\n") != std::string::npos);

  // A failing ipmitool: the error shows the command line, not the password.
  REQUIRE(WriteFileAtomic(creds, "10.0.0.9 admin s3cret-pw\n", 0600).ok());
  const nlohmann::json bmc9 = {{"driver", "ipmi"}, {"address", "10.0.0.9"}, {"boot", "none"}};
  auto failed = PowerAction(s, bmc9, PowerOp::kCycle, Node0(bmc9));
  CHECK(failed.status().code() == Code::kUnavailable);
  CHECK(failed.status().message().find("-H 10.0.0.9 -U admin -E chassis power cycle failed "
                                       "(exit 1): Error: Unable to establish") !=
        std::string::npos);
  CHECK(failed.status().message().find("s3cret-pw") == std::string::npos);
  fs::remove_all(dir);
}

namespace {

// A plug for the webhook driver's unit test: Tasmota's web command shape,
// on loopback (the lab has the real-protocol stand-in: tests/lab/plug.py).
struct FakePlug {
  std::mutex mu;
  std::vector<std::string> requests;  // "GET /cm cmnd=Power On password=..."
  bool on = false;
  Router router{nullptr};
  std::unique_ptr<HttpServer> server;
  FakePlug() {
    router.Add("GET", "/cm", Router::Access::kOpen, [this](const HttpRequest& r) {
      std::lock_guard lock(mu);
      auto q = [&](const char* k) {
        auto it = r.query.find(k);
        return it == r.query.end() ? std::string() : it->second;
      };
      requests.push_back(q("cmnd") + " user=" + q("user") + " password=" + q("password"));
      if (q("password") != "pl&ug pw") {
        return HttpResponse::Json(401, {{"WARNING", "Need user=<username>&password=<password>"},
                                        {"echo", q("password")}});
      }
      if (q("cmnd") == "Power On") on = true;
      if (q("cmnd") == "Power Off") on = false;
      return HttpResponse::Json(200, {{"POWER", on ? "ON" : "OFF"}});
    });
    HttpServerOptions o;
    o.host = "127.0.0.1";
    o.port = 0;
    auto s = HttpServer::Start(o, router);
    REQUIRE_MESSAGE(s.ok(), s.status().message());
    server = std::move(*s);
  }
};

}  // namespace

TEST_CASE("power drivers: the webhook driver speaks a Tasmota plug's API, the secret hidden") {
  FakePlug plug;
  PowerSettings s;
  std::string secret = "pl&ug pw";
  s.secret = [&](const std::string& name) -> Result<std::string> {
    if (name == "plug1") return secret;
    return Status::NotFound("secret '" + name + "' is not set");
  };
  const nlohmann::json config = {{"driver", "webhook"},
                                 {"preset", "tasmota"},
                                 {"host", "127.0.0.1:" + std::to_string(plug.server->port())},
                                 {"secret", "plug1"},
                                 {"cycle_delay", "0"}};
  REQUIRE(ValidatePowerConfig(config).ok());
  const std::string where =
      "webhook (tasmota at 127.0.0.1:" + std::to_string(plug.server->port()) + ")";
  auto on = PowerAction(s, config, PowerOp::kOn, Node0(config));
  REQUIRE_MESSAGE(on.ok(), on.status().message());
  CHECK(*on == where + ": switched on");
  CHECK(*PowerAction(s, config, PowerOp::kStatus, Node0(config)) == "on (" + where + ")");
  auto cycle = PowerAction(s, config, PowerOp::kCycle, Node0(config));
  REQUIRE_MESSAGE(cycle.ok(), cycle.status().message());
  CHECK(*cycle == where + ": switched off, 0 s, on");
  CHECK(*PowerAction(s, config, PowerOp::kOff, Node0(config)) == where + ": switched off");
  CHECK(*PowerAction(s, config, PowerOp::kStatus, Node0(config)) == "off (" + where + ")");
  {
    std::lock_guard lock(plug.mu);
    // The password percent-encoded in the query, decoded by the plug.
    CHECK(plug.requests ==
          std::vector<std::string>{
              "Power On user=admin password=pl&ug pw", "Power user=admin password=pl&ug pw",
              "Power Off user=admin password=pl&ug pw", "Power On user=admin password=pl&ug pw",
              "Power Off user=admin password=pl&ug pw", "Power user=admin password=pl&ug pw"});
  }
  // A wrong password: the error says what the plug answered, without the
  // secret (not even as the plug echoes it back).
  secret = "wrong-pw-123";
  auto refused = PowerAction(s, config, PowerOp::kOn, Node0(config));
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("answered HTTP 401") != std::string::npos);
  CHECK(refused.status().message().find("password=********") != std::string::npos);
  CHECK(refused.status().message().find("wrong-pw-123") == std::string::npos);
  // A missing secret says how to set it.
  nlohmann::json unset = config;
  unset["secret"] = "plug2";
  CHECK(PowerAction(s, unset, PowerOp::kOn, Node0(unset)).status().message() ==
        "secret 'plug2' is not set");
  // Nothing listening: a clear error naming the request, secret hidden.
  secret = "pl&ug pw";
  nlohmann::json gone = config;
  gone["host"] = "127.0.0.1:1";
  auto down = PowerAction(s, gone, PowerOp::kOff, Node0(gone));
  CHECK(down.status().message().find("GET http://127.0.0.1:1/cm?cmnd=Power%20Off&user=admin&"
                                     "password=********: ") == 0);
}

TEST_CASE("power drivers: Redfish requests and answers in the DMTF schema's shapes") {
  using J = nlohmann::json;
  // A ServiceRoot and a ComputerSystemCollection as the schema shapes them.
  const J root = J::parse(R"({"@odata.id": "/redfish/v1/", "@odata.type":
      "#ServiceRoot.v1_5_0.ServiceRoot", "Id": "RootService", "RedfishVersion": "1.6.0",
      "Systems": {"@odata.id": "/redfish/v1/Systems"}})");
  CHECK(*RedfishSystemsPath(root) == "/redfish/v1/Systems");
  CHECK_FALSE(RedfishSystemsPath(J::object()).ok());
  const J systems = J::parse(R"({"@odata.id": "/redfish/v1/Systems", "Members@odata.count": 2,
      "Members": [{"@odata.id": "/redfish/v1/Systems/1"}, {"@odata.id": "/redfish/v1/Systems/2"}]})");
  CHECK(*RedfishMembers(systems) ==
        std::vector<std::string>{"/redfish/v1/Systems/1", "/redfish/v1/Systems/2"});

  const J system = J::parse(R"({"@odata.id": "/redfish/v1/Systems/1", "@odata.type":
      "#ComputerSystem.v1_13_0.ComputerSystem", "Id": "1", "PowerState": "On",
      "Boot": {"BootSourceOverrideEnabled": "Disabled", "BootSourceOverrideTarget": "None",
               "BootSourceOverrideTarget@Redfish.AllowableValues": ["None", "Pxe", "Hdd"]},
      "Actions": {"#ComputerSystem.Reset": {
          "target": "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset",
          "ResetType@Redfish.AllowableValues": ["On", "ForceOff", "GracefulShutdown",
                                                "ForceRestart", "PowerCycle"]}}})");
  auto s = ParseRedfishSystem(system, "/redfish/v1/Systems/1");
  REQUIRE_MESSAGE(s.ok(), s.status().message());
  CHECK(s->reset_target == "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset");
  CHECK(s->pxe_allowed);
  CHECK(*RedfishResets(PowerOp::kOn, *s) == std::vector<std::string>{"On"});
  CHECK(*RedfishResets(PowerOp::kOff, *s) == std::vector<std::string>{"ForceOff"});
  CHECK(*RedfishResets(PowerOp::kCycle, *s) == std::vector<std::string>{"PowerCycle"});
  CHECK(*RedfishPowerWord(s->power_state) == "on");
  CHECK(RedfishPxeOnce() == J::parse(R"({"Boot": {"BootSourceOverrideEnabled": "Once",
                              "BootSourceOverrideTarget": "Pxe"}})"));
  // A system off is cycled by powering it on.
  RedfishSystem off = *s;
  off.power_state = "Off";
  CHECK(*RedfishResets(PowerOp::kCycle, off) == std::vector<std::string>{"On"});
  // Without PowerCycle: ForceRestart; without either: ForceOff, then On.
  RedfishSystem fewer = *s;
  fewer.reset_types = {"On", "ForceOff", "ForceRestart"};
  CHECK(*RedfishResets(PowerOp::kCycle, fewer) == std::vector<std::string>{"ForceRestart"});
  fewer.reset_types = {"On", "ForceOff"};
  CHECK(*RedfishResets(PowerOp::kCycle, fewer) == std::vector<std::string>{"ForceOff", "On"});
  fewer.reset_types = {"GracefulRestart"};
  CHECK(RedfishResets(PowerOp::kOn, fewer).status().message() ==
        "cannot power on: /redfish/v1/Systems/1 offers GracefulRestart");
  // Allowable values through an ActionInfo resource instead.
  const J with_info = J::parse(R"({"PowerState": "Off", "Actions": {"#ComputerSystem.Reset": {
      "target": "/x/Reset", "@Redfish.ActionInfo": "/x/ResetActionInfo"}},
      "Boot": {"BootSourceOverrideTarget@Redfish.AllowableValues": ["None", "Hdd"]}})");
  auto i = ParseRedfishSystem(with_info, "/x");
  REQUIRE(i.ok());
  CHECK(i->reset_types.empty());
  CHECK(i->action_info == "/x/ResetActionInfo");
  CHECK_FALSE(i->pxe_allowed);
  const J info = J::parse(R"({"@odata.type": "#ActionInfo.v1_1_2.ActionInfo", "Parameters": [
      {"Name": "ResetType", "Required": true, "DataType": "String",
       "AllowableValues": ["On", "ForceOff"]}]})");
  CHECK(RedfishActionInfoResetTypes(info) == std::vector<std::string>{"On", "ForceOff"});
  CHECK_FALSE(ParseRedfishSystem(J::parse(R"({"PowerState": "On"})"), "/y").ok());
  CHECK_FALSE(RedfishPowerWord("Paused").ok());
}

}  // namespace prov
