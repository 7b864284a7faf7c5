// ustar archives (base/tar.h ReadTar): what `provisiond restore` reads from a
// backup file. Every entry read has a plain relative path (never absolute,
// never "..") and a mode within 07777; what WriteTar accepts of them reads
// back the same.
#include <cstdint>
#include <string>

#include "base/tar.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (1 << 20)) return 0;
  std::string_view archive(reinterpret_cast<const char*>(data), size);
  auto entries = prov::ReadTar(archive);
  if (!entries.ok()) {
    FUZZ_CHECK(!entries.status().message().empty(), "an error without a message");
    return 0;
  }
  for (const auto& e : *entries) {
    FUZZ_CHECK(!e.path.empty() && e.path[0] != '/', "path '" + e.path + "'");
    FUZZ_CHECK(("/" + e.path + "/").find("/../") == std::string::npos, "path '" + e.path + "'");
    FUZZ_CHECK(e.mode >= 0 && e.mode <= 07777, "mode of " + e.path);
    FUZZ_CHECK(!e.directory || e.content.empty(), "a folder with content: " + e.path);
  }
  auto again = prov::WriteTar(*entries, 0);
  if (!again.ok()) return 0;  // WriteTar is stricter (no ".." anywhere, ustar's lengths)
  auto back = prov::ReadTar(*again);
  FUZZ_CHECK(back.ok(), "WriteTar's own archive does not read back: " + back.status().message());
  FUZZ_CHECK(back->size() == entries->size(), "entry count changed");
  for (size_t i = 0; i < back->size(); ++i) {
    const auto &a = (*entries)[i], &b = (*back)[i];
    FUZZ_CHECK(a.path == b.path && a.content == b.content && a.mode == b.mode &&
                   a.directory == b.directory,
               "entry " + a.path + " changed in a round trip");
  }
  return 0;
}
