// The ipmi power driver: ipmitool (lanplus) against the node's BMC. The
// password comes from the secrets store (`secret=NAME`, with `user=`) or from
// a file only its owner may read, one "<address> <user> <password>" line per
// BMC (the config's ipmi_credentials_file); it reaches ipmitool through its
// environment (-E), never its command line, which every user of the control
// node can read in /proc and which errors and events show. Before powering a
// node that netboots on (or cycling it), the BMC is told to boot it from the
// network once (`chassis bootdev pxe`), so a server whose first boot device
// is its disk still comes to provisiond.
#include <sys/stat.h>

#include <sstream>

#include "base/file_util.h"
#include "base/strings.h"
#include "power/driver.h"

namespace prov {
namespace {

constexpr const char* kCredentialsKey = "ipmi_credentials_file";  // provisiond's config
constexpr const char* kIpmitoolKey = "power.ipmitool";

// Looks up the BMC at `address` in the credentials file.
Status FileCredentials(const std::string& file, const std::string& address, std::string& user,
                       std::string& password) {
  struct stat st {};
  if (stat(file.c_str(), &st) != 0)
    return Status::NotFound("IPMI credentials file " + file + " does not exist");
  if (st.st_mode & 077)
    return Status::Error(Code::kForbidden,
                         "IPMI credentials file " + file + " is readable by others; chmod 600 it");
  auto text = ReadFile(file);
  if (!text.ok()) return text.status();
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string a, u, p;
    if (words >> a >> u >> p && a == address) {
      user = u;
      password = p;
      return Status::Ok();
    }
  }
  return Status::NotFound("no IPMI credentials for " + address + " in " + file);
}

class Ipmi final : public PowerDriver {
 public:
  std::string_view name() const override { return "ipmi"; }
  std::string_view title() const override { return "IPMI"; }
  PowerCapabilities capabilities() const override {
    return {.on = true, .off = true, .cycle = true, .status = true};
  }
  std::vector<std::string_view> settings() const override {
    return {"address", "port", "user", "secret", "cipher", "boot"};
  }
  Status Validate(const nlohmann::json& config) const override {
    if (PowerSetting(config, "address").empty())
      return Status::Invalid("the ipmi power driver needs 'address' (the BMC's address)");
    if (PowerSetting(config, "secret").empty() != PowerSetting(config, "user").empty())
      return Status::Invalid(
          "the ipmi power driver takes 'user' and 'secret' together (or neither: the "
          "credentials file)");
    for (Status s : {CheckNumberSetting(config, name(), "port", 1, 65535, "a UDP port"),
                     CheckNumberSetting(config, name(), "cipher", 0, 17, "a cipher suite")})
      if (!s.ok()) return s;
    std::string boot = PowerSetting(config, "boot");
    if (!boot.empty() && boot != "pxe" && boot != "auto" && boot != "none")
      return Status::Invalid("ipmi 'boot' must be pxe, auto or none, found '" + boot + "'");
    return Status::Ok();
  }

  Result<std::string> Run(PowerOp op, const PowerSettings& s,
                          const PowerTarget& target) const override {
    const std::string address = PowerSetting(target.config, "address");
    std::string user = PowerSetting(target.config, "user"), password;
    if (std::string secret = PowerSetting(target.config, "secret"); !secret.empty()) {
      if (!s.secret) return Status::Internal("no secrets store for the ipmi power driver");
      auto value = s.secret(secret);
      if (!value.ok()) return value.status();
      password = *value;
    } else {
      std::string file = s.Site(kCredentialsKey);
      Status c =
          FileCredentials(file.empty() ? "/etc/provisiond/ipmi" : file, address, user, password);
      if (!c.ok()) return c;
    }
    std::string tool = s.Site(kIpmitoolKey);
    ProcessSpec spec;
    spec.argv = {tool.empty() ? "/usr/bin/ipmitool" : tool, "-I", "lanplus", "-H", address};
    if (std::string port = PowerSetting(target.config, "port"); !port.empty())
      spec.argv.insert(spec.argv.end(), {"-p", port});
    if (std::string cipher = PowerSetting(target.config, "cipher"); !cipher.empty())
      spec.argv.insert(spec.argv.end(), {"-C", cipher});
    spec.argv.insert(spec.argv.end(), {"-U", user, "-E"});
    spec.env = {"IPMI_PASSWORD=" + password};  // -E: read from the environment
    auto run = [&](std::vector<std::string> args) -> Result<std::string> {
      ProcessSpec call = spec;
      call.argv.insert(call.argv.end(), args.begin(), args.end());
      auto out = RunPowerProgram(call, s.timeout_ms);
      if (!out.ok())
        return Status::Error(out.status().code(),
                             RedactSecrets(out.status().message(), {password}));
      return RedactSecrets(*out, {password});
    };
    std::string done;
    const std::string boot = PowerSetting(target.config, "boot");
    if ((op == PowerOp::kOn || op == PowerOp::kCycle) &&
        (boot == "pxe" || ((boot.empty() || boot == "auto") && target.netboot))) {
      auto bootdev = run({"chassis", "bootdev", "pxe"});
      if (!bootdev.ok()) return bootdev.status();
      done = "next boot from the network, then ";
    }
    const std::string action = ToString(op);
    auto out = run({"chassis", "power", action});
    if (!out.ok()) return out.status();
    if (op == PowerOp::kStatus) {
      // "Chassis Power is on"
      std::string state = out->find(" on") != std::string::npos    ? "on"
                          : out->find(" off") != std::string::npos ? "off"
                                                                   : "";
      if (state.empty()) return Status::Error(Code::kUnavailable, "ipmitool said: " + *out);
      return state + " (ipmi: " + *out + ")";
    }
    // ipmitool says "Chassis Power Control: Up/On".
    return "ipmi: " + done + (out->empty() ? "power " + action : *out);
  }
};

}  // namespace

const PowerDriver& IpmiDriver() {
  static const Ipmi driver;
  return driver;
}

}  // namespace prov
