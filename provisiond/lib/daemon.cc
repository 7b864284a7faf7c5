#include "daemon.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <filesystem>

#include "api.h"
#include "file_util.h"
#include "http_server.h"
#include "inventory.h"
#include "profile.h"
#include "store.h"

namespace prov {

std::vector<std::string> CheckAll(const Config& config) {
  std::vector<std::string> errors;
  auto profiles = LoadAllProfiles(config.profiles_dir, config.playbooks_dir, errors);
  if (profiles.empty() && errors.empty())
    errors.push_back(config.profiles_dir + ": no profiles (<version>/profile.yaml) found");
  if (std::filesystem::exists(config.effective_tokens_file())) {
    auto tokens = TokenSet::Load(config.effective_tokens_file());
    if (!tokens.ok()) errors.push_back(tokens.status().message());
  }
  return errors;
}

struct Daemon::Impl {
  Config config;
  std::unique_ptr<Store> store;
  std::unique_ptr<Inventory> inventory;
  std::unique_ptr<Router> router;
  std::unique_ptr<HttpServer> server;
  std::string url;
};

Daemon::Daemon(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Daemon::~Daemon() {
  // Stop serving before the objects handlers use go away.
  impl_->server.reset();
  spdlog::info("provisiond stopped");
}

const std::string& Daemon::url() const {
  return impl_->url;
}

// The default tokens file is created with one random token on first start, so
// a fresh install can be used at once and no token is ever a default.
static Status EnsureTokensFile(const Config& config) {
  const std::string path = config.effective_tokens_file();
  if (!config.tokens_file.empty() || std::filesystem::exists(path)) return Status::Ok();
  Status s = WriteFileAtomic(path,
                             "# provisiond API tokens: one per line, optionally followed by a "
                             "name.\n" +
                                 RandomHex(24) + " admin\n",
                             0600);
  if (s.ok()) spdlog::info("created {} with a new admin token (mode 0600)", path);
  return s;
}

Status Daemon::ReloadTokens() {
  auto tokens = TokenSet::Load(impl_->config.effective_tokens_file());
  if (!tokens.ok()) return tokens.status();
  spdlog::info("loaded {} API token(s) from {}", tokens->size(),
               impl_->config.effective_tokens_file());
  impl_->router->set_tokens(std::make_shared<const TokenSet>(std::move(*tokens)));
  return Status::Ok();
}

Result<std::unique_ptr<Daemon>> Daemon::Start(const Config& config) {
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  Status s = MakeDirs(config.data_dir);
  if (!s.ok()) return s;
  s = EnsureTokensFile(config);
  if (!s.ok()) return s;

  std::vector<std::string> errors;
  auto profiles = LoadAllProfiles(config.profiles_dir, config.playbooks_dir, errors);
  for (const auto& e : errors) spdlog::warn("profile not loaded: {}", e);
  spdlog::info("{} profile(s) in {}", profiles.size(), config.profiles_dir);

  auto store = Store::Open(config.database_path());
  if (!store.ok()) return store.status();
  impl->store = std::move(*store);
  impl->inventory =
      std::make_unique<Inventory>(*impl->store, config.profiles_dir, config.playbooks_dir);
  impl->router = std::make_unique<Router>(nullptr);
  AddApiRoutes(*impl->router, *impl->inventory);

  std::unique_ptr<Daemon> daemon(new Daemon(std::move(impl)));
  s = daemon->ReloadTokens();
  if (!s.ok()) return s;

  HttpServerOptions http;
  http.host = config.listen_host;
  http.port = config.listen_port;
  http.max_body_bytes = config.max_body_bytes;
  auto server = HttpServer::Start(http, *daemon->impl_->router);
  if (!server.ok()) return server.status();
  daemon->impl_->server = std::move(*server);
  std::string host = config.listen_host.find(':') != std::string::npos
                         ? "[" + config.listen_host + "]"
                         : config.listen_host;
  daemon->impl_->url = "http://" + host + ":" + std::to_string(daemon->impl_->server->port());
  // Tools and tests that start provisiond on port 0 read the real URL here.
  s = WriteFileAtomic(config.data_dir + "/provisiond.url", daemon->impl_->url + "\n");
  if (!s.ok()) return s;
  spdlog::info("provisiond {} listening on {} (data in {})", PROVISION_VERSION, daemon->impl_->url,
               config.data_dir);
  return daemon;
}

}  // namespace prov
