// What the API's handlers need: the services behind the routes and the few
// settings they read. The daemon (daemon.cc) builds one and fills it all;
// routes.cc binds it to every route. The services are pointers so that a test
// or the fuzz harness builds only what the handlers it calls use.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dhcp/preflight.h"
#include "http/http.h"
#include "power/power.h"

namespace prov {

class BootService;
class Configurator;
class ConsoleListener;
class ConsoleLog;
class ControlLease;
class ImageCatalog;
class ImageService;
class Inventory;
class NfsService;
class NodeListCache;
class PhoneHome;
class SecretStore;
struct NodeRecord;
struct Plan;

struct ApiContext {
  Inventory* inventory = nullptr;               // nodes, profiles, events: the store
  Configurator* configurator = nullptr;         // configure, cmd, playbook runs
  ImageCatalog* images = nullptr;               // the built image versions
  ImageService* image_service = nullptr;        // image builds and removals
  BootService* boot = nullptr;                  // boot scripts and files
  PhoneHome* phonehome = nullptr;               // hello and report
  NfsService* nfs = nullptr;                    // null without a boot network
  SecretStore* secrets = nullptr;               // names and sizes; never values
  const RouteMetrics* route_metrics = nullptr;  // the router's, for /metrics
  ConsoleLog* console_log = nullptr;            // the network console; null when off
  ControlLease* lease = nullptr;                // the active's lease; null with SQLite
  // What must be alike on every control node, as this one has it now
  // (ha/control_nodes.h AlikeDigests); null with SQLite.
  std::function<std::map<std::string, std::string>()> control_alike;
  const ConsoleListener* console = nullptr;  // its listener, for /metrics
  // The node list's serialized nodes (api/nodes.h); null: none kept.
  std::shared_ptr<NodeListCache> node_list;
  // GET /status's control nodes with a PostgreSQL inventory (what each
  // lacks of the images in use reads every profile and every node's facts):
  // worked out at most once a second (api/status_metrics.cc).
  struct ControlNodesCache {
    std::mutex mu;
    int64_t at_ms = -1;  // steady clock; -1: never
    nlohmann::json nodes;
  };
  std::shared_ptr<ControlNodesCache> control_nodes = std::make_shared<ControlNodesCache>();

  // What the routes read of the config, each by name (the daemon fills
  // them): playbook runs only from playbooks_dir, image imports only from
  // import_dir, the web page's files from web_dir.
  std::string playbooks_dir;
  std::string import_dir;
  std::string web_dir;
  // The preflight checks of the boot network as they are now (the
  // daemon's config bound in); null without a boot network.
  std::function<std::vector<PreflightCheck>(const PreflightOptions&)> preflight = nullptr;
  PowerSettings power;
  std::string own_address;      // our address on the cluster interface
  std::string tls_url;          // the HTTPS listener; "" when off
  std::string tls_fingerprint;  // its certificate's SHA-256 fingerprint
  std::string tls_pin;          // its key's pin, "sha256//BASE64" (another control node checks it)
  // Where archives of image versions are made for the other control nodes to
  // copy (GET /images/{ref}/archive); "" with one control node.
  std::string image_archive_dir;
  std::string version = PROVISION_VERSION;
  int64_t max_event_wait_ms = 25000;  // long-poll cap for GET /events?wait=
  // Called after a profile was applied: starts configuring its nodes and
  // returns what it started (the "configure" field of the answer).
  std::function<nlohmann::json(const Plan&, const std::string& who)> after_apply = nullptr;
  // Called after a hello made a node `booted` (its configuration starts).
  std::function<void(const NodeRecord&)> on_booted = nullptr;
};

}  // namespace prov
