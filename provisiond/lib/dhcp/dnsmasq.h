// dnsmasq as provisiond's child: the config rendered from pxe/dnsmasq.conf.in
// (written to a temporary file and renamed), reservations by MAC in a hosts
// file that is rewritten and reloaded (SIGHUP) when the inventory changes,
// restarted with an event if it dies, stopped with provisiond. Its log tells
// provisiond which node got an address (DHCP) and which fetched the boot
// loader's binary (TFTP).
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
#include "dhcp/dhcp_mode.h"
#include "store/store.h"

namespace prov {

// The boot loader as DHCP and TFTP see it. The daemon copies it from the
// loader's description (boot/loader.h, which dhcp/, earlier on the node's
// path, does not include).
struct DhcpBootLoader {
  std::string title;       // "iPXE": in comments and errors
  std::string tag;         // dnsmasq's tag for the loader's own requests: its name
  std::string user_class;  // their DHCP user class ("iPXE"); empty: it makes none
  std::string bios_file;   // what BIOS PXE firmware loads by TFTP: "undionly.kpxe"
  std::string uefi_file;   // what UEFI x86-64 firmware loads: "ipxe.efi" or "shimx64.efi"
  std::string start_url;   // what the loader's own requests are sent to
  // UEFI HTTP boot (full mode): the URL firmware that asks as an HTTP client
  // (vendor class "HTTPClient", architecture 16) loads the loader from, no
  // TFTP; empty: such firmware is not answered.
  std::string http_url;
  // {why, "NUMBER,VALUE"}: added to answers to the loader's requests (full mode).
  std::vector<std::pair<std::string, std::string>> options;
  // Binaries TFTP serves: {full path, name in the TFTP root}.
  std::vector<std::pair<std::string, std::string>> tftp_files;
  std::string package;  // where they come from ("Debian package ipxe")
};

struct DnsmasqSettings {
  std::string program = "/usr/sbin/dnsmasq";
  DhcpMode mode = DhcpMode::kFull;
  InterfaceAddress iface;
  std::string range_first, range_last;  // full mode
  DhcpBootLoader loader;
  std::string pxe_dir;
  std::string run_dir;  // config, hosts, leases, log, tftp root
  // Send IPv6 router advertisements (full mode, interface with a routable
  // IPv6 address): iPXE otherwise waits ~13 s for IPv6 before booting.
  bool router_advertisements = false;
  // Called before dnsmasq starts and on every tick of its supervisor: keeps
  // the per-node directories of the TFTP root (a node's own loader) in step
  // with the inventory. May be empty.
  std::function<void()> sync_tftp;
};

// One thing dnsmasq saw, from its log.
struct DhcpObservation {
  enum class Kind { kAck, kTftpSent };
  Kind kind = Kind::kAck;
  std::string mac;   // kAck
  std::string ip;    // both
  std::string file;  // kTftpSent: the file's path as logged (in the TFTP root)
};

// Parses one line of dnsmasq's log; nullopt for lines about anything else.
// Untrusted input (a client chooses its hostname): never throws.
std::optional<DhcpObservation> ParseDnsmasqLogLine(std::string_view line);

// dhcp-hostsfile lines: "<mac>,<ip>,<hostname>" for every entry of the
// address book (the nodes that have an address and are not discovered or
// retired: Store::Addresses).
std::string RenderHostsFile(const AddressBook& book);

// The dnsmasq config for `settings`, from the template text.
Result<std::string> RenderDnsmasqConfig(const DnsmasqSettings& settings,
                                        const std::string& template_text);

class DnsmasqService {
 public:
  using Observer = std::function<void(const DhcpObservation&)>;
  // Prepares run_dir (tftp root with the boot loader's binaries, config,
  // hosts file),
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
  int64_t synced_addresses_ = -1;  // the address counter the hosts file was written at
  uint64_t log_offset_ = 0;
  std::string log_partial_;
  std::unique_ptr<SupervisedProcess> process_;  // last member: stopped first
};

}  // namespace prov
