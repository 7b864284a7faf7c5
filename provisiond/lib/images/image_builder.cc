// An image build: the source step, then the finishing step, in one build
// directory of the image store that is removed unless the build is committed.
#include "images/image_builder.h"

#include <chrono>

#include "images/finish.h"
#include "images/source.h"

namespace prov {

Result<ImageVersion> BuildImage(const ImageManifest& m, ImageCatalog& catalog,
                                const ImageBuildOptions& opt, const BuildProgress& progress) {
  const auto started = std::chrono::steady_clock::now();
  // What goes into every image must be there before minutes of the source.
  Status s = CheckFinishingInputs(opt);
  if (!s.ok()) return s;
  auto source = CreateImageSource(m.source, opt);
  if (!source.ok()) return source.status();
  s = (*source)->Check(m, progress);
  if (!s.ok()) return s;
  // A version named before it is built may be there already.
  auto version = (*source)->Identity(m, progress);
  if (!version.ok()) return version.status();
  if (!version->empty()) {
    auto built = catalog.Resolve(m.name + "@" + *version);
    if (built.ok()) {
      s = catalog.MakeCurrent(*built);
      if (!s.ok()) return s;
      if (progress)
        progress("nothing to build (" + built->ref() +
                 " is built from the same source and manifest, and now current)");
      return built;
    }
  }
  auto build = BuildDir::Create(catalog, m.name);
  if (!build.ok()) return build.status();
  s = (*source)->Fetch(m, build->root(), progress);
  if (!s.ok()) return s;
  return FinishImage(*build, m, (*source)->Provenance(m), catalog, opt, progress, started,
                     *version);
}

}  // namespace prov
