#include "dhcp/dnsmasq.h"

#include <arpa/inet.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "base/file_util.h"
#include "base/template.h"
#include "store/node_state.h"

namespace prov {
namespace fs = std::filesystem;

namespace {

// The name pxe-service gives a boot file ("undionly" for undionly.kpxe):
// dnsmasq adds ".0", so TFTP serves each file under that name too.
std::string PxeServiceName(const std::string& file) {
  return file.substr(0, file.find('.'));
}

std::string JoinLines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += (out.empty() ? "" : "\n") + l;
  return out;
}

std::string_view Word(std::string_view s, size_t& pos) {
  while (pos < s.size() && s[pos] == ' ') ++pos;
  size_t start = pos;
  while (pos < s.size() && s[pos] != ' ') ++pos;
  return s.substr(start, pos - start);
}

// A dotted-quad IPv4 address (what dnsmasq logs; the node's address is
// written to the hosts file from it).
bool IsIpv4(std::string_view s) {
  if (s.empty() || s.size() > 15) return false;
  in_addr addr{};
  return inet_pton(AF_INET, std::string(s).c_str(), &addr) == 1;
}

// Where the message of a "dnsmasq-dhcp[<pid>]: [<serial> ]" line starts, or
// npos: DHCPACK must be the message, not a word in a client-chosen name
// ("client provides name: x DHCPACK(...) ...").
size_t DhcpMessage(std::string_view line) {
  size_t tag = line.find("dnsmasq-dhcp[");
  if (tag == std::string_view::npos) return std::string_view::npos;
  size_t end = line.find("]: ", tag);
  if (end == std::string_view::npos) return std::string_view::npos;
  size_t pos = end + 3;
  size_t digits = pos;
  while (digits < line.size() && line[digits] >= '0' && line[digits] <= '9') ++digits;
  if (digits > pos && digits < line.size() && line[digits] == ' ') pos = digits + 1;
  return pos;
}

}  // namespace

std::optional<DhcpObservation> ParseDnsmasqLogLine(std::string_view line) {
  // "... dnsmasq-dhcp[12]: 3411 DHCPACK(br0) 10.99.0.100 52:54:00:12:34:56 host"
  size_t msg = DhcpMessage(line);
  if (msg != std::string_view::npos && line.substr(msg).starts_with("DHCPACK(")) {
    size_t pos = line.find(')', msg);
    if (pos == std::string_view::npos) return std::nullopt;
    ++pos;
    std::string_view ip = Word(line, pos);
    std::string_view mac = Word(line, pos);
    if (!IsIpv4(ip) || mac.size() != 17) return std::nullopt;
    auto norm = NormalizeMac(mac);
    if (!norm.ok()) return std::nullopt;
    DhcpObservation o;
    o.kind = DhcpObservation::Kind::kAck;
    o.ip = std::string(ip);
    o.mac = *norm;
    return o;
  }
  // "... dnsmasq-tftp[12]: sent /var/lib/provisiond/netboot/tftp/ipxe.efi to 10.99.0.100"
  size_t sent = line.find("dnsmasq-tftp[");
  if (sent != std::string_view::npos) {
    size_t at = line.find("]: sent ", sent);
    if (at == std::string_view::npos) return std::nullopt;
    size_t pos = at + 8;
    std::string_view file = Word(line, pos);
    std::string_view to = Word(line, pos);
    std::string_view ip = Word(line, pos);
    if (to != "to" || !IsIpv4(ip) || file.empty()) return std::nullopt;
    DhcpObservation o;
    o.kind = DhcpObservation::Kind::kTftpSent;
    o.ip = std::string(ip);
    // "sent dir/ to ...": no file (found by fuzzing).
    if (file.back() == '/') return std::nullopt;
    o.file = std::string(file);
    return o;
  }
  return std::nullopt;
}

std::string RenderHostsFile(const AddressBook& book) {
  std::string out;
  for (const auto& n : book.entries) {
    // No "set:" tags here: dnsmasq (2.86 to 2.90) crashes on SIGHUP when a
    // hosts-file entry with a tag has been used; it tags such hosts "known"
    // by itself anyway.
    out += n.mac + "," + n.ip + (n.hostname.empty() ? "" : "," + n.hostname) + "\n";
  }
  return out;
}

