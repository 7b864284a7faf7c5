// The table of image sources: each is implemented in its own file and listed
// here once (explicitly: a source nothing names would not be linked in from
// the static library).
#include "images/source.h"

namespace prov {

// One line per source: its factory and its manifest parser, defined in
// images/<name>_source.cc.
std::unique_ptr<ImageSource> CreateMmdebstrapSource(const ImageBuildOptions& options);
void ParseMmdebstrapManifest(MapReader& top, ImageManifest& manifest);

namespace {

struct SourceEntry {
  std::string_view name;
  std::unique_ptr<ImageSource> (*create)(const ImageBuildOptions&);
  void (*parse)(MapReader& top, ImageManifest& manifest);
};

constexpr SourceEntry kSources[] = {
    {"mmdebstrap", CreateMmdebstrapSource, ParseMmdebstrapManifest},
};

}  // namespace

Result<std::unique_ptr<ImageSource>> CreateImageSource(std::string_view name,
                                                       const ImageBuildOptions& options) {
  for (const auto& entry : kSources)
    if (entry.name == name) return entry.create(options);
  std::string known;
  for (std::string_view n : ImageSourceNames())
    known += (known.empty() ? "" : ", ") + std::string(n);
  return Status::Invalid("unknown image source '" + std::string(name) + "' (" + known + ")");
}

bool ParseSourcePart(std::string_view name, MapReader& top, ImageManifest& manifest) {
  for (const auto& entry : kSources)
    if (entry.name == name) {
      entry.parse(top, manifest);
      return true;
    }
  return false;
}

std::vector<std::string_view> ImageSourceNames() {
  std::vector<std::string_view> out;
  for (const auto& entry : kSources) out.push_back(entry.name);
  return out;
}

}  // namespace prov
