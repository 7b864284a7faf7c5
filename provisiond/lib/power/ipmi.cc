// The ipmi power driver: ipmitool (lanplus) against the node's BMC. The
// user and password come from a file only its owner may read, one
// "<address> <user> <password>" line per BMC; the password reaches ipmitool
// through its environment (-E), never its command line, which every user of
// the control node can read in /proc and which errors and events show.
#include <sys/stat.h>

#include <sstream>

#include "base/file_util.h"
#include "power/driver.h"

namespace prov {
namespace {

// Looks up the BMC at `address` in the credentials file.
Status IpmiCredentials(const PowerSettings& s, const std::string& address, std::string& user,
                       std::string& password) {
  struct stat st {};
  if (stat(s.ipmi_credentials_file.c_str(), &st) != 0)
    return Status::NotFound("IPMI credentials file " + s.ipmi_credentials_file + " does not exist");
  if (st.st_mode & 077)
    return Status::Error(Code::kForbidden, "IPMI credentials file " + s.ipmi_credentials_file +
                                               " is readable by others; chmod 600 it");
  auto text = ReadFile(s.ipmi_credentials_file);
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
  return Status::NotFound("no IPMI credentials for " + address + " in " + s.ipmi_credentials_file);
}

class Ipmi final : public PowerDriver {
 public:
  std::string_view name() const override { return "ipmi"; }
  std::string_view title() const override { return "IPMI"; }
  PowerCapabilities capabilities() const override {
    return {.on = true, .off = true, .cycle = true, .status = true};
  }
  Status Validate(const nlohmann::json& config) const override {
    Status s = CheckPowerSettings(config, name(), {"address"});
    if (!s.ok()) return s;
    if (!config.contains("address"))
      return Status::Invalid("the ipmi power driver needs 'address' (the BMC's address)");
    return Status::Ok();
  }

  Result<std::string> Run(PowerOp op, const PowerSettings& s,
                          const PowerTarget& target) const override {
    const std::string address = target.config["address"];
    std::string user, password;
    Status c = IpmiCredentials(s, address, user, password);
    if (!c.ok()) return c;
    const std::string action = ToString(op);
    ProcessSpec spec;
    spec.argv = {s.ipmitool, "-I", "lanplus", "-H",    address, "-U",
                 user,       "-E", "chassis", "power", action};
    spec.env = {"IPMI_PASSWORD=" + password};  // -E: read from the environment
    auto out = RunPowerProgram(spec, s.timeout_ms);
    if (!out.ok()) return out.status();
    // ipmitool says "Chassis Power Control: Up/On", or for status
    // "Chassis Power is on".
    return "ipmi: " + (out->empty() ? "power " + action : *out);
  }
};

}  // namespace

const PowerDriver& IpmiDriver() {
  static const Ipmi driver;
  return driver;
}

}  // namespace prov
