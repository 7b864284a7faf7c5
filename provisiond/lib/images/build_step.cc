// Running a program as a step of an image build.
#include "images/build_step.h"

namespace prov {

Status RunBuildStep(const ProcessSpec& spec, int timeout_s, const BuildProgress& progress,
                    const std::string& what, const std::atomic<bool>* cancel) {
  auto r = RunProcess(
      spec, timeout_s * 1000,
      [&](const std::string& line) {
        if (progress) progress(what + ": " + line);
      },
      cancel);
  if (r.ok() && cancel && *cancel) return Status::Error(Code::kUnavailable, what + " was stopped");
  if (!r.ok()) return r.status();
  if (r->timed_out)
    return Status::Error(Code::kUnavailable,
                         what + " timed out after " + std::to_string(timeout_s) + " s");
  if (r->exit_code != 0) {
    // The last lines say why.
    std::string tail =
        r->output.size() > 1500 ? r->output.substr(r->output.size() - 1500) : r->output;
    return Status::Error(Code::kUnavailable,
                         what + " failed (exit " + std::to_string(r->exit_code) + "):\n" + tail);
  }
  return Status::Ok();
}

}  // namespace prov
