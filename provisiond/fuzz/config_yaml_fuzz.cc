// The config loader (config.cc): any text is a config or an error with
// file:line:col, never a crash.
#include <cstdint>
#include <string>

#include "config.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;
  std::string text(reinterpret_cast<const char*>(data), size);
  auto config = prov::ParseConfig(text, "/etc/provisiond/provisiond.yaml");
  if (!config.ok()) FUZZ_CHECK(!config.status().message().empty(), text);
  return 0;
}
