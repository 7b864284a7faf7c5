#include "settings.h"

#include <algorithm>

#include "db/sql.h"
#include "dhcp/preflight.h"

namespace prov {

AnsibleTool AnsibleToolOf(const Config& config) {
  return AnsibleTool{.program = config.ansible_playbook,
                     .roles_path = config.ansible_roles_path,
                     .python_interpreter = config.ansible_python_interpreter};
}

BootSettings BootSettingsOf(const Config& config) {
  BootSettings boot;
  boot.pxe_dir = config.pxe_dir;
  boot.loader_dir = config.ipxe_dir;
  boot.uefi_file = config.uefi_binary;
  boot.uefi_loader = config.uefi_loader;
  boot.signed_loader_dir = config.signed_loader_dir;
  boot.tftp_dir = config.data_dir + "/netboot/tftp";  // dnsmasq's run_dir + /tftp
  // provisiond reserves every node's address only in full DHCP mode.
  boot.reserved_addresses = !config.interface.empty() && config.dhcp_mode == DhcpMode::kFull;
  boot.max_discovered = config.max_discovered;
  return boot;
}

ConfigureSettings ConfigureSettingsOf(const Config& config, const std::string& key_path,
                                      const std::string& public_key) {
  ConfigureSettings configure;
  configure.key_path = key_path;
  configure.public_key = public_key;
  configure.ssh_user = config.ssh_user;
  configure.ssh_port = config.ssh_port;
  configure.workers = config.configure_workers;
  configure.task_timeout_s = config.task_timeout_s;
  configure.connect_retry_s = config.connect_retry_s;
  configure.installed_hosts_file = config.installed_hosts_file;
  configure.ansible_dir = config.data_dir + "/ansible";
  configure.ansible = AnsibleToolOf(config);
  if (!config.tools_dir.empty()) configure.facts_program = config.tools_dir + "/provision-facts";
  return configure;
}

PowerSettings PowerSettingsOf(const Config& config) {
  PowerSettings power;
  power.interface = config.interface;
  // The drivers' own keys of the config (power/ipmi.cc, power/command.cc).
  power.site = {{"ipmi_credentials_file", config.ipmi_credentials_file},
                {"power.command", config.power_command}};
  power.state_dir = config.data_dir + "/power";
  return power;
}

ImageBuildOptions ImageBuildOptionsOf(const Config& config) {
  ImageBuildOptions build;
  build.initrd_builder = config.images_dir + "/initramfs/build-initrd.sh";
  build.agent_dir = config.images_dir + "/agent";
  build.tools_dir = config.tools_dir;
  build.key_cache_dir = config.data_dir + "/keys";
  return build;
}

HttpServerOptions HttpListenerOf(const Config& config, uint64_t descriptor_limit, unsigned cpus) {
  HttpServerOptions http;
  http.host = config.listen_host;
  http.port = config.listen_port;
  http.max_body_bytes = config.max_body_bytes;
  http.connection_timeout_s = static_cast<unsigned>(config.listen_idle_timeout_s);
  // The boot path on event loops, one per CPU (HttpServer: nodes booting at
  // once cost no thread each; API routes still get one of their own).
  http.threads = config.listen_threads >= 0 ? static_cast<unsigned>(config.listen_threads)
                                            : std::max(2u, cpus);
  // A connection takes a descriptor, and a file being sent on it another:
  // the limit keeps half of the descriptors for the rest of provisiond.
  http.connection_limit = static_cast<unsigned>(config.listen_connections);
  if (descriptor_limit > 0 && http.connection_limit > descriptor_limit / 2)
    http.connection_limit = static_cast<unsigned>(descriptor_limit / 2);
  http.max_api_requests = static_cast<unsigned>(config.listen_api_requests);
  http.listen_backlog = static_cast<unsigned>(config.listen_backlog);  // at most 1,000,000 (config)
  return http;
}

NfsSettings NfsSettingsOf(const Config& config, const InterfaceAddress& iface) {
  NfsSettings nfs;
  nfs.ganesha = config.ganesha_path;
  nfs.template_path = config.images_dir + "/nfs/ganesha.conf.in";
  nfs.listen_address = iface.address;
  nfs.clients = iface.network() + "/" + std::to_string(iface.prefix);
  nfs.export_path = config.effective_image_store();
  nfs.run_dir = config.data_dir + "/nfs";
  nfs.root_images = sql::IsPostgresUri(config.database_path());
  return nfs;
}

Result<DnsmasqSettings> DnsmasqSettingsOf(const Config& config, const InterfaceAddress& iface,
                                          bool routable_ipv6) {
  DnsmasqSettings dns;
  dns.program = config.dnsmasq_path;
  dns.mode = config.dhcp_mode;
  dns.iface = iface;
  if (Status s = EffectiveRange(config, iface, dns.range_first, dns.range_last); !s.ok()) return s;
  dns.pxe_dir = config.pxe_dir;
  dns.run_dir = config.data_dir + "/netboot";
  dns.router_advertisements = config.dhcp_mode == DhcpMode::kFull && routable_ipv6;
  return dns;
}

std::optional<ConsoleListenerSettings> ConsoleListenerOf(
    const Config& config, const std::optional<InterfaceAddress>& iface) {
  if (config.console_listen == "off") return std::nullopt;
  ConsoleListenerSettings where;
  if (config.console_listen.empty()) {
    if (!iface) return std::nullopt;
    where.address = iface->address;
    return where;
  }
  // ADDR:PORT or [ADDR]:PORT, checked when the config was read.
  const size_t colon = config.console_listen.rfind(':');
  where.address = config.console_listen.substr(0, colon);
  if (where.address.size() > 2 && where.address.front() == '[')
    where.address = where.address.substr(1, where.address.size() - 2);
  where.port = static_cast<uint16_t>(std::stoi(config.console_listen.substr(colon + 1)));
  return where;
}

}  // namespace prov
