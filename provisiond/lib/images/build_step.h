// What the steps of an image build share (the source step, images/source.h,
// and the finishing step, images/finish.h): the build's options, its
// progress lines, and running a program as a step.
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include "base/process.h"
#include "base/result.h"

namespace prov {

struct ImageBuildOptions {
  std::string mmdebstrap = "/usr/bin/mmdebstrap";
  std::string skopeo = "/usr/bin/skopeo";  // the oci source's
  std::string umoci = "/usr/bin/umoci";
  std::string initrd_builder;  // images/initramfs/build-initrd.sh
  std::string agent_dir;       // images/agent: provision-hello, provision-hello.service
  std::string tools_dir;       // provision-facts and provision-mount binaries
  // An image version's folder whose initrd.img may serve this build as it
  // is, when image.json's initrd_inputs equals this tree's (a derived image
  // whose bake left the kernel, its modules and firmware alone).
  std::string initrd_from;
  int timeout_s = 3600;
  int mirror_check_timeout_s = 15;
  // Where archive keys downloaded from a manifest's keyring_url are kept
  // (images/archive_key.h); empty: none is downloaded.
  std::string key_cache_dir;
  // A secret's value by its name (the secrets store): registry credentials.
  std::function<Result<std::string>(const std::string& name)> secret;
  const std::atomic<bool>* cancel = nullptr;  // stops the build when it becomes true
};

// Progress lines ("mmdebstrap: I: downloading packages...").
using BuildProgress = std::function<void(const std::string& line)>;

// Runs `spec` as the step `what`: each output line goes to `progress` as
// "<what>: <line>"; a timeout, a cancel or a non-zero exit is an error that
// ends with the program's last output (mmdebstrap ends with "E: ..." lines).
Status RunBuildStep(const ProcessSpec& spec, int timeout_s, const BuildProgress& progress,
                    const std::string& what, const std::atomic<bool>* cancel);

}  // namespace prov
