// Hostlists (hostlist.cc): whatever expands also compresses, and the
// compressed form expands back to the same names. The name limit is
// kFuzzMaxNames, not the daemon's 100,000: the same checks, but an input at
// the limit costs a millisecond rather than a tenth of a second (the target
// ran at ~130 inputs/s with the daemon's limit).
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "base/hostlist.h"
#include "fuzz_util.h"

namespace {

constexpr size_t kFuzzMaxNames = 2000;

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out.substr(0, 2000);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;
  std::string text(reinterpret_cast<const char*>(data), size);
  (void)prov::IsHostlist(text);
  auto names = prov::ExpandHostlist(text, kFuzzMaxNames);
  if (!names.ok()) {
    FUZZ_CHECK(!names.status().message().empty(), text);
    return 0;
  }
  FUZZ_CHECK(names->size() <= kFuzzMaxNames, text);
  std::vector<std::string> sorted = *names;
  std::sort(sorted.begin(), sorted.end());
  FUZZ_CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end(),
             "duplicates in the expansion of '" + text + "'");
  for (const auto& n : sorted) FUZZ_CHECK(!n.empty(), "an empty name in '" + text + "'");

  std::string folded = prov::CompressHostlist(*names);
  auto again = prov::ExpandHostlist(folded, kFuzzMaxNames);
  FUZZ_CHECK(again.ok(),
             "'" + text + "' -> '" + folded + "' does not expand: " + again.status().message());
  std::vector<std::string> back = *again;
  std::sort(back.begin(), back.end());
  FUZZ_CHECK(back == sorted, "'" + text + "' -> '" + folded + "' expands to " + Join(back) +
                                 " instead of " + Join(sorted));
  return 0;
}
