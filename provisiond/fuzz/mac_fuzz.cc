// MAC addresses (NormalizeMac), hostnames and node states (node_state.cc):
// a normalized MAC is aa:bb:cc:dd:ee:ff in lowercase and normalizes to
// itself.
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "store/node_state.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 1024) return 0;
  std::string text(reinterpret_cast<const char*>(data), size);
  auto mac = prov::NormalizeMac(text);
  if (mac.ok()) {
    const std::string& m = *mac;
    FUZZ_CHECK(m.size() == 17, text + " -> " + m);
    for (size_t i = 0; i < m.size(); ++i) {
      if (i % 3 == 2)
        FUZZ_CHECK(m[i] == ':', text + " -> " + m);
      else
        FUZZ_CHECK((m[i] >= '0' && m[i] <= '9') || (m[i] >= 'a' && m[i] <= 'f'), text + " -> " + m);
    }
    auto again = prov::NormalizeMac(m);
    FUZZ_CHECK(again.ok() && *again == m, text + " -> " + m);
  } else {
    FUZZ_CHECK(!mac.status().message().empty(), text);
  }
  if (prov::ValidateHostname(text).ok()) {
    FUZZ_CHECK(!text.empty() && text.size() <= 253, text);
    FUZZ_CHECK(text.find_first_of(" ,/\n\r\t\"'[]*?") == std::string::npos, text);
  }
  if (auto state = prov::ParseNodeState(text)) FUZZ_CHECK(prov::ToString(*state) == text, text);
  return 0;
}
