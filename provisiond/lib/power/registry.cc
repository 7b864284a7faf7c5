// The table of power drivers. Each driver is defined in its own file and is
// listed here once: a driver nothing names would not be linked in from the
// static library, so there is no self-registration to go wrong.
#include "power/registry.h"

#include "base/strings.h"

namespace prov {

// One line per driver: its accessor, defined in power/<name>.cc.
const PowerDriver& WolDriver();      // wol.cc
const PowerDriver& SshDriver();      // ssh.cc
const PowerDriver& WebhookDriver();  // webhook.cc
const PowerDriver& IpmiDriver();     // ipmi.cc
const PowerDriver& RedfishDriver();  // redfish.cc
const PowerDriver& CommandDriver();  // command.cc

namespace {

// In the order messages list them (the simplest first).
const std::vector<const PowerDriver*>& Drivers() {
  static const std::vector<const PowerDriver*> drivers = {&WolDriver(),     &SshDriver(),
                                                          &WebhookDriver(), &IpmiDriver(),
                                                          &RedfishDriver(), &CommandDriver()};
  return drivers;
}

}  // namespace

const PowerDriver* FindPowerDriver(std::string_view name) {
  for (const PowerDriver* d : Drivers())
    if (d->name() == name) return d;
  return nullptr;
}

Result<const PowerDriver*> LookupPowerDriver(std::string_view name) {
  if (const PowerDriver* d = FindPowerDriver(name)) return d;
  return Status::Invalid("unknown power driver '" + std::string(name) + "' (" + PowerDriverList() +
                         ")");
}

std::vector<std::string_view> PowerDriverNames() {
  std::vector<std::string_view> out;
  for (const PowerDriver* d : Drivers()) out.push_back(d->name());
  return out;
}

std::string PowerDriverList() {
  std::vector<std::string> names;
  for (std::string_view name : PowerDriverNames()) names.emplace_back(name);
  return JoinWords(names, " or ");
}

}  // namespace prov
