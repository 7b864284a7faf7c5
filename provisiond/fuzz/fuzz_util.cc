#include "fuzz_util.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "base/file_util.h"

namespace prov::fuzz {
namespace {

namespace fs = std::filesystem;

// One image catalog per process (a temp dir removed at exit) with image
// "lab" in it; the routes that change it are left out, so inputs cannot
// affect each other through it.
ImageCatalog& Images() {
  static fs::path dir = fs::temp_directory_path() / ("provision-fuzz-" + std::to_string(getpid()));
  static std::unique_ptr<ImageCatalog> images = [] {
    fs::remove_all(dir);
    fs::create_directories(dir);
    // The fixture the targets read; without it no input means anything.
    if (!WriteFileAtomic((dir / "kernel").string(), "KERNEL-BYTES-0123456789").ok() ||
        !WriteFileAtomic((dir / "initrd").string(), "INITRD").ok())
      std::abort();
    auto c = std::make_unique<ImageCatalog>((dir / "store").string());
    auto v = c->Import("lab", (dir / "kernel").string(), (dir / "initrd").string());
    if (!v.ok()) {
      std::fprintf(stderr, "fuzz: image import: %s\n", v.status().message().c_str());
      std::abort();
    }
    std::atexit([] { fs::remove_all(dir); });
    return c;
  }();
  return *images;
}

bool Excluded(const Router::Route& r) {
  // Routes whose handlers leave the process or change shared files.
  const std::string p = r.pattern;
  return p.ends_with("/power") || p.ends_with("/build") || p.ends_with("/import") ||
         p.ends_with("/verify") || p.ends_with("/preflight") ||
         (r.method == "DELETE" && p.starts_with("/api/v1/images")) || p.ends_with("/configure") ||
         p == "/api/v1/cmd" || p == "/api/v1/playbook-runs";
}

[[noreturn]] void HarnessFailed(const std::string& what, const Status& status) {
  std::fprintf(stderr, "fuzz: %s: %s\n", what.c_str(), status.message().c_str());
  std::abort();
}

}  // namespace

ApiHarness& ApiHarness::Fresh() {
  static ApiHarness harness;
  harness.Reset();
  return harness;
}

ApiHarness::ApiHarness() {
  spdlog::set_level(spdlog::level::off);
  ImageCatalog& images = Images();
  store_ = std::move(*Store::Open(":memory:"));
  inventory_ = std::make_unique<Inventory>(*store_, PROVISION_SOURCE_DIR "/profiles",
                                           PROVISION_SOURCE_DIR "/playbooks", snapshots_.path());
  auto n0 = inventory_->Enroll({"n0", kNodeMac, "10.99.0.10", "lab"}, "fuzz");
  if (!n0.ok()) HarnessFailed("enroll", n0.status());
  node_token_ = n0->token;
  auto pristine = Store::Open(":memory:");
  if (!pristine.ok()) HarnessFailed("store", pristine.status());
  pristine_ = std::move(*pristine);
  Status s = pristine_->CopyFrom(*store_);
  if (!s.ok()) HarnessFailed("store copy", s);

  phonehome_ = std::make_unique<PhoneHome>(*inventory_, "ssh-ed25519 AAAAcontrol provisiond@fuzz",
                                           [] { return std::string("http://10.99.0.1:8080"); });
  boot_settings_.boot_url = "http://10.99.0.1:8080";
  boot_settings_.pxe_dir = PROVISION_SOURCE_DIR "/pxe";
  boot_settings_.profile_kernel_args = [](const std::string& v) {
    return v == "lab" ? std::vector<std::string>{"console=ttyS0"} : std::vector<std::string>{};
  };
  PhoneHome* home = phonehome_.get();
  boot_settings_.render_overlay = [home](const std::string& mac, const HttpRequest& request) {
    return home->Overlay(mac, NodeCaller::From(request));
  };
  image_service_ = std::make_unique<ImageService>(
      *inventory_, images, PROVISION_SOURCE_DIR "/images", ImageBuildOptions{});

  router_ = std::make_unique<Router>(std::make_shared<const TokenSet>(
      *TokenSet::Parse(std::string(kAdminToken) + " fuzz\n", "tokens")));
  context_.inventory = inventory_.get();
  context_.images = &images;
  context_.image_service = image_service_.get();
  context_.phonehome = phonehome_.get();
  context_.route_metrics = &router_->metrics();
  context_.web_dir = PROVISION_SOURCE_DIR "/web";
  context_.own_address = "10.99.0.1";
  context_.max_event_wait_ms = 0;  // GET /events?wait= answers at once
  // The daemon's table on a staging router, then the routes that stay in the
  // process. Their handlers hold the context, whose pointers Reset() renews.
  Router all(nullptr);
  AddRoutes(all, context_);
  for (const auto& r : all.routes())
    if (!Excluded(r)) router_->Add(r.method, r.pattern, r.access, r.handler);
}

ApiHarness::~ApiHarness() = default;

void ApiHarness::Reset() {
  // Reads leave everything as it was; only a write needs the restore (and
  // the restore makes SQLite re-read the schema and re-prepare statements).
  if (store_->ChangeCount() == clean_changes_) return;
  Status s = store_->CopyFrom(*pristine_);
  if (!s.ok()) HarnessFailed("store restore", s);
  inventory_->ForgetSnapshotVersions();
  context_.boot = nullptr;
  boot_.reset();
  auto b = BootService::Create(boot_settings_, *store_, Images());
  if (!b.ok()) HarnessFailed("boot service", b.status());
  boot_ = std::move(*b);
  context_.boot = boot_.get();
  clean_changes_ = store_->ChangeCount();
}

HttpResponse ApiHarness::Handle(HttpRequest& request) {
  return router_->Handle(request);
}

void CheckResponse(const HttpRequest& request, const HttpResponse& response) {
  const std::string what = request.method + " " + request.path + " -> " +
                           std::to_string(response.status) + " " + response.body.substr(0, 500);
  FUZZ_CHECK(response.status >= 100 && response.status <= 599, what);
  // The router turns a handler's exception into this 500: a bug.
  FUZZ_CHECK(
      !(response.status == 500 && response.body.find("internal error: ") != std::string::npos),
      what);
  if (response.file_path.empty() && response.content_type == "application/json")
    FUZZ_CHECK(nlohmann::json::accept(response.body), what);
}

}  // namespace prov::fuzz
