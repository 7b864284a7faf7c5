// How provisiond serves DHCP on the cluster interface: the config's
// dhcp.mode, `provisiond init`'s choice, dnsmasq's settings and the preflight
// checks share this type instead of comparing words.
#pragma once

#include <optional>
#include <string_view>

namespace prov {

enum class DhcpMode {
  kFull,   // dnsmasq hands out addresses (a cluster network of its own)
  kProxy,  // another server gives addresses; dnsmasq adds the boot information
};

// "full" or "proxy": the word of the config file and the logs.
inline const char* ToString(DhcpMode mode) {
  return mode == DhcpMode::kProxy ? "proxy" : "full";
}

inline std::optional<DhcpMode> ParseDhcpMode(std::string_view text) {
  if (text == "full") return DhcpMode::kFull;
  if (text == "proxy") return DhcpMode::kProxy;
  return std::nullopt;
}

}  // namespace prov
