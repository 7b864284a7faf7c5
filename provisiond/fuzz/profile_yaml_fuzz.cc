// The profile loader (profile.cc), with the shipped playbooks it names
// loaded and checked as provisiond does; a profile that loads also renders
// to JSON.
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "profiles/profile.h"
#include "yaml_value.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;
  std::string text(reinterpret_cast<const char*>(data), size);
  std::string version = prov::fuzz::TopLevelValue(text, "version");
  auto profile =
      prov::ParseProfile(text, "profiles/x/profile.yaml", version, PROVISION_DATADIR "/playbooks");
  if (profile.ok())
    (void)prov::ToJson(*profile).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  else
    FUZZ_CHECK(!profile.status().message().empty(), text);
  return 0;
}
