// What dnsmasq hands provisiond: its log, read line by line as
// DnsmasqService::ReadLog does (a client chooses its hostname, so lines are
// untrusted). An observed DHCP ack carries a normalized MAC and an IPv4
// address, and the reservation it leads to is one well-formed hosts line.
#include <arpa/inet.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "dhcp/dnsmasq.h"
#include "fuzz_util.h"
#include "store/node_state.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  size_t start = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    std::string_view line = text.substr(start, nl == std::string_view::npos ? nl : nl - start);
    start = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    auto obs = prov::ParseDnsmasqLogLine(line);
    if (!obs) continue;
    const std::string what(line);
    in_addr addr{};
    FUZZ_CHECK(inet_pton(AF_INET, obs->ip.c_str(), &addr) == 1, what + " -> ip '" + obs->ip + "'");
    if (obs->kind == prov::DhcpObservation::Kind::kAck) {
      auto mac = prov::NormalizeMac(obs->mac);
      FUZZ_CHECK(mac.ok() && *mac == obs->mac, what);
      prov::AddressBook book;
      book.entries.push_back({obs->mac, obs->ip, "n0"});
      const prov::NodeAddress& n = book.entries[0];
      std::string hosts = prov::RenderHostsFile(book);
      FUZZ_CHECK(hosts == n.mac + "," + n.ip + ",n0\n", what + " -> " + hosts);
    } else {
      // A path as logged: a file, never a directory, no space or line break.
      FUZZ_CHECK(!obs->file.empty() && obs->file.back() != '/' &&
                     obs->file.find_first_of(" \n") == std::string::npos,
                 what);
    }
  }
  return 0;
}
