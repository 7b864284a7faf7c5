// Each part's settings as the composition root makes them from a config
// (settings.h): a config with no default left, and what each part gets.
#include "settings.h"

#include <doctest/doctest.h>

namespace prov {
namespace {

// Every setting the translations read, none at its default.
Config Site() {
  auto c = ParseConfig(
      "listen: 127.0.0.1:9100\n"
      "data_dir: /srv/prov\n"
      "images_dir: /opt/prov/images\n"
      "pxe_dir: /opt/prov/pxe\n"
      "ipxe_dir: /opt/ipxe\n"
      "signed_loader_dir: /opt/signed\n"
      "tools_dir: /opt/prov/tools\n"
      "image_store: /srv/images\n"
      "ansible_playbook: /opt/ansible/bin/ansible-playbook\n"
      "ansible_roles_path: /opt/roles:/srv/roles\n"
      "ansible_python_interpreter: /usr/bin/python3.11\n"
      "max_body_bytes: 4096\n"
      "listen_threads: 3\n"
      "listen_connections: 900\n"
      "listen_api_requests: 17\n"
      "listen_idle_timeout_s: 12\n"
      "listen_backlog: 777\n"
      "interface: eth9\n"
      "dhcp:\n  mode: proxy\n  uefi_binary: snponly.efi\n  uefi_loader: ipxe\n"
      "dnsmasq: /opt/dnsmasq\n"
      "ipmi_credentials_file: /etc/prov/ipmi\n"
      "power:\n  command: /usr/local/bin/plug\n"
      "ssh:\n  user: admin\n  port: 2222\n"
      "discovery:\n  max_pending: 9\n"
      "configure:\n  workers: 5\n  task_timeout: 77\n  connect_retry: 13\n"
      "console:\n  listen: '[fd00::1]:7000'\n"
      "nfs:\n  ganesha: /opt/ganesha.nfsd\n",
      "site.yaml");
  REQUIRE_MESSAGE(c.ok(), c.status().message());
  return *c;
}

InterfaceAddress Eth9() {
  InterfaceAddress i;
  i.name = "eth9";
  i.address = "10.42.0.1";
  i.prefix = 24;
  i.address_host = 0x0a2a0001;
  i.netmask_host = 0xffffff00;
  return i;
}

}  // namespace

TEST_CASE("settings: Ansible, the configurator and power from the config") {
  const Config c = Site();
  AnsibleTool a = AnsibleToolOf(c);
  CHECK(a.program == "/opt/ansible/bin/ansible-playbook");
  CHECK(a.roles_path == "/opt/roles:/srv/roles");
  CHECK(a.python_interpreter == "/usr/bin/python3.11");

  ConfigureSettings s = ConfigureSettingsOf(c, "/srv/prov/ssh/id_ed25519", "ssh-ed25519 AAAA");
  CHECK(s.key_path == "/srv/prov/ssh/id_ed25519");
  CHECK(s.public_key == "ssh-ed25519 AAAA");
  CHECK(s.ssh_user == "admin");
  CHECK(s.ssh_port == 2222);
  CHECK(s.workers == 5);
  CHECK(s.task_timeout_s == 77);
  CHECK(s.connect_retry_s == 13);
  CHECK(s.ansible_dir == "/srv/prov/ansible");
  CHECK(s.ansible.program == a.program);
  CHECK(s.ansible.roles_path == a.roles_path);
  CHECK(s.secrets == nullptr);  // the daemon's to give
  CHECK(s.clock == nullptr);    // the real one

  PowerSettings p = PowerSettingsOf(c);
  CHECK(p.interface == "eth9");
  CHECK(p.Site("ipmi_credentials_file") == "/etc/prov/ipmi");
  CHECK(p.Site("power.command") == "/usr/local/bin/plug");
  CHECK(p.state_dir == c.data_dir + "/power");
  CHECK(p.Site("power.ipmitool").empty());
  CHECK(!p.secret);  // the daemon's to give
}

TEST_CASE("settings: the boot service and image builds from the config") {
  const Config c = Site();
  BootSettings b = BootSettingsOf(c);
  CHECK(b.pxe_dir == "/opt/prov/pxe");
  CHECK(b.loader_dir == "/opt/ipxe");
  CHECK(b.uefi_file == "snponly.efi");
  CHECK(b.uefi_loader == "ipxe");
  CHECK(b.signed_loader_dir == "/opt/signed");
  CHECK(b.tftp_dir == "/srv/prov/netboot/tftp");
  CHECK(b.max_discovered == 9);
  // Addresses are reserved only when provisiond gives them (full mode).
  CHECK_FALSE(b.reserved_addresses);
  Config full = c;
  full.dhcp_mode = DhcpMode::kFull;
  CHECK(BootSettingsOf(full).reserved_addresses);
  full.interface.clear();
  CHECK_FALSE(BootSettingsOf(full).reserved_addresses);

  ImageBuildOptions i = ImageBuildOptionsOf(c);
  CHECK(i.initrd_builder == "/opt/prov/images/initramfs/build-initrd.sh");
  CHECK(i.agent_dir == "/opt/prov/images/agent");
  CHECK(i.tools_dir == "/opt/prov/tools");
}

TEST_CASE("settings: the listener from the config, the descriptor limit and the CPUs") {
  const Config c = Site();
  HttpServerOptions h = HttpListenerOf(c, 0, 16);
  CHECK(h.host == "127.0.0.1");
  CHECK(h.port == 9100);
  CHECK(h.max_body_bytes == 4096);
  CHECK(h.connection_timeout_s == 12);
  CHECK(h.threads == 3);
  CHECK(h.connection_limit == 900);
  CHECK(h.max_api_requests == 17);
  CHECK(h.listen_backlog == 777);
  // Connections may take half of the descriptors, no more.
  CHECK(HttpListenerOf(c, 1024, 16).connection_limit == 512);
  CHECK(HttpListenerOf(c, 4096, 16).connection_limit == 900);
  // listen_threads -1: one event loop per CPU, at least two.
  Config per_cpu = c;
  per_cpu.listen_threads = -1;
  CHECK(HttpListenerOf(per_cpu, 0, 16).threads == 16);
  CHECK(HttpListenerOf(per_cpu, 0, 1).threads == 2);
}

TEST_CASE("settings: dnsmasq, NFS and the console on the cluster interface") {
  Config c = Site();
  auto dns = DnsmasqSettingsOf(c, Eth9(), true);
  REQUIRE_MESSAGE(dns.ok(), dns.status().message());
  CHECK(dns->program == "/opt/dnsmasq");
  CHECK(dns->mode == DhcpMode::kProxy);
  CHECK(dns->iface.address == "10.42.0.1");
  CHECK(dns->pxe_dir == "/opt/prov/pxe");
  CHECK(dns->run_dir == "/srv/prov/netboot");
  CHECK_FALSE(dns->router_advertisements);  // proxy mode: the other server's
  c.dhcp_mode = DhcpMode::kFull;
  dns = DnsmasqSettingsOf(c, Eth9(), true);
  REQUIRE(dns.ok());
  CHECK(dns->router_advertisements);
  // Full mode's default range: the upper half of the subnet.
  CHECK(dns->range_first == "10.42.0.128");
  CHECK(dns->range_last == "10.42.0.254");
  CHECK_FALSE(DnsmasqSettingsOf(c, Eth9(), false)->router_advertisements);

  NfsSettings nfs = NfsSettingsOf(c, Eth9());
  CHECK(nfs.ganesha == "/opt/ganesha.nfsd");
  CHECK(nfs.template_path == "/opt/prov/images/nfs/ganesha.conf.in");
  CHECK(nfs.listen_address == "10.42.0.1");
  CHECK(nfs.clients == "10.42.0.0/24");
  CHECK(nfs.export_path == "/srv/images");
  CHECK(nfs.run_dir == "/srv/prov/nfs");

  auto console = ConsoleListenerOf(c, Eth9());
  REQUIRE(console);
  CHECK(console->address == "fd00::1");
  CHECK(console->port == 7000);
  c.console_listen = "";  // the cluster interface's address, the default port
  console = ConsoleListenerOf(c, Eth9());
  REQUIRE(console);
  CHECK(console->address == "10.42.0.1");
  CHECK(console->port == 6666);
  CHECK_FALSE(ConsoleListenerOf(c, std::nullopt));
  c.console_listen = "off";
  CHECK_FALSE(ConsoleListenerOf(c, Eth9()));
}

}  // namespace prov