Result<std::string> RenderDnsmasqConfig(const DnsmasqSettings& s, const std::string& text) {
  TemplateValues v;
  v["interface"] = s.iface.name;
  v["log_file"] = s.run_dir + "/dnsmasq.log";
  v["lease_file"] = s.run_dir + "/dnsmasq.leases";
  v["hosts_file"] = s.run_dir + "/hosts";
  v["tftp_root"] = s.run_dir + "/tftp";
  const DhcpBootLoader& l = s.loader;
  v["loader"] = l.title;
  // A loader that asks DHCP again (iPXE) is told apart by its user class and
  // sent to its start script instead of its own binary again.
  const bool own_requests = !l.user_class.empty();
  const std::string firmware = own_requests ? "tag:!" + l.tag + "," : "";
  const std::string loader = "tag:" + l.tag + ",";
  std::vector<std::string> classes;
  if (own_requests) {
    classes = {"# Clients: " + l.title + " (user class \"" + l.user_class +
                   "\"), UEFI (client architecture 7 or 9),",
               std::string("# ") +
                   (!l.http_url.empty() && s.mode != DhcpMode::kProxy
                        ? "UEFI HTTP boot (vendor class HTTPClient), "
                        : "") +
                   "else legacy BIOS PXE.",
               "dhcp-userclass=set:" + l.tag + "," + l.user_class};
  } else {
    classes = {"# Clients: UEFI (client architecture 7 or 9), else legacy BIOS PXE."};
  }
  classes.push_back("dhcp-match=set:efi64,option:client-arch,7");
  classes.push_back("dhcp-match=set:efi64,option:client-arch,9");
  // UEFI HTTP boot clients say so in their vendor class ("HTTPClient:Arch:00016").
  const bool http = !l.http_url.empty() && s.mode != DhcpMode::kProxy;
  if (http) classes.push_back("dhcp-vendorclass=set:efihttp,HTTPClient");
  v["client_classes"] = JoinLines(classes);
  std::vector<std::string> boot;
  if (s.mode == DhcpMode::kProxy) {
    v["dhcp_range"] =
        "# proxy-DHCP: another server hands out addresses on this network.\n"
        "dhcp-range=" +
        s.iface.network() + ",proxy," + s.iface.netmask();
    const std::string bios = PxeServiceName(l.bios_file), efi = PxeServiceName(l.uefi_file);
    boot = {"# PXE ROMs are offered " + l.title + " by TFTP" +
                (own_requests ? "; " + l.title + " is sent to provisiond's script." : "."),
            "pxe-service=" + firmware + "x86PC,\"provisiond (BIOS)\"," + bios,
            "pxe-service=" + firmware + "X86-64_EFI,\"provisiond (UEFI)\"," + efi,
            "pxe-service=" + firmware + "BC_EFI,\"provisiond (UEFI)\"," + efi};
    if (own_requests) {
      boot.push_back("pxe-service=" + loader + "x86PC,\"provisiond\"," + l.start_url);
      boot.push_back("pxe-service=" + loader + "X86-64_EFI,\"provisiond\"," + l.start_url);
      boot.push_back("dhcp-boot=" + loader + l.start_url);
    }
  } else {
    v["dhcp_range"] = "dhcp-range=" + s.range_first + "," + s.range_last + "," + s.iface.netmask() +
                      ",12h\ndhcp-authoritative";
    boot = {"dhcp-boot=" + firmware + "tag:!efi64," + (http ? "tag:!efihttp," : "") + l.bios_file,
            "dhcp-boot=" + firmware + "tag:efi64," + l.uefi_file};
    if (http) {
      boot.push_back("# UEFI HTTP boot: " + l.title +
                     " by HTTP, no TFTP. The firmware takes the answer only with option 60 "
                     "back.");
      boot.push_back("dhcp-boot=" + firmware + "tag:efihttp," + l.http_url);
      boot.push_back("dhcp-option-force=" + firmware + "tag:efihttp,60,HTTPClient");
    }
    if (own_requests) {
      boot.push_back("dhcp-boot=" + loader + l.start_url);
      for (const auto& [why, option] : l.options) {
        boot.push_back("# " + why);
        boot.push_back("dhcp-option-force=" + loader + option);
      }
    }
    if (s.router_advertisements) {
      boot.push_back(
          "# Router advertisements only (no DHCPv6): iPXE stops waiting for IPv6 at once.");
      boot.push_back("enable-ra");
      boot.push_back("dhcp-range=::,constructor:" + s.iface.name + ",ra-only");
    }
  }
  v["boot_options"] = JoinLines(boot);
  return RenderTemplate(text, v, s.pxe_dir + "/dnsmasq.conf.in");
}

