// The table of boot loaders: each is implemented in its own file and listed
// here once (explicitly: a loader nothing names would not be linked in from
// the static library).
#include "boot/loader.h"

namespace prov {

// One line per loader: its factory, defined in boot/<name>.cc.
Result<std::unique_ptr<BootLoader>> CreateIpxeLoader(const LoaderSettings& settings);  // ipxe.cc

namespace {

struct LoaderEntry {
  std::string_view name;
  Result<std::unique_ptr<BootLoader>> (*create)(const LoaderSettings&);
};

constexpr LoaderEntry kLoaders[] = {
    {"ipxe", CreateIpxeLoader},
};

}  // namespace

Result<std::unique_ptr<BootLoader>> CreateBootLoader(std::string_view name,
                                                     const LoaderSettings& settings) {
  for (const auto& entry : kLoaders)
    if (entry.name == name) return entry.create(settings);
  std::string known;
  for (std::string_view n : BootLoaderNames())
    known += (known.empty() ? "" : ", ") + std::string(n);
  return Status::Invalid("unknown boot loader '" + std::string(name) + "' (" + known + ")");
}

std::vector<std::string_view> BootLoaderNames() {
  std::vector<std::string_view> out;
  for (const auto& entry : kLoaders) out.push_back(entry.name);
  return out;
}

}  // namespace prov
