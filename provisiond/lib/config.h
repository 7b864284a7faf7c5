// provisiond's configuration: one table describes every key once (name,
// type, default, help); parsing, validation, defaults and `provisiond
// --describe-config` all come from it. A config is parsed into a staging
// Config and only returned when all of it is valid.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "dhcp/dhcp_mode.h"
#include "ha/lease.h"

#ifndef PROVISION_TOOLSDIR
#define PROVISION_TOOLSDIR "/usr/lib/provisiond"
#endif
#ifndef PROVISION_DATADIR
#define PROVISION_DATADIR "/usr/share/provisiond"
#endif
#ifndef PROVISION_CONFDIR
#define PROVISION_CONFDIR "/etc/provisiond"
#endif
#ifndef PROVISION_STATEDIR
#define PROVISION_STATEDIR "/var/lib/provisiond"
#endif

namespace prov {

inline constexpr const char* kDefaultConfigPath = PROVISION_CONFDIR "/provisiond.yaml";

// Where the shipped data (profiles, playbooks, image manifests, pxe
// templates, web page) and the static node tools are. An installed
// provisiond uses the installed folders (/usr/share/provisiond,
// /usr/lib/provisiond). A binary run from the build folder it was built in
// uses the checkout's data and that folder's tools, so the demo and the tests
// run without installing; packages are built without this (the CMake option
// PROVISION_BUILD_TREE_DEFAULTS).
struct Layout {
  std::string data_dir;
  std::string tools_dir;
  bool build_tree = false;
};
const Layout& InstallLayout();

struct Config {
  std::string listen_host;
  uint16_t listen_port = 0;
  std::string api_listen;  // "address:port", "off", or empty: listen_host:8443
  std::string tls_cert;    // empty: <data_dir>/tls/cert.pem, made self-signed
  std::string tls_key;     // empty: <data_dir>/tls/key.pem
  std::string data_dir;
  // The inventory: empty for SQLite in <data_dir>/provisiond.db, or a
  // postgresql:// URI (db/sql.h).
  std::string database;
  // Control nodes sharing a PostgreSQL inventory (ha/lease.h): this one's
  // name (empty: the host name) and the lease's timings.
  std::string control_name;
  int64_t control_lease_ms = 10000;
  int64_t control_renew_ms = 2000;
  int64_t control_stop_margin_ms = 3000;
  int64_t control_report_ms = 5000;  // control_nodes rows, a standby's image copies
  std::string control_address;       // "10.99.0.1/24": moves with the lease (ha/cluster_address.h)
  // The boot network's address on `interface`: control.address's when set,
  // else "" (the interface's first).
  std::string boot_address() const { return control_address.substr(0, control_address.find('/')); }
  std::string tokens_file;  // empty: <data_dir>/tokens, created on first start
  std::string profiles_dir;
  std::string images_dir;
  std::string playbooks_dir;
  std::string ansible_playbook;    // playbooks outside the native runner's subset
  std::string ansible_roles_path;  // ':'-separated, after <playbook dir>/roles
  std::string ansible_python_interpreter = "auto_silent";
  std::string log_level;
  uint64_t max_body_bytes = 0;
  int64_t listen_threads = -1;  // the boot listener's event loops; -1: one per CPU (at least 2)
  uint64_t listen_connections = 4096;   // connections the plain listener holds at once
  uint64_t listen_api_requests = 1024;  // API requests it answers at once (then 503)
  uint64_t listen_idle_timeout_s = 30;  // a connection that sends nothing this long is closed
  uint64_t listen_backlog = 4096;       // connections the kernel queues before provisiond accepts

  // Netboot (empty interface: API only, no dnsmasq).
  std::string interface;
  DhcpMode dhcp_mode = DhcpMode::kFull;
  std::string dhcp_range_first;  // full mode; empty: derived from the interface's subnet
  std::string dhcp_range_last;
  std::string uefi_binary;  // ipxe.efi or snponly.efi
  std::string uefi_loader;  // grub (shim -> grub, signed) or ipxe
  std::string signed_loader_dir;
  std::string boot_url;  // empty: http://<interface address>:<listen port>
  std::string dnsmasq_path;
  std::string ipxe_dir;
  std::string pxe_dir;              // templates
  std::string image_store;          // empty: <data_dir>/images
  int64_t images_keep_derived = 2;  // per base image, besides those in use
  std::string import_dir;           // empty: <data_dir>/import; image imports read only here
  std::string ipmi_credentials_file;
  std::string power_command;  // program for the "command" power driver
  std::string ssh_user = "root";
  int ssh_port = 22;
  int configure_workers = 64;
  int max_discovered = 256;       // discovered (unknown) nodes kept at once
  int64_t keep_events = 1000000;  // the newest events kept (0: all)
  int64_t keep_runs = 100000;     // the newest runs kept, with their tasks (0: all)
  int task_timeout_s = 600;
  int connect_retry_s = 30;
  bool resume_on_start = true;  // configure the nodes a stop cut off again at start
  int heartbeat_s = 30;         // installed nodes' heartbeat over SSH (0: off)
  std::string installed_hosts_file = "/etc/hosts";  // installed nodes' names block ("": none)
  // The network console: "" (the interface's address, port 6666), "off" or ADDR:PORT.
  std::string console_listen;
  int64_t console_keep_lines = 5000;  // per node (0: all)
  int64_t console_keep_boots = 5;     // per node (0: all)
  std::string tools_dir;   // provision-facts, provision-mount (static, copied into images)
  std::string nfs_server;  // "ganesha" or "none"
  std::string web_dir;     // the inventory web page
  std::string ganesha_path;

  std::string database_path() const {
    return database.empty() ? data_dir + "/provisiond.db" : database;
  }
  std::string effective_tls_cert() const {
    return tls_cert.empty() ? data_dir + "/tls/cert.pem" : tls_cert;
  }
  std::string effective_tls_key() const {
    return tls_key.empty() ? data_dir + "/tls/key.pem" : tls_key;
  }
  std::string effective_tokens_file() const {
    return tokens_file.empty() ? data_dir + "/tokens" : tokens_file;
  }
  std::string effective_import_dir() const {
    return import_dir.empty() ? data_dir + "/import" : import_dir;
  }
  std::string effective_image_store() const {
    return image_store.empty() ? data_dir + "/images" : image_store;
  }
};

// Where the HTTPS listener (api_listen) goes; false when it is off.
bool ApiListenAddress(const Config& config, std::string& host, uint16_t& port);

// One configuration key.
struct SettingInfo {
  const char* name;           // dotted path: "dhcp.mode"
  const char* type;           // for people: "address:port", "path", "integer"...
  const char* default_value;  // as it would be written in the file
  const char* help;
};

// Every key, in the order they are documented.
const std::vector<SettingInfo>& ConfigSettings();

// Parses YAML `text`. `file` is used in messages and to resolve relative
// paths (relative to the file's directory). All errors are reported at once.
Result<Config> ParseConfig(const std::string& text, const std::string& file);

// Reads and parses the file; a missing file is an error naming the path.
Result<Config> LoadConfig(const std::string& path);

// The control lease's settings (ha/lease.h) from the config: its name
// defaults to the host name.
LeaseSettings LeaseSettingsOf(const Config& c);

// A new tokens file: its explanatory header and one fresh `admin` token
// (named `name` when not empty), as provisiond's first start and `provisiond
// init` write it.
std::string NewTokensFile(const std::string& name);

// The table as text, for --describe-config and the docs.
std::string DescribeConfig();

}  // namespace prov
