// The image stage. A profile's `bake` playbooks run once, on the control
// node, inside a copy of its base image's root tree (a chroot: ChrootRemote);
// the result, finished like any image (kernel, initrd, agent), is the derived
// image its nodes boot. Its name is "<base name>.baked" and its version the
// hash of everything that made it: the base version, each bake playbook with
// every file it reaches, its vars and runner, and the stage's own recipe. So
// the version is known before it is built: a profile whose baked part did not
// change reuses it (another profile with the same base and bake list too),
// and a change to a node-stage playbook never rebuilds it.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "images/build_step.h"
#include "images/image_catalog.h"
#include "profiles/profile.h"

namespace prov {

inline constexpr std::string_view kDerivedImageSuffix = ".baked";

struct DerivedImage {
  std::string name;       // "lab.baked"
  std::string version;    // 16 hex digits of the inputs' SHA-256
  std::string base;       // the base version it starts from, "lab@1a2b..."
  nlohmann::json inputs;  // what the version covers (image.json keeps it)
  bool built = false;
  // Unless built: what differs from the derived image built last from the
  // same base name, in words ("playbooks/slurm.yml changed"); "no derived
  // image of lab yet" when there is none.
  std::vector<std::string> changes;

  std::string ref() const { return name + "@" + version; }
};

// The derived image `profile`'s nodes boot, and whether it is built. The
// profile must have bake playbooks; NotFound when its base is not built.
Result<DerivedImage> PlanDerivedImage(const Profile& profile, ImageCatalog& catalog);

// Builds it unless it is built: copies the base's tree, runs the bake
// playbooks in it in order (no daemon starts: policy-rc.d says so and
// systemctl ignores start in a chroot; /proc, /sys, /dev, /tmp and /run are
// mounted only in the runs' own mount namespaces), removes what the build
// leaves (policy-rc.d, apt's downloaded packages, the build host's identity),
// then finishes and commits it. `profile` must be an applied snapshot (its
// playbooks are read from there) or a profile loaded from disk. A failed task
// fails the build with the playbook, the task, where and why. Playbooks on
// ansible-playbook run with `ansible`.
Result<ImageVersion> BuildDerivedImage(const Profile& profile, ImageCatalog& catalog,
                                       const ImageBuildOptions& options, const AnsibleTool& ansible,
                                       const BuildProgress& progress);

// What differs between two derived images' inputs, in words.
std::vector<std::string> DiffDerivedInputs(const nlohmann::json& from, const nlohmann::json& to);

}  // namespace prov
