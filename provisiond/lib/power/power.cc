#include "power/power.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <sstream>

#include "base/file_util.h"
#include "base/process.h"
#include "store/node_state.h"

namespace prov {

Status ValidatePowerConfig(const nlohmann::json& power) {
  if (power.is_null()) return Status::Ok();
  if (!power.is_object()) return Status::Invalid("power must be an object with a 'driver'");
  if (power.empty()) return Status::Ok();
  if (!power.contains("driver") || !power["driver"].is_string())
    return Status::Invalid("power needs a 'driver': wol, ipmi or command");
  const std::string driver = power["driver"];
  for (const auto& [key, value] : power.items()) {
    bool known = key == "driver" || (driver == "ipmi" && key == "address");
    if (!known)
      return Status::Invalid("power driver '" + driver + "' has no setting '" + key + "'");
    if (!value.is_string()) return Status::Invalid("power setting '" + key + "' must be a string");
  }
  if (driver == "ipmi") {
    if (!power.contains("address"))
      return Status::Invalid("the ipmi power driver needs 'address' (the BMC's address)");
    return Status::Ok();
  }
  if (driver != "wol" && driver != "command")
    return Status::Invalid("unknown power driver '" + driver + "' (wol, ipmi or command)");
  return Status::Ok();
}

Result<nlohmann::json> ParsePowerSpec(const std::string& spec) {
  nlohmann::json out = nlohmann::json::object();
  if (spec.empty() || spec == "none") return out;
  std::stringstream in(spec);
  std::string part;
  while (std::getline(in, part, ',')) {
    size_t eq = part.find('=');
    if (eq == std::string::npos) {
      if (out.empty()) {
        out["driver"] = part;  // "wol" alone
        continue;
      }
      return Status::Invalid("power setting '" + part + "' is not key=value");
    }
    out[part.substr(0, eq)] = part.substr(eq + 1);
  }
  Status s = ValidatePowerConfig(out);
  if (!s.ok()) return s;
  return out;
}

Result<std::string> MagicPacket(const std::string& mac) {
  auto norm = NormalizeMac(mac);
  if (!norm.ok()) return norm.status();
  std::string bytes;
  for (size_t i = 0; i < 17; i += 3)
    bytes += static_cast<char>(std::stoi(norm->substr(i, 2), nullptr, 16));
  std::string packet(6, '\xff');
  for (int i = 0; i < 16; ++i) packet += bytes;
  return packet;
}

namespace {

Result<std::string> WakeOnLan(const PowerSettings& s, const std::string& mac) {
  auto packet = MagicPacket(mac);
  if (!packet.ok()) return packet.status();
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::Internal("socket: " + std::string(strerror(errno)));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_BROADCAST, &one, sizeof one);
  if (!s.interface.empty() && setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, s.interface.c_str(),
                                         static_cast<socklen_t>(s.interface.size())) != 0) {
    close(fd);
    return Status::Internal("cannot send on " + s.interface + ": " + strerror(errno));
  }
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(9);
  to.sin_addr.s_addr = htonl(INADDR_BROADCAST);
  ssize_t n =
      sendto(fd, packet->data(), packet->size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to);
  int err = errno;
  close(fd);
  if (n != static_cast<ssize_t>(packet->size()))
    return Status::Error(Code::kUnavailable,
                         "Wake-on-LAN packet not sent: " + std::string(strerror(err)));
  return "sent a Wake-on-LAN packet on " +
         (s.interface.empty() ? std::string("the default route") : s.interface);
}

// Looks up "<address> <user> <password>" in a file that only its owner may read.
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

}  // namespace

Result<std::string> PowerAction(const PowerSettings& s, const nlohmann::json& power,
                                const std::string& action, const std::string& hostname,
                                const std::string& mac) {
  if (action != "on" && action != "off" && action != "cycle")
    return Status::Invalid("power action must be on, off or cycle, found '" + action + "'");
  Status valid = ValidatePowerConfig(power);
  if (!valid.ok()) return valid;
  if (power.is_null() || power.empty() || !power.contains("driver"))
    return Status::Invalid(hostname + " has no power driver; set one with: provisionctl node set " +
                           hostname + " --power wol (or driver=ipmi,address=BMC, or command)");
  const std::string driver = power["driver"];
  if (driver == "wol") {
    if (action != "on")
      return Status::Invalid("Wake-on-LAN can only power " + hostname + " on, not " + action);
    return WakeOnLan(s, mac);
  }
  ProcessSpec spec;
  if (driver == "ipmi") {
    std::string user, password;
    Status c = IpmiCredentials(s, power["address"], user, password);
    if (!c.ok()) return c;
    spec.argv = {s.ipmitool, "-I",      "lanplus", "-H",  power["address"], "-U", user,
                 "-E",       "chassis", "power",   action};
    spec.env = {"IPMI_PASSWORD=" + password};  // -E: read from the environment
  } else {
    if (s.command.empty())
      return Status::Invalid("the command power driver needs power.command in the config");
    spec.argv = {s.command, action, hostname, mac};
  }
  auto r = RunProcess(spec, s.timeout_ms);
  if (!r.ok()) return r.status();
  std::string out = r->output;
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  if (r->timed_out) return Status::Error(Code::kUnavailable, DescribeCommand(spec) + " timed out");
  if (r->exit_code != 0)
    return Status::Error(Code::kUnavailable, DescribeCommand(spec) + " failed (exit " +
                                                 std::to_string(r->exit_code) + "): " + out);
  return driver + ": " + (out.empty() ? "power " + action : out);
}

}  // namespace prov
