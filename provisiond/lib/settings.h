// What each part of provisiond is given, made from the one Config: the
// composition root (daemon.cc) calls these, then wires the parts together
// (the callbacks between them are its own). Each translation is a function of
// the config and of what the machine says (an interface, a limit), so each is
// tested on its own (settings_test.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/netinfo.h"
#include "boot/boot.h"
#include "config.h"
#include "configure/configurator.h"
#include "console/console_listener.h"
#include "dhcp/dnsmasq.h"
#include "http/http_server.h"
#include "images/build_step.h"
#include "images/nfs.h"
#include "playbook/runner_choice.h"
#include "power/driver.h"

namespace prov {

// ansible_playbook, ansible_roles_path, ansible_python_interpreter.
AnsibleTool AnsibleToolOf(const Config& config);

// The boot service's settings (loaders, TFTP root, reservations); the
// callbacks into the inventory, NFS and the console are the daemon's.
BootSettings BootSettingsOf(const Config& config);

// The configurator's, with the control key (`key_path` and its public half).
ConfigureSettings ConfigureSettingsOf(const Config& config, const std::string& key_path,
                                      const std::string& public_key);

PowerSettings PowerSettingsOf(const Config& config);

ImageBuildOptions ImageBuildOptionsOf(const Config& config);

// The plain listener (boot path and API). `descriptor_limit`: the process's
// open-files limit (0: none), of which connections may take half;
// `cpus`: event loops when listen_threads is -1 (at least 2).
HttpServerOptions HttpListenerOf(const Config& config, uint64_t descriptor_limit, unsigned cpus);

// The NFS server's, on the cluster interface `iface`, exporting the image store to its subnet.
NfsSettings NfsSettingsOf(const Config& config, const InterfaceAddress& iface);

// dnsmasq's on `iface`: program, mode, address range, folders. The boot
// loaders it offers and the TFTP sync are the boot service's to fill.
// `routable_ipv6`: the interface has a routable IPv6 address (router
// advertisements in full mode).
Result<DnsmasqSettings> DnsmasqSettingsOf(const Config& config, const InterfaceAddress& iface,
                                          bool routable_ipv6);

// The network console's listener: console.listen's address and port, or
// the cluster interface's address when it is empty; nullopt when it is
// "off", or empty with no cluster interface.
std::optional<ConsoleListenerSettings> ConsoleListenerOf(
    const Config& config, const std::optional<InterfaceAddress>& iface);

}  // namespace prov
