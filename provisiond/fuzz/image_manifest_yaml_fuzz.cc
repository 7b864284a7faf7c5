// The image manifest loader (image_manifest.cc).
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "images/image_manifest.h"
#include "yaml_value.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;
  std::string text(reinterpret_cast<const char*>(data), size);
  std::string name = prov::fuzz::TopLevelValue(text, "name");
  auto manifest = prov::ParseImageManifest(text, "images/x/image.yaml", name);
  if (!manifest.ok()) FUZZ_CHECK(!manifest.status().message().empty(), text);
  return 0;
}
