#include "daemon.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "api/context.h"
#include "api/nodes.h"
#include "api/routes.h"
#include "bake/derived_image.h"
#include "base/file_util.h"
#include "base/netinfo.h"
#include "base/process.h"
#include "boot/boot.h"
#include "configure/configurator.h"
#include "configure/secrets.h"
#include "configure/ssh_keys.h"
#include "configure/work_queue.h"
#include "console/console_listener.h"
#include "dhcp/dnsmasq.h"
#include "dhcp/preflight.h"
#include "ha/cluster_address.h"
#include "ha/control_agent.h"
#include "ha/lease.h"
#include "ha/nfs_clients.h"
#include "hello/phonehome.h"
#include "http/http_server.h"
#include "http/tls.h"
#include "images/image_catalog.h"
#include "images/image_service.h"
#include "images/nfs.h"
#include "playbook/runner_choice.h"
#include "power/power.h"
#include "profiles/inventory.h"
#include "profiles/profile.h"
#include "settings.h"
#include "store/backup.h"
#include "store/migrations.h"
#include "store/store.h"
#include "watch/heartbeat.h"

namespace prov {

std::vector<std::string> CheckAll(const Config& config) {
  const AnsibleTool ansible = AnsibleToolOf(config);
  std::vector<std::string> errors;
  auto profiles =
      LoadAllProfiles(config.profiles_dir, config.playbooks_dir, errors, ansible.roles_path);
  if (profiles.empty() && errors.empty())
    errors.push_back(config.profiles_dir + ": no profiles (<version>/profile.yaml) found");
  for (auto& [version, profile] : profiles)
    if (Status s = CheckProfileWithAnsible(profile, ansible); !s.ok())
      errors.push_back(s.message());
  if (std::filesystem::exists(config.effective_tokens_file())) {
    auto tokens = TokenSet::Load(config.effective_tokens_file());
    if (!tokens.ok()) errors.push_back(tokens.status().message());
  }
  return errors;
}

namespace {

// A command's outcome on one node as a result: its output, or why not.
Result<std::string> CommandOutcome(const CommandResult& r) {
  if (r.status == CommandStatus::kOk) return r.out;
  return Status::Error(Code::kUnavailable, !r.error.empty()
                                               ? r.error
                                               : "exit code " + std::to_string(r.exit_code) + ": " +
                                                     r.err.substr(0, 200));
}

}  // namespace

struct Daemon::Impl {
  // <data_dir>/provisiond.lock, held for the daemon's life (released last):
  // one provisiond, or one restore, per data folder.
  UniqueFd data_lock;
  Config config;
  std::unique_ptr<ControlLease> lease;  // with PostgreSQL: held while active
  // With PostgreSQL: this control node's row of control_nodes, kept by a
  // thread; a standby's copies of the active's images (ha/control_agent.h).
  std::unique_ptr<ImageCatalog> agent_images;
  std::unique_ptr<ControlAgent> agent;
  // control.address (ha/cluster_address.h), held while active: given up
  // when this goes, whether the start failed or the daemon stopped.
  std::optional<ClusterAddress> cluster_address;
  bool holds_address = false;
  ~Impl() {
    if (!holds_address) return;
    if (Status s = ReleaseClusterAddress(*cluster_address); !s.ok())
      spdlog::warn("{}", s.message());
  }
  std::unique_ptr<Store> store;
  // The network console: its lines (null when it is off) and its listener,
  // which the boot service tells the stages it records (set once it runs).
  std::unique_ptr<ConsoleLog> console_log;
  std::unique_ptr<NodeByAddress> console_nodes;
  std::unique_ptr<ConsoleListener> console;
  std::atomic<ConsoleListener*> console_ready{nullptr};
  std::unique_ptr<Inventory> inventory;
  std::unique_ptr<ImageCatalog> images;
  std::unique_ptr<BootService> boot;
  std::unique_ptr<PhoneHome> phonehome;
  std::unique_ptr<ImageService> image_service;
  std::unique_ptr<ApiContext> api;  // what the routes' handlers use
  std::unique_ptr<Router> router;
  std::unique_ptr<HttpServer> server;
  std::unique_ptr<HttpServer> api_server;  // HTTPS; null when api_listen is off
  std::unique_ptr<DnsmasqService> dnsmasq;
  // Nodes' TFTP boot configs, written off dnsmasq's thread (a render may
  // wait seconds for an image's NFS check).
  std::unique_ptr<WorkQueue> tftp_configs;
  std::unique_ptr<NfsService> nfs;
  std::unique_ptr<SecretStore> secrets;
  std::unique_ptr<Configurator> configurator;
  PowerSettings power;
  std::unique_ptr<Heartbeat> heartbeat;  // null when configure.heartbeat is 0
  std::optional<InterfaceAddress> iface;
  std::string url;
  // What a takeover of the lease does once its boot network serves: tell the
  // old active's NFS clients that their connections ended, then probe for
  // other DHCP servers (left out of RunStartPreflight). Joined first when
  // this goes.
  bool takeover = false;
  std::jthread after_takeover;
};

Daemon::Daemon(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Daemon::~Daemon() {
  // Stop dnsmasq and the server before the objects their threads use go away.
  // Long-polls (GET /events?wait=) are woken first: the server waits for
  // every request it is handling before it stops.
  impl_->store->WakeWaiters();
  if (impl_->console_log) impl_->console_log->WakeWaiters();
  impl_->dnsmasq.reset();
  impl_->tftp_configs.reset();  // after dnsmasq, which queues; before nfs, which it uses
  impl_->api_server.reset();
  impl_->server.reset();
  impl_->heartbeat.reset();     // before the configurator it reads nodes through
  impl_->configurator.reset();  // interrupts runs, records them as interrupted
  impl_->nfs.reset();
  impl_->image_service.reset();  // stops a running build
  impl_->console_ready = nullptr;
  impl_->console.reset();  // writes what it received
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
  Status s = WriteFileAtomic(path, NewTokensFile(""), 0600);
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

// The HTTPS listener for the API and the web page (api_listen), with the
// operator's certificate or one made self-signed at first start; its URL goes
// to <data_dir>/provisiond.api-url, its fingerprint to the log and /status.
Status Daemon::StartApiListener(const Config& config, Impl& d) {
  HttpServerOptions https;
  https.connection_timeout_s = static_cast<unsigned>(config.listen_idle_timeout_s);
  if (!ApiListenAddress(config, https.host, https.port)) return Status::Ok();
  std::vector<std::string> names = {"localhost"};
  if (const std::string host = HostName(); !host.empty()) names.push_back(host);
  for (const std::string& a : {https.host, config.listen_host, d.iface ? d.iface->address : ""})
    if (!a.empty() && a != "0.0.0.0" && a != "::" &&
        std::find(names.begin(), names.end(), a) == names.end())
      names.push_back(a);
  // Only the default paths are made; an operator's missing certificate is an error.
  auto tls = EnsureTlsMaterial(config.effective_tls_cert(), config.effective_tls_key(),
                               config.tls_cert.empty() && config.tls_key.empty(), names);
  if (!tls.ok()) return tls.status();
  https.tls_cert_pem = tls->cert_pem;
  https.tls_key_pem = tls->key_pem;
  https.max_body_bytes = config.max_body_bytes;
  auto server = HttpServer::Start(https, *d.router);
  if (!server.ok()) return server.status();
  d.api_server = std::move(*server);
  std::string host =
      https.host.find(':') != std::string::npos ? "[" + https.host + "]" : https.host;
  d.api->tls_url = "https://" + host + ":" + std::to_string(d.api_server->port());
  d.api->tls_fingerprint = tls->fingerprint;
  d.api->tls_pin = tls->key_pin;
  Status s = WriteFileAtomic(config.data_dir + "/provisiond.api-url", d.api->tls_url + "\n");
  if (!s.ok()) return s;
  spdlog::info("API and web page on {} (certificate {}, SHA-256 fingerprint {})", d.api->tls_url,
               config.effective_tls_cert(), tls->fingerprint);
  return Status::Ok();
}

// The network console (console.listen): on the cluster interface's address
// unless told otherwise; nodes' kernels are told where (provision.console=).
Status Daemon::StartConsole(const Config& config, Impl& d) {
  std::optional<ConsoleListenerSettings> where = ConsoleListenerOf(config, d.iface);
  if (!where) return Status::Ok();
  auto log =
      ConsoleLog::Open(sql::IsPostgresUri(config.database_path()) ? config.database_path()
                                                                  : config.data_dir + "/console.db",
                       ConsoleRetention{config.console_keep_lines, config.console_keep_boots});
  if (!log.ok()) return log.status();
  d.console_log = std::move(*log);
  d.console_nodes = std::make_unique<NodeByAddress>(*d.store);
  auto listener = ConsoleListener::Start(
      *where, *d.console_log,
      [nodes = d.console_nodes.get()](const std::string& ip) { return nodes->Find(ip); });
  if (!listener.ok()) return listener.status();
  d.console = std::move(*listener);
  d.api->console_log = d.console_log.get();
  d.api->console = d.console.get();
  d.boot->set_console_target(d.console->target());
  d.console_ready = d.console.get();
  return Status::Ok();
}

// Phase 1: the data directory, locked, with its tokens file and import folder.
Status Daemon::OpenDataDir(const Config& config, Impl& d) {
  // Others may pass through it (dnsmasq, which drops to nobody, reads
  // netboot/ below it) but not list it; its secrets (the database, tokens,
  // ssh/) are their owner's alone.
  Status s = MakeDirs(config.data_dir, 0711);
  if (!s.ok()) return s;
  struct stat st {};
  if (stat(config.data_dir.c_str(), &st) == 0 && (st.st_mode & 066) != 0) {
    spdlog::warn("{} was readable by others (mode {:o}): now 0711", config.data_dir,
                 st.st_mode & 0777);
    chmod(config.data_dir.c_str(), 0711);
  }
  // A start right after a crash (kill -9, then started again) may find the
  // old process's last thread still closing its files: waits for it, briefly.
  auto lock = LockDataDir(config.data_dir, 15000);
  if (!lock.ok()) return lock.status();
  d.data_lock = std::move(*lock);
  s = EnsureTokensFile(config);
  if (!s.ok()) return s;
  if (config.import_dir.empty()) return MakeDirs(config.effective_import_dir(), 0700);
  return Status::Ok();
}

// Phase 2: the profiles (parsed only: Ansible's verdict on their playbooks
// comes when one is planned, applied or baked; provisiond --check gives all),
// the store and the inventory over them.
Status Daemon::OpenInventory(const Config& config, Impl& d) {
  const AnsibleTool ansible = AnsibleToolOf(config);
  std::vector<std::string> errors;
  auto profiles =
      LoadAllProfiles(config.profiles_dir, config.playbooks_dir, errors, ansible.roles_path);
  for (const auto& e : errors) spdlog::warn("profile not loaded: {}", e);
  spdlog::info("{} profile(s) in {}", profiles.size(), config.profiles_dir);
  auto store = Store::Open(config.database_path());
  if (!store.ok()) return store.status();
  d.store = std::move(*store);
  d.store->SetRetention(config.keep_events, config.keep_runs);
  d.inventory = std::make_unique<Inventory>(*d.store, config.profiles_dir, config.playbooks_dir,
                                            config.data_dir + "/snapshots", ansible);
  d.images = std::make_unique<ImageCatalog>(config.effective_image_store());
  return Status::Ok();
}

// Phase 3: the node's path (boot service, phone-home, configurator), the
// cluster interface once preflight passed, images and the API's context.
namespace {

// A secret's value by its name, for a part that names one (`who`, in the
// error when it is not set).
std::function<Result<std::string>(const std::string&)> SecretLookup(SecretStore* secrets,
                                                                    std::string who) {
  return [secrets, who = std::move(who)](const std::string& name) -> Result<std::string> {
    auto value = secrets->Get(SecretDecl{.name = name, .generate = "none"}, name);
    if (value.status().code() == Code::kNotFound)
      return Status::NotFound("secret '" + name + "' (named by " + who +
                              ") is not set: provisionctl secret set " + name +
                              " --from-file FILE");
    return value;
  };
}

// What this control node must have alike with the others, as digests
// (ha/control_nodes.h): its control key, profiles, playbooks and secrets.
std::function<std::map<std::string, std::string>()> AlikeOf(const Config& config) {
  return [config] {
    return AlikeDigests(config.data_dir + "/ssh/id_ed25519.pub", config.profiles_dir,
                        config.playbooks_dir, config.data_dir + "/secrets");
  };
}

}  // namespace

Status Daemon::MakeServices(const Config& config, Impl& d) {
  Impl* raw = &d;
  auto control_key = EnsureControlKey(config.data_dir + "/ssh");
  if (!control_key.ok()) return control_key.status();
  spdlog::info("control key {}", control_key->private_key_path);
  auto secrets = SecretStore::Open(config.data_dir + "/secrets");
  if (!secrets.ok()) return secrets.status();
  d.secrets = std::move(*secrets);

  ConfigureSettings configure =
      ConfigureSettingsOf(config, control_key->private_key_path, control_key->public_key);
  configure.secrets = d.secrets.get();
  d.configurator = std::make_unique<Configurator>(*d.inventory, configure);
  // Power: the drivers get the secrets store and the nodes' SSH sessions.
  Configurator* configurator = d.configurator.get();
  d.power = PowerSettingsOf(config);
  d.power.secret = SecretLookup(d.secrets.get(), "a node's power config");
  d.power.node_command = [configurator](const std::string& node, const std::string& command) {
    auto r = configurator->Command({node}, command, "", 30000);
    return CommandOutcome(r.at(0));
  };
  if (config.heartbeat_s > 0) {
    HeartbeatProbes probes{
        .boot_ids =
            [configurator, timeout_ms = std::min(config.heartbeat_s, 60) *
                                        1000](const std::vector<NodeRecord>& nodes) {
              std::vector<std::string> names;
              for (const auto& n : nodes) names.push_back(n.name());
              std::vector<Result<std::string>> out;
              for (auto& r : configurator->Command(names, "cat /proc/sys/kernel/random/boot_id", "",
                                                   timeout_ms))
                out.push_back(CommandOutcome(r));
              return out;
            },
        .facts = [configurator](
                     const NodeRecord& n) { return configurator->CollectFacts(n, n.host_key); },
        .configure =
            [configurator](const std::string& n) { configurator->Configure(n, "heartbeat"); },
        .power_cycle =
            [raw](const NodeRecord& n, const std::string& why) {
              return NodePower(raw->inventory->store(), raw->power, n, PowerOp::kCycle, "heartbeat",
                               why);
            },
        .now = nullptr};
    d.heartbeat =
        std::make_unique<Heartbeat>(*d.inventory, std::move(probes), config.heartbeat_s * 1000);
  }
  d.phonehome = std::make_unique<PhoneHome>(*d.inventory, control_key->public_key,
                                            [raw] { return raw->boot->boot_url(); });

  // Netboot: boot scripts and files are served always (a site's own DHCP
  // server may point at them); dnsmasq runs only with an interface. What
  // the boot service asks of the others, it asks through these.
  BootSettings boot = BootSettingsOf(config);
  // From the applied snapshot, in memory: boot scripts are on the hot path.
  boot.profile_kernel_args = [inventory = d.inventory.get()](const std::string& v) {
    if (v.empty()) return std::vector<std::string>{};
    auto p = inventory->Snapshot(v);
    return p.ok() ? (*p)->kernel_args : std::vector<std::string>{};
  };
  boot.profile_uefi_loader = [inventory = d.inventory.get()](const std::string& v) {
    if (v.empty()) return std::string();
    auto p = inventory->Snapshot(v);
    return p.ok() ? (*p)->uefi_loader : std::string();
  };
  boot.root_args = [raw](const ImageVersion& image) {
    return raw->nfs ? raw->nfs->RootArgs(image) : std::string();
  };
  boot.verify_image = [raw](const ImageVersion& image) {
    return raw->nfs ? raw->nfs->Verify(image) : Status::Ok();
  };
  boot.render_overlay = [raw](const std::string& mac, const HttpRequest& request) {
    return raw->phonehome->Overlay(mac, NodeCaller::From(request));
  };
  boot.on_stage = [raw](const NodeRecord& node, BootStage stage, const std::string& text) {
    if (ConsoleListener* console = raw->console_ready.load())
      console->AddLine(node.id, "provisiond", text, stage);
  };
  auto boot_service = BootService::Create(boot, *d.store, *d.images);
  if (!boot_service.ok()) return boot_service.status();
  d.boot = std::move(*boot_service);

  if (!config.interface.empty()) {
    Status checked = RunStartPreflight(config, d);
    if (!checked.ok()) return checked;
  }
  ImageBuildOptions image_options = ImageBuildOptionsOf(config);
  image_options.secret = SecretLookup(d.secrets.get(), "an image manifest's credentials");
  d.image_service = std::make_unique<ImageService>(*d.inventory, *d.images, config.images_dir,
                                                   std::move(image_options));
  d.image_service->set_keep_derived(config.images_keep_derived);
  // A profile with bake playbooks boots its derived image (bake/).
  d.inventory->SetBakedImages([catalog = d.images.get()](const Profile& p) -> Result<ImageChoice> {
    auto derived = PlanDerivedImage(p, *catalog);
    if (!derived.ok()) return derived.status();
    return ImageChoice{derived->ref(), derived->base,
                       derived->built ? ImageAction::kReused : ImageAction::kRebuild,
                       derived->changes};
  });

  d.router = std::make_unique<Router>(nullptr);
  d.api = std::make_unique<ApiContext>();
  d.api->lease = d.lease.get();
  if (d.lease) d.api->control_alike = AlikeOf(config);
  ApiContext& api = *d.api;
  api.node_list = std::make_shared<NodeListCache>();
  // Applying a profile configures its nodes that are up; the others are
  // configured when they phone home.
  api.after_apply = [raw](const Plan& plan, const std::string& who) {
    nlohmann::json started = nlohmann::json::array(), later = nlohmann::json::array();
    for (const auto& n : plan.nodes) {
      if (n.action == PlanAction::kRelease || n.action == PlanAction::kMissing) continue;
      std::string why;
      if (raw->configurator->Configure(n.node, who, false, &why))
        started.push_back(n.node);
      else
        later.push_back({{"node", n.node}, {"why", why}});
    }
    return nlohmann::json{{"started", started}, {"not_started", later}};
  };
  api.secrets = d.secrets.get();
  api.inventory = d.inventory.get();
  api.configurator = d.configurator.get();
  api.images = d.images.get();
  if (sql::IsPostgresUri(config.database_path()))
    api.image_archive_dir = config.data_dir + "/image-archives";
  api.image_service = d.image_service.get();
  api.boot = d.boot.get();
  api.phonehome = d.phonehome.get();
  api.route_metrics = &d.router->metrics();
  api.playbooks_dir = config.playbooks_dir;
  api.import_dir = config.effective_import_dir();
  api.web_dir = config.web_dir;
  if (!config.interface.empty())
    api.preflight = [config](const PreflightOptions& opt) { return RunPreflight(config, opt); };
  api.power = d.power;
  api.own_address = d.iface ? d.iface->address : "";
  api.on_booted = [raw](const NodeRecord& node) {
    if (!node.profile_version.empty()) raw->configurator->Configure(node.name(), "node");
  };
  return Status::Ok();
}

// Before the boot network starts: what would make it fail or fight another
// server is fatal, the rest a warning; then the cluster interface's address.
Status Daemon::RunStartPreflight(const Config& config, Impl& d) {
  // A provisiond killed with SIGKILL leaves its dnsmasq and NFS server
  // running, holding the DHCP and TFTP ports: they are adopted (or stopped,
  // when their config changed) as the services start, so the ports are not
  // checked while they are there.
  const bool leftover_dnsmasq =
      !FindProcessesWithArg("--conf-file=" + config.data_dir + "/netboot/dnsmasq.conf").empty();
  PreflightOptions opt;
  opt.check_ports = !leftover_dnsmasq;
  // A takeover does not wait the probe's 4 s for other DHCP servers: the old
  // active's dnsmasq stopped before its lease lapsed (ha/lease.h) and the
  // first active probed this network. The probe runs once the boot network
  // serves instead (StartBootNetwork) and says what it found.
  d.takeover = d.lease && d.lease->tenure().epoch > 1;
  opt.probe_dhcp = !d.takeover;
  // ...and its answers to the probe for other DHCP servers are its own.
  if (auto i = LookupInterface(config.interface, config.boot_address()); leftover_dnsmasq && i.ok())
    opt.own_address = i->address;
  for (const auto& [state, n] : d.store->CountByState())
    if (state != NodeState::kDiscovered && state != NodeState::kRetired)
      opt.enrolled_nodes += static_cast<int>(n);
  std::string fatal;
  for (const auto& c : RunPreflight(config, opt)) {
    if (c.ok)
      spdlog::info("preflight {}: {}", c.name, c.detail);
    else if (c.fatal)
      fatal += "\n  " + c.name + ": " + c.detail;
    else
      spdlog::warn("preflight {}: {}", c.name, c.detail);
  }
  if (!fatal.empty()) return Status::Error(Code::kUnavailable, "preflight failed:" + fatal);
  auto iface = LookupInterface(config.interface, config.boot_address());
  if (!iface.ok()) return iface.status();
  d.iface = *iface;
  return Status::Ok();
}

// Phase 4: the plain listener (boot path and API), its URL written for the
// tools that start provisiond on port 0, then the HTTPS one.
Status Daemon::StartListeners(const Config& config, Impl& d) {
  uint64_t descriptors = 0;
  if (struct rlimit fds{}; getrlimit(RLIMIT_NOFILE, &fds) == 0 && fds.rlim_cur != RLIM_INFINITY)
    descriptors = fds.rlim_cur;
  HttpServerOptions http = HttpListenerOf(config, descriptors, std::thread::hardware_concurrency());
  if (http.connection_limit < config.listen_connections)
    spdlog::warn("listen_connections {} lowered to {}: half of the descriptor limit ({})",
                 config.listen_connections, http.connection_limit, descriptors);
  if (auto somaxconn = ReadFile("/proc/sys/net/core/somaxconn"); somaxconn.ok()) {
    const uint64_t cap = std::strtoull(somaxconn->c_str(), nullptr, 10);
    if (cap > 0 && cap < config.listen_backlog)
      spdlog::warn(
          "listen_backlog {} is capped by the kernel at net.core.somaxconn = {}: more "
          "nodes than that connecting at once overflow the accept queue (sysctl -w "
          "net.core.somaxconn={})",
          config.listen_backlog, cap, config.listen_backlog);
  }
  auto server = HttpServer::Start(http, *d.router);
  if (!server.ok()) return server.status();
  d.server = std::move(*server);
  std::string host = config.listen_host.find(':') != std::string::npos
                         ? "[" + config.listen_host + "]"
                         : config.listen_host;
  d.url = "http://" + host + ":" + std::to_string(d.server->port());
  Status s = WriteFileAtomic(config.data_dir + "/provisiond.url", d.url + "\n");
  if (!s.ok()) return s;
  spdlog::info("provisiond {} listening on {} (data in {})", PROVISION_VERSION, d.url,
               config.data_dir);
  return StartApiListener(config, d);
}

// The connections the other control nodes' NFS servers held at the cluster
// address as they last reported them (only an active reports any): this
// control node's address now (ha/nfs_clients.h).
static std::vector<TcpConnection> OldActiveNfsClients(ControlLease& lease,
                                                      const std::string& address) {
  auto nodes = lease.ControlNodes();
  if (!nodes.ok()) {
    spdlog::warn("the old active's NFS clients: {}", nodes.status().message());
    return {};
  }
  std::vector<std::string> refused;
  auto out = ConnectionsToTell(*nodes, lease.settings().holder, address, &refused);
  for (const std::string& r : refused) spdlog::warn("NFS clients of {}", r);
  return out;
}

// Once the NFS server listens (so a client's reconnection finds it), each
// client is told that its connection ended: it reconnects at once rather
// than at its next retransmission.
static void TickleNfsClients(const std::vector<TcpConnection>& clients, std::stop_token stop) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!ListensOn(kNfsPort) && std::chrono::steady_clock::now() < until) {
    if (stop.stop_requested()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::vector<std::string> failures;
  auto sent = SendTickles(clients, &failures);
  if (!sent.ok()) {
    spdlog::warn("NFS clients of the old active: {}", sent.status().message());
    return;
  }
  spdlog::info(
      "told {} NFS client connection(s) of the old active that they ended: they reconnect now",
      *sent);
  for (const std::string& f : failures) spdlog::warn("NFS client {}", f);
}

// Phase 5: on the cluster interface, the NFS server and dnsmasq, offering
// what the boot loaders describe.
Status Daemon::StartBootNetwork(const Config& config, Impl& d) {
  std::string boot_url = config.boot_url;
  if (boot_url.empty())
    boot_url =
        d.iface ? "http://" + d.iface->address + ":" + std::to_string(d.server->port()) : d.url;
  d.boot->set_boot_url(boot_url);
  if (!d.iface) return Status::Ok();
  auto dns = DnsmasqSettingsOf(config, *d.iface, HasRoutableIpv6(config.interface));
  if (!dns.ok()) return dns.status();
  // What DHCP and TFTP serve, from the boot loaders' descriptions: the
  // loader BIOS firmware gets (iPXE, whose own requests go to its start
  // script) and the one UEFI firmware gets (the signed chain by default).
  const BootLoader& loader = d.boot->loader();
  const BootLoader& uefi = d.boot->uefi_loader();
  dns->loader = {
      .title = std::string(loader.title()),
      .tag = std::string(loader.name()),
      .user_class = std::string(loader.dhcp_user_class()),
      .bios_file = loader.FirstStage(ClientArch::kBios),
      .uefi_file = uefi.FirstStage(ClientArch::kUefiX64),
      .start_url = loader.StartUrl(boot_url),
      .http_url = d.boot->HttpLoaderUrl(),
      .options = loader.DhcpOptions(),
      .tftp_files = {},
      .package = std::string(loader.package()) + (&uefi == &loader || uefi.name() == loader.name()
                                                      ? ""
                                                      : ", " + std::string(uefi.package()))};
  for (const auto& f : d.boot->TftpFiles()) dns->loader.tftp_files.emplace_back(f.source, f.name);
  Status s = d.boot->WriteTftpStartScripts();
  if (!s.ok()) return s;
  BootService* boot = d.boot.get();
  dns->sync_tftp = [boot] { boot->SyncTftpNodeDirs(); };
  d.tftp_configs = std::make_unique<WorkQueue>(4);
  WorkQueue* tftp_configs = d.tftp_configs.get();
  // What dnsmasq saw becomes boot stages: an address for a MAC (and the
  // node's TFTP boot config, written before its firmware loads the loader:
  // once per MAC at a time), or a loader's file sent by TFTP (known only by
  // address).
  auto observer = [boot, tftp_configs](const DhcpObservation& o) {
    if (o.kind == DhcpObservation::Kind::kAck) {
      boot->NoteStage(o.mac, BootStage::kDhcp, o.ip, o.ip);  // the lease is dnsmasq's either way
      std::string hex = o.mac;                               // normalized: 12 hex digits and colons
      std::erase(hex, ':');
      tftp_configs->SubmitOnce(static_cast<int64_t>(std::stoull(hex, nullptr, 16)),
                               [boot, mac = o.mac] { boot->WriteTftpNodeScript(mac); });
      return;
    }
    boot->RecordTftpSent(o.ip, o.file);
  };
  if (config.nfs_server == "ganesha") {
    auto service = NfsService::Start(NfsSettingsOf(config, *d.iface), *d.store, d.images.get());
    if (!service.ok()) return service.status();
    d.nfs = std::move(*service);
    d.api->nfs = d.nfs.get();
  }
  auto dnsmasq = DnsmasqService::Start(*dns, *d.store, observer);
  if (!dnsmasq.ok()) return dnsmasq.status();
  d.dnsmasq = std::move(*dnsmasq);
  spdlog::info("boot network on {} ({} DHCP), nodes boot from {}", config.interface,
               ToString(config.dhcp_mode), boot_url);
  if (d.takeover) {
    // From a thread, now that dnsmasq and the NFS server run.
    std::vector<TcpConnection> clients;
    if (d.nfs && d.cluster_address)
      clients = OldActiveNfsClients(*d.lease, d.cluster_address->address);
    d.after_takeover = std::jthread([&config = d.config, store = d.store.get(),
                                     clients](std::stop_token stop) {
      if (!clients.empty()) TickleNfsClients(clients, stop);
      if (stop.stop_requested()) return;
      // The probe left out of the start (answers from this machine's
      // addresses are its own): another server is an error in the log and
      // an event, not a stop (the cluster would be left with no control
      // node).
      PreflightOptions opt;
      opt.check_ports = false;
      for (const auto& c : RunPreflight(config, opt)) {
        if (c.name != "other dhcp servers") continue;
        if (c.ok) {
          spdlog::info("preflight {} (after the takeover): {}", c.name, c.detail);
          continue;
        }
        spdlog::error("preflight {} (after the takeover): {}", c.name, c.detail);
        store->RecordEvent(EventRecord{
            .kind = "preflight", .detail = "after the takeover: " + c.detail, .who = "provisiond"});
      }
    });
  }
  return Status::Ok();
}

// Phase 1b, with a PostgreSQL inventory only: a standby until this control
// node holds the lease, then the active one, which renews it; a lapse stops
// the boot network's servers and the process (ha/lease.h).
Status Daemon::AwaitLease(const Config& config, Impl& d) {
  {
    // The lease's table is in the schema: migrated first (control nodes
    // starting together take turns, store/migrations.h).
    auto db = sql::Database::Open(config.database_path(), sql::Database::Mode::kReadWrite);
    if (!db.ok()) return db.status();
    if (Status s = ApplyMigrations(*db, static_cast<int>(Migrations().size())); !s.ok())
      return Status::Internal(db->path() + ": " + s.message());
  }
  auto lease = ControlLease::Open(LeaseSettingsOf(config));
  if (!lease.ok()) return lease.status();
  d.lease = std::move(*lease);
  const std::string me = d.lease->settings().holder;
  // SIGTERM and SIGINT are blocked in every thread (main.cc waits for them):
  // a standby looks for one pending between its attempts.
  auto stop = [] {
    sigset_t pending;
    sigemptyset(&pending);
    sigpending(&pending);
    return sigismember(&pending, SIGTERM) == 1 || sigismember(&pending, SIGINT) == 1;
  };
  // While it waits, a standby says what its image store holds and copies
  // from the active what it lacks.
  std::string token;
  if (auto tokens = TokenSet::Load(config.effective_tokens_file()); tokens.ok())
    token = tokens->FirstWithRole(TokenRole::kAdmin);
  d.agent_images = std::make_unique<ImageCatalog>(config.effective_image_store());
  d.agent = std::make_unique<ControlAgent>(
      *d.lease, *d.agent_images,
      ControlAgentSettings{.name = me,
                           .token = token,
                           .staging_dir = config.data_dir + "/image-copies",
                           .archive_dir = config.data_dir + "/image-archives",
                           .interval_ms = config.control_report_ms,
                           .report_nfs_clients = config.nfs_server == "ganesha",
                           .alike = AlikeOf(config)});
  d.agent->Start("standby");
  if (!config.control_address.empty()) {
    auto a = ParseClusterAddress(config.control_address, config.interface);
    if (!a.ok()) return a.status();
    // An earlier run on this machine, killed while active, may have left it.
    if (HoldsClusterAddress(*a)) {
      if (Status s = ReleaseClusterAddress(*a); !s.ok()) return s;
      spdlog::warn("removed the cluster address {} from {}: a standby does not hold it", a->cidr(),
                   a->interface);
    }
    d.cluster_address = *a;
  }
  auto active = d.lease->AwaitActive(stop, [&](const LeaseState& s) {
    spdlog::info("standby as {}: {} is the active control node (lease expires in {} ms); waiting",
                 me, s.holder.empty() ? "no one" : s.holder, s.expires_ms - s.now_ms);
  });
  d.agent->Stop();  // a copy under way goes on from where it stopped, next time
  if (!active.ok()) return active.status();
  if (!*active) return Status::Error(Code::kUnavailable, "stopped while a standby");
  const LeaseState t = d.lease->tenure();
  spdlog::info("active control node {} (takeover {} of the lease)", me, t.epoch);
  if (d.cluster_address) {
    d.holds_address = true;  // added even if an announcement fails: removed on the way out
    if (Status s = ClaimClusterAddress(*d.cluster_address); !s.ok()) return s;
    spdlog::info("claimed the cluster address {} on {} (announced by gratuitous ARP)",
                 d.cluster_address->cidr(), d.cluster_address->interface);
  }
  Impl* raw = &d;
  d.lease->KeepActive([raw](const std::string& why) {
    // Fenced: the boot network's servers go first, at once, then the process
    // (systemd starts it again, as a standby).
    spdlog::critical("stepping down as the active control node: {}", why);
    if (raw->dnsmasq && raw->dnsmasq->pid() > 0) ::kill(raw->dnsmasq->pid(), SIGKILL);
    if (raw->nfs && raw->nfs->pid() > 0) ::kill(raw->nfs->pid(), SIGKILL);
    if (raw->cluster_address) (void)ReleaseClusterAddress(*raw->cluster_address).ok();
    spdlog::default_logger()->flush();
    std::_Exit(75);
  });
  return Status::Ok();
}

Result<std::unique_ptr<Daemon>> Daemon::Start(const Config& config) {
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  Impl& d = *impl;
  if (Status s = OpenDataDir(config, d); !s.ok()) return s;
  if (sql::IsPostgresUri(config.database_path())) {
    if (Status s = AwaitLease(config, d); !s.ok()) return s;
  }
  if (Status s = OpenInventory(config, d); !s.ok()) return s;
  if (Status s = MakeServices(config, d); !s.ok()) return s;
  // Before the server starts: the routes read what it sets up.
  if (Status s = StartConsole(config, d); !s.ok()) return s;
  AddRoutes(*d.router, *d.api);  // every route: api/routes.cc
  std::unique_ptr<Daemon> daemon(new Daemon(std::move(impl)));
  if (Status s = daemon->ReloadTokens(); !s.ok()) return s;
  if (Status s = StartListeners(config, d); !s.ok()) return s;
  if (Status s = StartBootNetwork(config, d); !s.ok()) return s;
  if (d.agent) {
    // The standbys copy images from here: the HTTPS API (its key pinned) when
    // it listens, else the plain one; a listener on every address is reached
    // at the boot network's. The active makes each version's erofs image for
    // them to copy (images/nfs.h).
    std::string url = d.api->tls_url.empty() ? d.url : d.api->tls_url;
    for (const std::string any : {"//0.0.0.0:", "//[::]:"})
      if (size_t at = url.find(any); at != std::string::npos && d.iface)
        url.replace(at + 2, any.size() - 3, d.iface->address);
    if (d.nfs)
      d.agent->SetPrepareRoot(
          [nfs = d.nfs.get()](const ImageVersion& v) { return nfs->PrepareRoot(v); });
    d.agent->Start("active", url, d.api->tls_pin);
  }
  // Configuration a stop cut off (a SIGKILL, a crash, a power cut; with
  // control nodes, the old active's end) goes on now that everything it
  // needs runs.
  if (config.resume_on_start) {
    const std::string who =
        d.lease ? "provisiond on " + d.lease->settings().holder + " (resumed when it became active)"
                : "provisiond (resumed after a restart)";
    if (int n = d.configurator->ResumeCutOff(who); n > 0)
      spdlog::info("configuring {} node(s) again that the last stop cut off", n);
  }
  if (d.heartbeat) d.heartbeat->Start();
  return daemon;
}

}  // namespace prov
