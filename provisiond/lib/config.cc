#include "config.h"

#include <arpa/inet.h>

#include <filesystem>
#include <functional>
#include <map>

#include "base/file_util.h"
#include "base/netinfo.h"
#include "base/yaml_reader.h"
#include "db/sql.h"
#include "ha/cluster_address.h"
#include "ha/lease.h"
#include "store/boot_stage.h"

namespace prov {
namespace {

using Apply = std::function<Status(const std::string& value, const std::string& base, Config&)>;

struct Setting {
  SettingInfo info;
  Apply apply;
};

Status ParseUint(const std::string& v, uint64_t min, uint64_t max, uint64_t& out) {
  if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos)
    return Status::Invalid("expected a whole number, found '" + v + "'");
  try {
    out = std::stoull(v);
  } catch (const std::exception&) {
    return Status::Invalid("number '" + v + "' is too large");
  }
  if (out < min || out > max)
    return Status::Invalid("expected a number between " + std::to_string(min) + " and " +
                           std::to_string(max) + ", found " + v);
  return Status::Ok();
}

std::string ResolvePath(const std::string& value, const std::string& base) {
  if (value.empty() || value[0] == '/' || base.empty()) return value;
  return (std::filesystem::path(base) / value).lexically_normal().string();
}

// "address:port" (an IPv6 address in brackets), port 0 allowed: the real
// port is written to a file under <data_dir>.
Status ParseListen(const std::string& v, std::string& host, uint16_t& port) {
  size_t colon = v.rfind(':');
  if (colon == std::string::npos || colon == 0)
    return Status::Invalid("expected address:port, found '" + v + "'");
  uint64_t n = 0;
  Status s = ParseUint(v.substr(colon + 1), 0, 65535, n);
  if (!s.ok()) return Status::Invalid("port of '" + v + "': " + s.message());
  host = v.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  port = static_cast<uint16_t>(n);
  return Status::Ok();
}

// A path that may be empty (empty: a default under data_dir).
Apply OptionalPathSetting(std::string Config::*member) {
  return [member](const std::string& v, const std::string& base, Config& c) {
    c.*member = ResolvePath(v, base);
    return Status::Ok();
  };
}

Apply PathSetting(std::string Config::*member) {
  return [member](const std::string& v, const std::string& base, Config& c) {
    if (v.empty()) return Status::Invalid("expected a path, found an empty string");
    c.*member = ResolvePath(v, base);
    return Status::Ok();
  };
}

// true/false (YAML's yes/no and on/off too) into `member`.
Apply BoolSetting(bool Config::*member) {
  return [member](const std::string& v, const std::string&, Config& c) {
    if (v == "true" || v == "yes" || v == "on") {
      c.*member = true;
    } else if (v == "false" || v == "no" || v == "off") {
      c.*member = false;
    } else {
      return Status::Invalid("expected true or false, found '" + v + "'");
    }
    return Status::Ok();
  };
}

// A whole number between `min` and `max` into `member`.
template <typename T>
Apply NumberSetting(uint64_t min, uint64_t max, T Config::*member) {
  return [min, max, member](const std::string& v, const std::string&, Config& c) {
    uint64_t n = 0;
    Status s = ParseUint(v, min, max, n);
    c.*member = static_cast<T>(n);
    return s;
  };
}

const std::vector<Setting>& Table() {
  // The shipped data's defaults follow the layout (installed or build tree).
  static const std::string data = InstallLayout().data_dir;
  static const std::string profiles = data + "/profiles", images = data + "/images",
                           playbooks = data + "/playbooks", pxe = data + "/pxe",
                           web = data + "/web", tools = InstallLayout().tools_dir;
  static const std::vector<Setting> table = {
      {{"listen", "address:port", "127.0.0.1:8080",
        "Where the HTTP server (boot scripts, API, web page, metrics) listens. Use the cluster "
        "interface's address, or 0.0.0.0 for all."},
       [](const std::string& v, const std::string&, Config& c) {
         return ParseListen(v, c.listen_host, c.listen_port);
       }},
      {{"api_listen", "address:port|off", "",
        "Where the API and the web page are served over HTTPS (TLS). Empty: the listen address "
        "on port 8443 (port 0, any free one, when listen's port is 0; the URL is written to "
        "<data_dir>/provisiond.api-url). The plain listen address keeps the boot routes, which "
        "carry nothing that outlives one boot, and answers API routes only to clients on "
        "loopback. off: no HTTPS listener."},
       [](const std::string& v, const std::string&, Config& c) {
         if (v == "off" || v.empty()) {
           c.api_listen = v;
           return Status::Ok();
         }
         std::string host;
         uint16_t port = 0;
         Status s = ParseListen(v, host, port);
         if (s.ok()) c.api_listen = v;
         return s;
       }},
      {{"tls_cert", "path", "",
        "The HTTPS listener's certificate (PEM). Empty: <data_dir>/tls/cert.pem, made "
        "self-signed on first start with its key; provisiond logs its SHA-256 fingerprint and "
        "GET /api/v1/status shows it."},
       OptionalPathSetting(&Config::tls_cert)},
      {{"tls_key", "path", "",
        "The certificate's private key (PEM, mode 0600). Empty: <data_dir>/tls/key.pem."},
       OptionalPathSetting(&Config::tls_key)},
      {{"data_dir", "path", PROVISION_STATEDIR,
        "Where provisiond keeps its state: the SQLite inventory, generated dnsmasq config, "
        "rendered overlays. Created if missing."},
       PathSetting(&Config::data_dir)},
      {{"database", "string", "",
        "The inventory. Empty: SQLite in <data_dir>/provisiond.db, for one control node. A "
        "postgresql:// URI (postgresql://provisiond@db1,db2/provisiond?target_session_attrs="
        "read-write): a PostgreSQL database that several control nodes share "
        "(docs/ha.md); keep its password in the service user's ~/.pgpass, not here."},
       [](const std::string& v, const std::string&, Config& c) {
         if (!v.empty() && !sql::IsPostgresUri(v))
           return Status::Invalid("expected empty (SQLite) or a postgresql:// URI, found '" +
                                  sql::RedactUri(v) + "'");
         c.database = v;
         return Status::Ok();
       }},
      {{"control.name", "string", "",
        "This control node's name among those sharing a PostgreSQL database (status shows "
        "which is active). Empty: the host name."},
       [](const std::string& v, const std::string&, Config& c) {
         c.control_name = v;
         return Status::Ok();
       }},
      {{"control.lease_ms", "integer", "10000",
        "With PostgreSQL: how long the active control node's lease lasts after its last "
        "renewal; a standby takes over once it has lapsed. At least 2 x control.renew_ms + "
        "control.stop_margin_ms."},
       NumberSetting<int64_t>(1000, 600000, &Config::control_lease_ms)},
      {{"control.renew_ms", "integer", "2000",
        "With PostgreSQL: how often the active renews its lease, and a standby asks for it."},
       NumberSetting<int64_t>(100, 60000, &Config::control_renew_ms)},
      {{"control.stop_margin_ms", "integer", "3000",
        "With PostgreSQL: an active whose renewals have failed stops serving (DHCP, TFTP, "
        "HTTP, NFS) and exits this long before its lease lapses, so no standby starts while "
        "it still serves. At least 1000."},
       NumberSetting<int64_t>(1000, 600000, &Config::control_stop_margin_ms)},
      {{"control.address", "ADDRESS/PREFIX", "",
        "With PostgreSQL and an interface: the boot network's address, moved to whichever "
        "control node is active (added to interface and announced by gratuitous ARP; removed "
        "when it stops or fences itself). Nodes, their DHCP answers and NFS roots use it. Empty: "
        "each control node serves on interface's own address."},
       [](const std::string& v, const std::string&, Config& c) {
         c.control_address = v;
         return Status::Ok();
       }},
      {{"control.report_ms", "integer", "5000",
        "With PostgreSQL: how often each control node says what its image store holds, and a "
        "standby looks for image versions of the active it lacks and copies them."},
       NumberSetting<int64_t>(100, 600000, &Config::control_report_ms)},
      {{"tokens_file", "path", "",
        "API tokens, one per line, '#' starts a comment. Empty: <data_dir>/tokens, created with "
        "one random token (mode 0600) on first start."},
       OptionalPathSetting(&Config::tokens_file)},
      {{"profiles_dir", "path", profiles.c_str(),
        "Versioned hardware profiles: <profiles_dir>/<version>/profile.yaml."},
       PathSetting(&Config::profiles_dir)},
      {{"images_dir", "path", images.c_str(), "Image manifests: <images_dir>/<name>/image.yaml."},
       PathSetting(&Config::images_dir)},
      {{"playbooks_dir", "path", playbooks.c_str(),
        "Playbooks that profiles name, in Ansible syntax."},
       PathSetting(&Config::playbooks_dir)},
      {{"ansible_playbook", "path", "/usr/bin/ansible-playbook",
        "Runs the playbooks (and roles) that provisiond's native runner does not load; "
        "Debian's ansible package."},
       PathSetting(&Config::ansible_playbook)},
      {{"ansible_roles_path", "path", "",
        "More folders of roles for playbooks that run under ansible-playbook, ':'-separated; "
        "roles/ beside the playbook is always searched first."},
       OptionalPathSetting(&Config::ansible_roles_path)},
      {{"ansible_python_interpreter", "auto_silent|auto|PATH", "auto_silent",
        "The Python that ansible-playbook runs modules with on nodes: Ansible's discovery, or a "
        "path every node has. With discovery, nodes whose facts say Debian's family get "
        "/usr/bin/python3 without it."},
       [](const std::string& v, const std::string&, Config& c) {
         if (v.rfind("auto", 0) != 0 &&
             (v.empty() || v[0] != '/' || v.find_first_of(" \t\n'\"") != std::string::npos))
           return Status::Invalid("expected auto, auto_silent or an absolute path, found '" + v +
                                  "'");
         c.ansible_python_interpreter = v;
         return Status::Ok();
       }},
      {{"log_level", "trace|debug|info|warn|error", "info", "Least severe log message written."},
       [](const std::string& v, const std::string&, Config& c) {
         static const char* levels[] = {"trace", "debug", "info", "warn", "error"};
         for (const char* l : levels)
           if (v == l) {
             c.log_level = v;
             return Status::Ok();
           }
         return Status::Invalid("expected one of trace, debug, info, warn, error, found '" + v +
                                "'");
       }},
      {{"max_body_bytes", "integer", "1048576",
        "Largest request body the API accepts; larger ones get 413."},
       [](const std::string& v, const std::string&, Config& c) {
         return ParseUint(v, 1024, 1ULL << 30, c.max_body_bytes);
       }},
      {{"listen_threads", "integer", "-1",
        "Event-loop threads of the plain listener (`listen`), which serves what nodes fetch "
        "as they boot: -1, one per CPU (at least 2); 0, a thread per connection instead."},
       [](const std::string& v, const std::string&, Config& c) {
         if (v == "-1") {
           c.listen_threads = -1;
           return Status::Ok();
         }
         uint64_t n = 0;
         Status s = ParseUint(v, 0, 256, n);
         if (s.ok()) c.listen_threads = static_cast<int64_t>(n);
         return s;
       }},
      {{"listen_connections", "integer", "4096",
        "Connections the plain listener (`listen`) holds at once; past it, new ones are "
        "closed (a node's iPXE retries). Each takes a file descriptor: provisiond lowers it to "
        "what its descriptor limit leaves room for."},
       [](const std::string& v, const std::string&, Config& c) {
         return ParseUint(v, 16, 1000000, c.listen_connections);
       }},
      {{"listen_api_requests", "integer", "1024",
        "API requests the plain listener (`listen`) answers at once, each on a thread of its "
        "own (they may wait: long polls, SSH, builds); one more is answered 503 with "
        "Retry-After: 1, and the boot routes are never held up by them."},
       [](const std::string& v, const std::string&, Config& c) {
         return ParseUint(v, 1, 65536, c.listen_api_requests);
       }},
      {{"listen_idle_timeout_s", "seconds", "30",
        "A connection to either listener that sends nothing for this long is closed, so "
        "clients that open connections and stall (half a request, then nothing) cannot hold "
        "them."},
       [](const std::string& v, const std::string&, Config& c) {
         return ParseUint(v, 1, 3600, c.listen_idle_timeout_s);
       }},
      {{"listen_backlog", "integer", "4096",
        "Connections the kernel holds for the plain listener before provisiond accepts them "
        "(listen(2)'s backlog). More nodes than this connecting in the same instant overflow "
        "it, and some of them see their connection reset. The kernel caps it at "
        "net.core.somaxconn: provisiond says so at start when that is lower."},
       [](const std::string& v, const std::string&, Config& c) {
         return ParseUint(v, 16, 1000000, c.listen_backlog);
       }},
      {{"interface", "interface name", "",
        "The cluster interface: dnsmasq and the boot services serve only on it. Empty: no "
        "netboot, provisiond serves its API only."},
       [](const std::string& v, const std::string&, Config& c) {
         if (v.size() > 15 || v.find_first_of("/ \t") != std::string::npos)
           return Status::Invalid("'" + v + "' is not an interface name");
         c.interface = v;
         return Status::Ok();
       }},
      {{"dhcp.mode", "full|proxy", "full",
        "full: provisiond's dnsmasq hands out addresses on a dedicated cluster network. proxy: "
        "another DHCP server gives addresses; dnsmasq only adds the boot information."},
       [](const std::string& v, const std::string&, Config& c) {
         auto mode = ParseDhcpMode(v);
         if (!mode) return Status::Invalid("expected full or proxy, found '" + v + "'");
         c.dhcp_mode = *mode;
         return Status::Ok();
       }},
      {{"dhcp.range", "FIRST-LAST", "",
        "Addresses dnsmasq may lease in full mode, e.g. 10.99.0.100-10.99.0.200. Enrolled nodes "
        "get a reservation by MAC. Empty: the upper half of the interface's subnet."},
       [](const std::string& v, const std::string&, Config& c) {
         if (v.empty()) {
           c.dhcp_range_first = c.dhcp_range_last = "";
           return Status::Ok();
         }
         size_t dash = v.find('-');
         in_addr a{}, b{};
         if (dash == std::string::npos || inet_pton(AF_INET, v.substr(0, dash).c_str(), &a) != 1 ||
             inet_pton(AF_INET, v.substr(dash + 1).c_str(), &b) != 1)
           return Status::Invalid("expected FIRST-LAST IPv4 addresses, found '" + v + "'");
         if (ntohl(a.s_addr) > ntohl(b.s_addr))
           return Status::Invalid("range '" + v + "' ends before it starts");
         c.dhcp_range_first = v.substr(0, dash);
         c.dhcp_range_last = v.substr(dash + 1);
         return Status::Ok();
       }},
      {{"dhcp.uefi_binary", "ipxe.efi|snponly.efi", "ipxe.efi",
        "The iPXE binary UEFI firmware gets by TFTP: ipxe.efi (iPXE's own NIC drivers) or "
        "snponly.efi (the firmware's network driver; for NICs iPXE does not drive)."},
       [](const std::string& v, const std::string&, Config& c) {
         if (v != "ipxe.efi" && v != "snponly.efi")
           return Status::Invalid("expected ipxe.efi or snponly.efi, found '" + v + "'");
         c.uefi_binary = v;
         return Status::Ok();
       }},
      {{"dhcp.uefi_loader", "grub|ipxe", LoaderName(kDefaultUefiChain),
        "What UEFI firmware boots: grub, the signed chain (shim signed by Microsoft's UEFI CA, "
        "grub and the kernel signed by Debian), which boots with Secure Boot on or off; or ipxe "
        "(unsigned: Secure Boot must be off). BIOS firmware always gets iPXE."},
       [](const std::string& v, const std::string&, Config& c) {
         if (!ParseLoaderName(v))
           return Status::Invalid("expected " + LoaderChoices() + ", found '" + v + "'");
         c.uefi_loader = v;
         return Status::Ok();
       }},
      {{"boot_url", "URL", "",
        "The URL nodes use to reach provisiond (plain http: iPXE has no HTTPS here). Empty: "
        "http://<interface address>:<listen port>."},
       [](const std::string& v, const std::string&, Config& c) {
         if (!v.empty() && v.rfind("http://", 0) != 0)
           return Status::Invalid("expected an http:// URL, found '" + v + "'");
         c.boot_url = v.empty() || v.back() != '/' ? v : v.substr(0, v.size() - 1);
         return Status::Ok();
       }},
      {{"dnsmasq", "path", "/usr/sbin/dnsmasq", "The dnsmasq program provisiond runs."},
       PathSetting(&Config::dnsmasq_path)},
      {{"ipxe_dir", "path", "/usr/lib/ipxe",
        "Where the iPXE binaries are (undionly.kpxe, ipxe.efi, snponly.efi; Debian's ipxe)."},
       PathSetting(&Config::ipxe_dir)},
      {{"signed_loader_dir", "path", "/usr/lib",
        "Where the signed boot chain is: shim/shimx64.efi.signed (Debian's shim-signed) and "
        "grub/x86_64-efi-signed/grubnetx64.efi.signed (grub-efi-amd64-signed)."},
       PathSetting(&Config::signed_loader_dir)},
      {{"pxe_dir", "path", pxe.c_str(), "Templates for the dnsmasq config and the iPXE scripts."},
       PathSetting(&Config::pxe_dir)},
      {{"image_store", "path", "",
        "Built images (kernel, initrd, root) by name and version. Empty: <data_dir>/images."},
       OptionalPathSetting(&Config::image_store)},
      {{"images.keep_derived", "integer", "2",
        "Derived images (a profile's bake playbooks, <image>.baked) kept per base image besides "
        "those a node boots or a profile names: the newest. Older ones are removed after each "
        "bake and by `provisionctl image prune`."},
       NumberSetting(0, 1000, &Config::images_keep_derived)},
      {{"import_dir", "path", "",
        "Where `image import` reads kernels and initrds from (nothing outside it). Empty: "
        "<data_dir>/import, created 0700."},
       OptionalPathSetting(&Config::import_dir)},
      {{"ipmi_credentials_file", "path", PROVISION_CONFDIR "/ipmi",
        "IPMI credentials, one '<bmc address> <user> <password>' per line. Must be readable by "
        "its owner only; passwords are never logged."},
       PathSetting(&Config::ipmi_credentials_file)},
      {{"power.command", "path", "",
        "Program for the 'command' power driver, called as: PROGRAM on|off|cycle HOSTNAME MAC "
        "(the lab uses it to start and stop virtual machines)."},
       [](const std::string& v, const std::string& base, Config& c) {
         c.power_command = ResolvePath(v, base);
         return Status::Ok();
       }},
      {{"ssh.user", "name", "root",
        "The user provisiond logs in as on the nodes with its control key (the overlay puts the "
        "key in root's authorized_keys)."},
       [](const std::string& v, const std::string&, Config& c) {
         if (v.empty() || v.find_first_of(" /:@") != std::string::npos)
           return Status::Invalid("expected a user name, found '" + v + "'");
         c.ssh_user = v;
         return Status::Ok();
       }},
      {{"ssh.port", "integer", "22", "The nodes' SSH port."},
       [](const std::string& v, const std::string&, Config& c) {
         uint64_t port = 0;
         Status s = ParseUint(v, 1, 65535, port);
         c.ssh_port = static_cast<int>(port);
         return s;
       }},
      {{"discovery.max_pending", "integer", "256",
        "Unknown machines kept as `discovered` nodes at once; boot requests from more unknown "
        "MACs are answered with the waiting script but not recorded (enroll or retire some)."},
       NumberSetting(0, 1000000, &Config::max_discovered)},
      {{"retention.events", "integer", "1000000",
        "The newest events kept; older ones are deleted as new ones come (0: keep all)."},
       NumberSetting(0, 1000000000, &Config::keep_events)},
      {{"retention.runs", "integer", "100000",
        "The newest runs kept with their tasks' output; older ones are deleted (0: keep all)."},
       NumberSetting(0, 1000000000, &Config::keep_runs)},
      {{"configure.workers", "integer", "64",
        "Nodes configured (playbooks run) at the same time; more wait their turn."},
       NumberSetting(1, 4096, &Config::configure_workers)},
      {{"configure.task_timeout", "seconds", "600",
        "How long one task may run on a node unless the task sets its own timeout."},
       NumberSetting(1, 86400, &Config::task_timeout_s)},
      {{"configure.connect_retry", "seconds", "30",
        "How long a configure run keeps trying to reach a node's sshd that does not answer "
        "(one that phoned home may still be starting it), backing off from 1 s; 0: one try."},
       NumberSetting(0, 3600, &Config::connect_retry_s)},
      {{"configure.resume_on_start", "true|false", "true",
        "At start, configure again the nodes whose configuration the last stop cut off (left "
        "`configuring`) and those that phoned home but were never configured (`booted` with a "
        "profile)."},
       BoolSetting(&Config::resume_on_start)},
      {{"configure.heartbeat", "seconds", "30",
        "How often provisiond reads the boot id of each installed node that is ready or failed "
        "(node adopt), and of each ready node of a profile with `recovery:`, over SSH: another "
        "one than an installed node's facts' means it rebooted, and it is configured again; one "
        "that does not answer gets an event, and recovery power-cycles it (docs/power.md). 0: no "
        "heartbeat, and no recovery."},
       NumberSetting(0, 86400, &Config::heartbeat_s)},
      {{"configure.installed_hosts", "path", "/etc/hosts",
        "The file on an installed node (node adopt) that gets the cluster's names, in a block "
        "between two marker lines rewritten at each configure run (a netbooted node's overlay "
        "writes its /etc/hosts). Empty: provisiond writes none."},
       [](const std::string& v, const std::string&, Config& c) {
         if (!v.empty() && (v[0] != '/' || v.find_first_of("'\"\\ \n") != std::string::npos))
           return Status::Invalid("expected an absolute path, found '" + v + "'");
         c.installed_hosts_file = v;
         return Status::Ok();
       }},
      {{"console.listen", "ADDR:PORT|off", "",
        "The network console: the UDP address booting nodes send what they print to (the "
        "kernel's netconsole, with the initrd's steps and the journal). Empty: the cluster "
        "interface's address, port 6666, when there is an interface; off: none."},
       [](const std::string& v, const std::string&, Config& c) {
         if (v.empty() || v == "off") {
           c.console_listen = v;
           return Status::Ok();
         }
         std::string host;
         uint16_t port = 0;
         Status s = ParseListen(v, host, port);
         if (!s.ok()) return s;
         c.console_listen = v;
         return Status::Ok();
       }},
      {{"console.keep_lines", "integer", "5000",
        "Network console lines kept per node, the newest (0: all)."},
       NumberSetting(0, 100000000, &Config::console_keep_lines)},
      {{"console.keep_boots", "integer", "5",
        "Boots whose network console lines are kept per node, the newest (0: all)."},
       NumberSetting(0, 100000, &Config::console_keep_boots)},
      {{"tools_dir", "path", tools.c_str(),
        "Where provision-facts and provision-mount are: static programs that image builds copy "
        "into every image and initrd."},
       PathSetting(&Config::tools_dir)},
      {{"nfs.server", "ganesha|none", "ganesha",
        "How image roots are exported to the nodes (with an interface): nfs-ganesha, run and "
        "supervised by provisiond; none: images without a root only (kernel and initrd)."},
       [](const std::string& v, const std::string&, Config& c) {
         if (v != "ganesha" && v != "none")
           return Status::Invalid("expected ganesha or none, found '" + v + "'");
         c.nfs_server = v;
         return Status::Ok();
       }},
      {{"nfs.ganesha", "path", "/usr/bin/ganesha.nfsd", "The nfs-ganesha program."},
       PathSetting(&Config::ganesha_path)},
      {{"web_dir", "path", web.c_str(),
        "The inventory web page's files, served at / (no outside fetches: it works offline)."},
       PathSetting(&Config::web_dir)},
  };
  return table;
}

// Flattens nested mappings into dotted keys, keeping each leaf's node.
void Flatten(const YAML::Node& map, const std::string& prefix,
             std::vector<std::pair<std::string, std::pair<YAML::Node, YAML::Node>>>& out,
             YamlErrors& errors) {
  for (const auto& kv : map) {
    const std::string key = prefix + kv.first.Scalar();
    if (kv.second.IsMap()) {
      Flatten(kv.second, key + ".", out, errors);
    } else {
      out.push_back({key, {kv.first, kv.second}});
    }
  }
}

}  // namespace

