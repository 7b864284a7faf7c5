#include "dhcp/init.h"

#include <ctime>
#include <filesystem>

#include "base/file_util.h"
#include "base/netinfo.h"
#include "config.h"

namespace prov {
namespace {

std::string Today() {
  char buf[32];
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

// Whether an existing config may be replaced: an operator's only with
// --force; the package's untouched default always.
Status MayReplace(const InitOptions& o) {
  if (!std::filesystem::exists(o.config_path) || o.force) return Status::Ok();
  auto current = ReadFile(o.config_path);
  auto shipped = o.default_config.empty() ? Result<std::string>(Status::NotFound(""))
                                          : ReadFile(o.default_config);
  if (current.ok() && shipped.ok() && *current == *shipped) return Status::Ok();
  return Status::Conflict(o.config_path +
                          " exists and is not the package's default: init does not overwrite "
                          "it; pass --force to replace it (the old one is kept beside it)");
}

}  // namespace

Result<InitResult> InitControlNode(const InitOptions& o) {
  if (o.dhcp_mode != "auto" && o.dhcp_mode != "full" && o.dhcp_mode != "proxy")
    return Status::Invalid("--dhcp-mode: expected auto, full or proxy, found '" + o.dhcp_mode +
                           "'");
  Status s = MayReplace(o);
  if (!s.ok()) return s;
  auto iface = o.lookup(o.interface);
  if (!iface.ok()) return iface.status();
  if (iface->address_host >> 24 == 127)
    return Status::Invalid(o.interface + " is a loopback interface: give the cluster interface");

  InitResult r;
  if (auto chosen = ParseDhcpMode(o.dhcp_mode)) r.mode = *chosen;
  if (o.dhcp_mode == "auto") {
    if (!o.probe) return Status::Internal("no DHCP probe");
    auto seen = o.probe(o.interface, o.probe_ms);
    if (!seen.ok())
      return Status::Error(seen.status().code(),
                           "cannot probe for other DHCP servers on " + o.interface + ": " +
                               seen.status().message() +
                               "; pass --dhcp-mode full (a network of its own) or proxy (another "
                               "server gives the addresses)");
    std::string leasing, proxies;
    for (const auto& server : *seen) {
      std::string& list = server.proxy ? proxies : leasing;
      list += (list.empty() ? "" : ", ") + server.address;
    }
    if (!leasing.empty()) {
      r.mode = DhcpMode::kProxy;
      r.reason = "a DHCP server already gives addresses on " + o.interface + " (" + leasing +
                 "): provisiond adds only the boot information (proxy mode)";
    } else {
      r.mode = DhcpMode::kFull;
      r.reason = "no other DHCP server answered on " + o.interface + " within " +
                 std::to_string(o.probe_ms / 1000) +
                 " s: provisiond gives the nodes their addresses (full mode)";
    }
    if (!proxies.empty())
      r.notes.push_back("another PXE service (proxy DHCP) answers on " + o.interface + " (" +
                        proxies + "): nodes may boot from it instead; turn it off");
  } else {
    r.reason = "chosen with --dhcp-mode";
  }

  if (r.mode == DhcpMode::kFull) {
    Config c;
    c.interface = o.interface;
    if (!o.range.empty()) {
      size_t dash = o.range.find('-');
      auto first = ParseIpv4(o.range.substr(0, dash));
      auto last = dash == std::string::npos ? first : ParseIpv4(o.range.substr(dash + 1));
      if (dash == std::string::npos || !first.ok() || !last.ok() || *first > *last ||
          !iface->Contains(*first) || !iface->Contains(*last) ||
          (iface->address_host >= *first && iface->address_host <= *last))
        return Status::Invalid("--range " + o.range + ": expected FIRST-LAST inside " +
                               iface->network() + "/" + std::to_string(iface->prefix) +
                               " without " + iface->address);
      c.dhcp_range_first = o.range.substr(0, dash);
      c.dhcp_range_last = o.range.substr(dash + 1);
    }
    std::string first, last;
    s = EffectiveRange(c, *iface, first, last);
    if (!s.ok()) return s;
    r.range = first + "-" + last;
  }

  const std::string subnet = iface->network() + "/" + std::to_string(iface->prefix);
  r.config_text =
      "# Written by `provisiond init` on " + Today() + " for the cluster interface " + o.interface +
      " (" + iface->address + "/" + std::to_string(iface->prefix) + ").\n# DHCP: " + r.reason +
      ".\n# `provisiond --describe-config` lists every key; `provisiond --check` validates.\n"
      "#\n# Boot routes (scripts, kernels, phone-home) on every address, port " +
      std::to_string(o.port) +
      "; the API and the web page over HTTPS on port 8443 (and plain HTTP from this machine "
      "only).\nlisten: 0.0.0.0:" +
      std::to_string(o.port) + "\ndata_dir: " + o.data_dir + "\ninterface: " + o.interface +
      "\nboot_url: http://" + iface->address + ":" + std::to_string(o.port) +
      "\ndhcp:\n  mode: " + ToString(r.mode) + "\n" +
      (r.mode == DhcpMode::kFull ? "  range: " + r.range + "\n" : "");
  // What init writes, provisiond must accept.
  auto parsed = ParseConfig(r.config_text, o.config_path);
  if (!parsed.ok())
    return Status::Internal("the config init made does not parse: " + parsed.status().message());

  s = MakeDirs(std::filesystem::path(o.config_path).parent_path().string(), 0755);
  if (!s.ok()) return s;
  if (std::filesystem::exists(o.config_path)) {
    r.backup_of_old = o.config_path + ".before-init";
    auto old = ReadFile(o.config_path);
    if (!old.ok()) return old.status();
    s = WriteFileAtomic(r.backup_of_old, *old, 0644);
    if (!s.ok()) return s;
  }
  s = WriteFileAtomic(o.config_path, r.config_text, 0644);
  if (!s.ok()) return s;

  // The first admin token; an existing tokens file is kept as it is.
  s = MakeDirs(o.data_dir, 0711);
  if (!s.ok()) return s;
  r.tokens_file = parsed->effective_tokens_file();
  if (!std::filesystem::exists(r.tokens_file)) {
    s = WriteFileAtomic(r.tokens_file, NewTokensFile("init"), 0600);
    if (!s.ok()) return s;
    r.token_created = true;
  }

  const std::string ctl = "provisionctl --token-file " + r.tokens_file;
  r.next = {"provisiond --check --config " + o.config_path,
            "systemctl restart provisiond   # or: provisiond --config " + o.config_path,
            ctl + " preflight", ctl + " profile list",
            "open https://" + iface->address + ":8443/ (the web page; the token is in " +
                r.tokens_file + ")"};
  if (r.mode == DhcpMode::kFull)
    r.notes.push_back("nodes on " + subnet + " get addresses " + r.range +
                      " (enrolled nodes a reservation by MAC)");
  return r;
}

}  // namespace prov