Result<std::unique_ptr<DnsmasqService>> DnsmasqService::Start(const DnsmasqSettings& settings,
                                                              Store& store, Observer observer) {
  std::unique_ptr<DnsmasqService> svc(new DnsmasqService(settings, store, std::move(observer)));
  const std::string& dir = settings.run_dir;
  svc->config_path_ = dir + "/dnsmasq.conf";
  svc->hosts_path_ = dir + "/hosts";
  svc->lease_path_ = dir + "/dnsmasq.leases";
  svc->log_path_ = dir + "/dnsmasq.log";
  svc->tftp_root_ = dir + "/tftp";
  Status s = MakeDirs(svc->tftp_root_);
  if (!s.ok()) return s;
  // dnsmasq drops to `nobody`; it must reach the hosts file and TFTP root.
  chmod(dir.c_str(), 0755);
  chmod(svc->tftp_root_.c_str(), 0755);
  std::vector<std::pair<std::string, std::string>> tftp;  // source, name in the TFTP root
  for (const auto& [from, name] : settings.loader.tftp_files) tftp.emplace_back(from, name);
  // Proxy-DHCP's PXE menu names a file without its extension; the client
  // asks for it with ".0".
  for (const auto& [from, name] : settings.loader.tftp_files)
    tftp.emplace_back(from, PxeServiceName(name) + ".0");
  for (const auto& [from, name] : tftp) {
    std::error_code ec;
    const std::string tmp = svc->tftp_root_ + "/." + name + ".tmp";
    fs::copy_file(from, tmp, fs::copy_options::overwrite_existing, ec);
    if (ec)
      return Status::NotFound("boot loader binary " + from + " is missing (" +
                              settings.loader.package + ")");
    chmod(tmp.c_str(), 0644);
    fs::rename(tmp, svc->tftp_root_ + "/" + name, ec);
    if (ec) return Status::Internal("cannot install " + name + ": " + ec.message());
  }
  auto text = ReadFile(settings.pxe_dir + "/dnsmasq.conf.in");
  if (!text.ok()) return text.status();
  auto config = RenderDnsmasqConfig(settings, *text);
  if (!config.ok()) return config.status();
  // A dnsmasq left running by a provisiond killed with SIGKILL keeps serving
  // if it runs with this very config (adopted below); otherwise it is stopped.
  auto running_config = ReadFile(svc->config_path_);
  const bool same_config = running_config.ok() && *running_config == *config;
  s = WriteFileAtomic(svc->config_path_, *config);
  if (!s.ok()) return s;
  const pid_t leftover = AdoptOrStopLeftover("dnsmasq", "--conf-file=" + svc->config_path_,
                                             same_config, EventRecorder(store, "dnsmasq"));
  s = svc->SyncReservations();
  if (!s.ok()) return s;
  if (settings.sync_tftp) settings.sync_tftp();
  // Only what dnsmasq logs from now on is news.
  struct stat st {};
  if (stat(svc->log_path_.c_str(), &st) == 0) svc->log_offset_ = static_cast<uint64_t>(st.st_size);
  ProcessSpec spec;
  spec.argv = {settings.program, "--keep-in-foreground", "--conf-file=" + svc->config_path_};
  spec.output_file = settings.run_dir + "/dnsmasq.stderr";
  // Often enough that a DHCP stage is recorded before the script request
  // that follows it a few milliseconds later.
  auto process = SupervisedProcess::Start(
      "dnsmasq", spec, "on " + settings.iface.name + ", " + ToString(settings.mode) + " DHCP",
      EventRecorder(store, "dnsmasq"), 50, [p = svc.get()] { p->Tick(); }, leftover);
  if (!process.ok()) return process.status();
  svc->process_ = std::move(*process);
  // An adopted dnsmasq read the hosts file before SyncReservations rewrote it.
  if (leftover > 0 && svc->process_->pid() == leftover) {
    if (Status hup = svc->process_->Signal(SIGHUP); !hup.ok())
      spdlog::warn("the adopted dnsmasq ({}) did not get SIGHUP: {}", leftover, hup.message());
  }
  return svc;
}

