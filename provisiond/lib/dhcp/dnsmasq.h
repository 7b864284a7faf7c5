// dnsmasq as provisiond's child: the config rendered from pxe/dnsmasq.conf.in
// (written to a temporary file and renamed), reservations by MAC in a hosts
// file that is rewritten and reloaded (SIGHUP) when the inventory changes,
// restarted with an event if it dies, stopped with provisiond. Its log tells
// provisiond which node got an address (DHCP) and which fetched an iPXE
// binary (TFTP).
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/netinfo.h"
#include "base/supervisor.h"
#include "store/store.h"

namespace prov {

struct DnsmasqSettings {
  std::string program = "/usr/sbin/dnsmasq";
  std::string mode = "full";  // full | proxy
  InterfaceAddress iface;
  std::string range_first, range_last;  // full mode
  std::string boot_url;
  std::string uefi_binary = "ipxe.efi";  // what UEFI firmware gets by TFTP
  std::string ipxe_dir;
  std::string pxe_dir;
  std::string run_dir;  // config, hosts, leases, log, tftp root
  // Send IPv6 router advertisements (full mode, interface with a routable
  // IPv6 address): iPXE otherwise waits ~13 s for IPv6 before booting.
  bool router_advertisements = false;
};

// One thing dnsmasq saw, from its log.
struct DhcpObservation {
  enum class Kind { kAck, kTftpSent };
  Kind kind = Kind::kAck;
  std::string mac;   // kAck
  std::string ip;    // both
  std::string file;  // kTftpSent: the file's name
};

// Parses one line of dnsmasq's log; nullopt for lines about anything else.
// Untrusted input (a client chooses its hostname): never throws.
std::optional<DhcpObservation> ParseDnsmasqLogLine(std::string_view line);

// dhcp-hostsfile lines: "<mac>,<ip>,<hostname>" for every node
// that has an address and is not discovered or retired.
std::string RenderHostsFile(const std::vector<NodeRecord>& nodes);

// The dnsmasq config for `settings`, from the template text.
Result<std::string> RenderDnsmasqConfig(const DnsmasqSettings& settings,
                                        const std::string& template_text);

class DnsmasqService {
 public:
  using Observer = std::function<void(const DhcpObservation&)>;
  // Prepares run_dir (tftp root with the iPXE binaries, config, hosts file),
  // starts dnsmasq and the thread that supervises it.
  static Result<std::unique_ptr<DnsmasqService>> Start(const DnsmasqSettings& settings,
                                                       Store& store, Observer observer);
  ~DnsmasqService() { process_.reset(); }  // the thread goes before what it uses

  pid_t pid() const { return process_ ? process_->pid() : -1; }
  int restarts() const { return process_ ? process_->restarts() : 0; }
  // Rewrites the hosts file now if the inventory changed (also done by the
  // supervising thread within a tick of any change).
  Status SyncReservations();

 private:
  DnsmasqService(const DnsmasqSettings& s, Store& store, Observer o)
      : settings_(s), store_(store), observer_(std::move(o)) {}
  void Tick();
  void ReadLog();
  Status AssignAddresses();

  DnsmasqSettings settings_;
  Store& store_;
  Observer observer_;
  std::string config_path_, hosts_path_, lease_path_, log_path_, tftp_root_;

  // Used by Start and then only by the supervising thread (Tick).
  std::mutex sync_mu_;
  std::string hosts_content_;
  int64_t synced_event_ = -1;
  uint64_t log_offset_ = 0;
  std::string log_partial_;
  std::unique_ptr<SupervisedProcess> process_;  // last member: stopped first
};

}  // namespace prov