std::string NewTokensFile(const std::string& name) {
  return "# provisiond API tokens: one per line, '<token> [name [role]]'; the role is read\n"
         "# (every read of the API) or admin (everything, the default). SIGHUP reloads this "
         "file.\n" +
         RandomHex(24) + (name.empty() ? "" : " " + name) + " admin\n";
}

const Layout& InstallLayout() {
  static const Layout layout = [] {
    Layout l{PROVISION_DATADIR, PROVISION_TOOLSDIR, false};
#ifdef PROVISION_BUILD_TREE
    // This binary's own folder, not the working directory: an installed copy
    // of it is never in the build folder.
    std::error_code ec;
    auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    const std::string dir = exe.parent_path().string(), tree = PROVISION_BUILD_TREE;
    if (!ec && (dir == tree || dir.starts_with(tree + "/")))
      l = {PROVISION_SOURCE_TREE, PROVISION_BUILD_TREE, true};
#endif
    return l;
  }();
  return layout;
}

bool ApiListenAddress(const Config& config, std::string& host, uint16_t& port) {
  if (config.api_listen == "off") return false;
  if (config.api_listen.empty()) {
    host = config.listen_host;
    port = config.listen_port == 0 ? 0 : 8443;
    return true;
  }
  return ParseListen(config.api_listen, host, port).ok();
}