Status DnsmasqService::AssignAddresses() {
  if (settings_.mode != DhcpMode::kFull) return Status::Ok();
  auto first = ParseIpv4(settings_.range_first);
  auto last = ParseIpv4(settings_.range_last);
  if (!first.ok() || !last.ok()) return Status::Invalid("bad DHCP range");
  return store_.Transact([&](StoreTx& tx) -> Status {
    auto nodes = tx.ListNodes();
    std::set<uint32_t> used;
    for (const auto& n : nodes)
      if (auto a = ParseIpv4(n.ip); a.ok()) used.insert(*a);
    uint32_t next = *first;
    for (auto& n : nodes) {
      if (!n.ip.empty() || n.state == NodeState::kDiscovered || n.state == NodeState::kRetired)
        continue;
      while (next <= *last && used.count(next)) ++next;
      if (next > *last)
        return Status::Conflict("the DHCP range " + settings_.range_first + "-" +
                                settings_.range_last + " has no free address for " + n.name());
      n.ip = FormatIpv4(next);
      used.insert(next);
      Status s = tx.UpdateNode(n);
      if (!s.ok()) return s;
      EventRecord e{.node_id = n.id,
                    .node = n.name(),
                    .kind = "changed",
                    .detail = "reserved address " + n.ip,
                    .who = "dnsmasq"};
      s = tx.AppendEvent(e);
      if (!s.ok()) return s;
    }
    return Status::Ok();
  });
}

Status DnsmasqService::SyncReservations() {
  std::lock_guard lock(sync_mu_);
  // Boot stages and phone-homes write node rows all the time; addresses
  // change rarely, and only then is there anything to do.
  if (store_.AddressesVersion() == synced_addresses_) return Status::Ok();
  Status s = AssignAddresses();
  if (!s.ok()) spdlog::warn("{}", s.message());
  auto book = store_.Addresses();
  synced_addresses_ = book->version;
  std::string hosts = RenderHostsFile(*book);
  if (hosts == hosts_content_ && fs::exists(hosts_path_)) return Status::Ok();
  s = WriteFileAtomic(hosts_path_, hosts, 0644);
  if (!s.ok()) return s;
  hosts_content_ = hosts;
  // dnsmasq re-reads dhcp-hostsfile; one that did not get the signal is
  // about to be restarted by its supervisor, and reads it at its start.
  if (process_) return process_->Signal(SIGHUP);
  return Status::Ok();
}

void DnsmasqService::Tick() {
  ReadLog();
  Status s = SyncReservations();
  if (!s.ok()) spdlog::warn("reservations not synced: {}", s.message());
  if (settings_.sync_tftp) settings_.sync_tftp();
}

void DnsmasqService::ReadLog() {
  std::ifstream in(log_path_, std::ios::binary);
  if (!in) return;
  in.seekg(0, std::ios::end);
  uint64_t size = static_cast<uint64_t>(in.tellg());
  if (size < log_offset_) log_offset_ = 0;  // truncated or replaced
  if (size == log_offset_) return;
  in.seekg(static_cast<std::streamoff>(log_offset_));
  std::string chunk(size - log_offset_, '\0');
  in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
  chunk.resize(static_cast<size_t>(in.gcount()));
  log_offset_ += chunk.size();
  log_partial_ += chunk;
  size_t start = 0, nl;
  while ((nl = log_partial_.find('\n', start)) != std::string::npos) {
    auto obs = ParseDnsmasqLogLine(std::string_view(log_partial_).substr(start, nl - start));
    if (obs && observer_) observer_(*obs);
    start = nl + 1;
  }
  log_partial_.erase(0, start);
  if (log_partial_.size() > 65536) log_partial_.clear();  // a runaway line
}

}  // namespace prov
