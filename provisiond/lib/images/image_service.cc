#include "images/image_service.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <map>

#include "base/json_fields.h"
#include "base/thread.h"

namespace prov {

ImageService::~ImageService() {
  stop_ = true;
  std::map<std::string, std::thread> running;
  std::vector<std::thread> finished;
  {
    std::lock_guard lock(mu_);
    running.swap(builds_);
    finished.swap(finished_);
  }
  for (auto& [name, t] : running)
    if (t.joinable()) t.join();
  for (auto& t : finished)
    if (t.joinable()) t.join();
}

std::vector<std::string> ImageService::Running() {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [name, t] : builds_) out.push_back(name);
  return out;
}

Status ImageService::StartBuild(const std::string& name, const std::string& who) {
  auto manifest = LoadImageManifest(images_dir_, name);
  if (!manifest.ok()) return manifest.status();
  const std::string started =
      "started (" + (manifest->settings ? manifest->settings->Summary() : manifest->source) + ")";
  return StartJob(
      name, started,
      [this, m = std::move(*manifest)](const ImageBuildOptions& opt,
                                       const BuildProgress& progress) {
        return BuildImage(m, catalog_, opt, progress);
      },
      who);
}

Status ImageService::StartJob(const std::string& name, const std::string& started, BuildJob job,
                              const std::string& who) {
  std::lock_guard lock(mu_);
  if (builds_.count(name)) return Status::Conflict("image " + name + " is being built already");
  for (auto& t : finished_)
    if (t.joinable()) t.join();
  finished_.clear();
  builds_[name] = std::thread([this, name, started, job = std::move(job), who] {
    bool ended = false;
    RunGuarded("image build", [&] {
      Run(name, started, job, who);
      ended = true;
    });
    if (!ended) {  // a filesystem call threw: the build failed, and says so
      EventRecord e{.kind = "image-build-failed",
                    .detail = name + ": internal error (see provisiond's log)",
                    .who = who};
      inventory_.store().RecordEvent(e);
    }
    Retire(name);
  });
  return Status::Ok();
}

void ImageService::Run(const std::string& name, const std::string& started, const BuildJob& job,
                       const std::string& who) {
  auto event = [&](const std::string& kind, const std::string& detail) {
    EventRecord e{.kind = kind, .detail = name + ": " + detail, .who = who};
    inventory_.store().RecordEvent(e);
  };
  event("image-build", started);
  // mmdebstrap and apt print hundreds of lines: keep its "I:"/"W:"/"E:"
  // lines and our own, and at most one other line every 2 seconds.
  auto last = std::chrono::steady_clock::now() - std::chrono::seconds(10);
  ImageBuildOptions opt = options_;
  opt.cancel = &stop_;
  auto result = job(opt, [&](const std::string& line) {
    bool notable = line.find(": I: ") != std::string::npos ||
                   line.find(": W: ") != std::string::npos ||
                   line.find(": E: ") != std::string::npos || line.find(": ") == std::string::npos;
    auto now = std::chrono::steady_clock::now();
    if (!notable && now - last < std::chrono::seconds(2)) return;
    last = now;
    event("image-build", line.substr(0, 500));
  });
  if (result.ok()) {
    event("image-built", result->ref());
    spdlog::info("image {} built", result->ref());
  } else {
    event("image-build-failed", result.status().message());
    spdlog::warn("image {} not built: {}", name, result.status().message());
  }
}

void ImageService::Retire(const std::string& name) {
  std::lock_guard lock(mu_);
  auto it = builds_.find(name);
  if (it != builds_.end()) {
    finished_.push_back(std::move(it->second));
    builds_.erase(it);
  }
}

std::map<std::string, std::string> ImageService::InUse() {
  std::map<std::string, std::string> used;  // ref -> who uses it
  std::vector<std::string> errors;
  for (const auto& [v, profile] : inventory_.ListProfiles(errors)) {
    // Its own image, or the derived image it bakes.
    auto image = catalog_.Resolve(inventory_.ChooseImage(profile).ref);
    if (image.ok()) used.emplace(image->ref(), "is used by profile " + v + "; apply another first");
  }
  for (const auto& n : inventory_.store().ListNodes()) {
    if (n.state == NodeState::kRetired) continue;
    // The version a node runs now (from its hello) may be older than the one
    // it is assigned: its root must not go away under it.
    auto facts = nlohmann::json::parse(n.facts, nullptr, false);
    const std::string running = JsonString(facts, "image");
    if (!running.empty())
      used.emplace(running, "is the root of node " + n.name() + ", which runs it now");
    if (n.image_version.empty()) continue;
    auto image = catalog_.Resolve(n.image_version);
    if (image.ok()) used.emplace(image->ref(), "is the image of node " + n.name());
  }
  return used;
}

Status ImageService::Remove(const std::string& ref, const std::string& who) {
  auto version = catalog_.Resolve(ref);
  if (!version.ok()) return version.status();
  const auto used = InUse();
  if (auto it = used.find(version->ref()); it != used.end())
    return Status::Conflict("image " + version->ref() + " " + it->second);
  Status s = catalog_.Remove(*version);
  if (!s.ok()) return s;
  EventRecord e{.kind = "image", .detail = "removed " + version->ref(), .who = who};
  return inventory_.store().AppendEvent(e);
}

Result<std::vector<std::string>> ImageService::PruneDerived(const std::string& who) {
  // Each derived name's versions, newest first.
  std::map<std::string, std::vector<ImageVersion>> derived;
  for (auto& v : catalog_.List())
    if (v.name.size() > 6 && v.name.ends_with(".baked")) derived[v.name].push_back(std::move(v));
  const auto used = InUse();
  std::vector<std::string> removed;
  for (auto& [name, versions] : derived) {
    std::sort(versions.begin(), versions.end(), [](const ImageVersion& a, const ImageVersion& b) {
      return a.created_ms != b.created_ms ? a.created_ms > b.created_ms : a.version > b.version;
    });
    int64_t kept = 0;
    for (const auto& v : versions) {
      if (used.count(v.ref())) continue;  // in use: kept, and not counted
      if (kept < keep_derived_) {
        ++kept;
        continue;
      }
      Status s = catalog_.Remove(v);
      if (!s.ok()) return s;
      EventRecord e{
          .kind = "image", .detail = "removed " + v.ref() + " (unused derived image)", .who = who};
      inventory_.store().RecordEvent(e);
      removed.push_back(v.ref());
    }
  }
  return removed;
}

}  // namespace prov
