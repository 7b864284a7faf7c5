// How provisionctl shows boot images: the image table, one version and how it
// was built, its verification, and the progress of a build.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace prov::ctl {

// GET /api/v1/images as a table: NAME VERSION CURRENT KERNEL INITRD ROOT
// CREATED, CURRENT "*" on the version a bare NAME stands for.
std::string RenderImageTable(const nlohmann::json& reply);

// GET /api/v1/images/<ref>: its ref, whether it is the version its name
// stands for, sizes, root, and how it was built (from its image.json) or that
// it was imported. `current` is the reply of GET /api/v1/images/<name> (the
// version the name stands for), or null when the name stands for none; the
// image's own "current" field wins when it has one.
std::string RenderImage(const nlohmann::json& image, const nlohmann::json& current);

// POST /api/v1/images/<ref>/verify: one line per check (kernel, initrd, root,
// nfs) as "ok", "FAIL" or "-" (not applicable), the kernel's root arguments,
// and a last line saying whether the image can be served.
std::string RenderImageVerify(const nlohmann::json& reply);

// Whether a verify reply says the image can be served: "ok", and a kernel and
// an initrd.
bool ImageVerified(const nlohmann::json& reply);

// An event of an image build: kind "image-build", "image-built" or
// "image-build-failed", detail "<image>: <text>".
struct ImageBuildEvent {
  std::string kind;
  std::string image;
  std::string text;  // the detail after "<image>: "
  int64_t time_ms = 0;
};

// The event as an image build's, or nullopt when it is of another kind.
std::optional<ImageBuildEvent> ParseImageBuildEvent(const nlohmann::json& event);

// A build's progress line: "[ 12.3s] mmdebstrap: I: ..." and a newline; the
// lines of a text of several lines after the first are indented under it.
std::string RenderBuildProgress(const std::string& text, int64_t elapsed_ms);

}  // namespace prov::ctl