const std::vector<SettingInfo>& ConfigSettings() {
  static const std::vector<SettingInfo> infos = [] {
    std::vector<SettingInfo> v;
    for (const auto& s : Table()) v.push_back(s.info);
    return v;
  }();
  return infos;
}

Result<Config> ParseConfig(const std::string& text, const std::string& file) {
  Config staging;
  for (const auto& s : Table()) {
    Status st = s.apply(s.info.default_value, "", staging);
    (void)st;  // defaults are valid by construction; checked by a unit test
  }
  YamlErrors errors(file);
  YAML::Node root = ParseYaml(text, errors);
  if (!errors.empty()) return errors.ToStatus();
  if (root.IsDefined() && !root.IsNull()) {
    if (!root.IsMap()) {
      errors.Add(root, "the config must be a mapping of keys to values");
      return errors.ToStatus();
    }
    const std::string base = file.empty() ? "" : std::filesystem::path(file).parent_path().string();
    std::vector<std::pair<std::string, std::pair<YAML::Node, YAML::Node>>> leaves;
    Flatten(root, "", leaves, errors);
    std::map<std::string, int> seen;
    for (const auto& [key, nodes] : leaves) {
      const auto& [key_node, value] = nodes;
      if (seen[key]++) {
        errors.Add(key_node, "duplicate key '" + key + "'");
        continue;
      }
      const Setting* setting = nullptr;
      for (const auto& s : Table())
        if (key == s.info.name) setting = &s;
      if (!setting) {
        errors.Add(key_node, "unknown key '" + key + "' (see provisiond --describe-config)");
        continue;
      }
      if (!value.IsScalar() && !value.IsNull()) {
        errors.Add(value,
                   "'" + key + "' must be " + setting->info.type + ", found " + ScalarText(value));
        continue;
      }
      Status s = setting->apply(value.IsNull() ? "" : value.Scalar(), base, staging);
      if (!s.ok()) errors.Add(value, "'" + key + "': " + s.message());
    }
  }
  if (!errors.empty()) return errors.ToStatus();
  // Relations between settings, named by the settings they tie.
  const std::string where = file.empty() ? std::string("config") : file;
  if (Status s = CheckLeaseTimings(LeaseSettingsOf(staging)); !s.ok())
    return Status::Invalid(where + ": " + s.message());
  if (!staging.control_address.empty()) {
    if (auto a = ParseClusterAddress(staging.control_address, staging.interface); !a.ok())
      return Status::Invalid(where + ": " + a.status().message());
    if (staging.interface.empty() || !sql::IsPostgresUri(staging.database_path()))
      return Status::Invalid(where +
                             ": control.address moves with the active control node: it "
                             "needs interface (where it goes) and a postgresql:// database "
                             "(the lease that decides who is active)");
  }
  return staging;
}

LeaseSettings LeaseSettingsOf(const Config& c) {
  LeaseSettings s;
  s.database = c.database;
  s.holder = c.control_name;
  if (s.holder.empty()) s.holder = HostName();
  s.lease_ms = c.control_lease_ms;
  s.renew_ms = c.control_renew_ms;
  s.stop_margin_ms = c.control_stop_margin_ms;
  return s;
}

Result<Config> LoadConfig(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) return text.status();
  return ParseConfig(*text, path);
}

std::string DescribeConfig() {
  std::string out;
  for (const auto& s : ConfigSettings()) {
    out += std::string(s.name) + " (" + s.type +
           ", default: " + (*s.default_value ? s.default_value : "\"\"") + ")\n    " + s.help +
           "\n";
  }
  return out;
}

}  // namespace prov
