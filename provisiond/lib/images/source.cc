// The table of image sources: each is implemented in its own file and listed
// here once (explicitly: a source nothing names would not be linked in from
// the static library).
#include "images/source.h"

namespace prov {

// One line per source: its factory and its manifest parser, defined in
// images/<name>_source.cc.
std::unique_ptr<ImageSource> CreateMmdebstrapSource(const ImageBuildOptions& options);
void ParseMmdebstrapManifest(MapReader& top, ImageManifest& manifest);
std::unique_ptr<ImageSource> CreateOciSource(const ImageBuildOptions& options);
void ParseOciManifest(MapReader& top, ImageManifest& manifest);

namespace {

struct SourceEntry {
  std::string_view name;
  std::unique_ptr<ImageSource> (*create)(const ImageBuildOptions&);
  void (*parse)(MapReader& top, ImageManifest& manifest);
};

constexpr SourceEntry kSources[] = {
    {"mmdebstrap", CreateMmdebstrapSource, ParseMmdebstrapManifest},
    {"oci", CreateOciSource, ParseOciManifest},
};

// The entry called `name`, or the error that lists the known ones.
Result<const SourceEntry*> FindSource(std::string_view name) {
  for (const auto& entry : kSources)
    if (entry.name == name) return &entry;
  std::string known;
  for (const auto& entry : kSources) known += (known.empty() ? "" : ", ") + std::string(entry.name);
  return Status::Invalid("unknown image source '" + std::string(name) + "' (" + known + ")");
}

}  // namespace

Result<std::unique_ptr<ImageSource>> CreateImageSource(std::string_view name,
                                                       const ImageBuildOptions& options) {
  auto entry = FindSource(name);
  if (!entry.ok()) return entry.status();
  return (*entry)->create(options);
}

Status ParseSourcePart(std::string_view name, MapReader& top, ImageManifest& manifest) {
  auto entry = FindSource(name);
  if (!entry.ok()) return entry.status();
  (*entry)->parse(top, manifest);
  return Status::Ok();
}

std::vector<std::string_view> ImageSourceNames() {
  std::vector<std::string_view> out;
  for (const auto& entry : kSources) out.push_back(entry.name);
  return out;
}

}  // namespace prov
