// Every power driver provisiond knows, by name. A new one (Intel AMT, another
// BMC protocol) is its own file, power/<name>.cc, implementing
// PowerDriver (power/driver.h), plus its line in registry.cc.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "power/driver.h"

namespace prov {

// The driver called `name`, or nullptr. Drivers live as long as the program.
const PowerDriver* FindPowerDriver(std::string_view name);

// The driver called `name`, or an error that names the known ones.
Result<const PowerDriver*> LookupPowerDriver(std::string_view name);

// The drivers' names in the registry's order.
std::vector<std::string_view> PowerDriverNames();

// The names for messages: "wol, ssh, webhook, ipmi, redfish or command".
std::string PowerDriverList();

}  // namespace prov
