#include "dhcp/dnsmasq.h"

#include <doctest/doctest.h>

#include "base/file_util.h"

namespace prov {

TEST_CASE("dnsmasq log lines: DHCP acks and TFTP transfers, and nothing else") {
  auto ack = ParseDnsmasqLogLine(
      "Nov 22 01:55:01 dnsmasq-dhcp[42]: 3411 DHCPACK(br0) 10.99.0.100 52:54:00:AB:cd:01 lab0");
  REQUIRE(ack.has_value());
  CHECK(ack->kind == DhcpObservation::Kind::kAck);
  CHECK(ack->ip == "10.99.0.100");
  CHECK(ack->mac == "52:54:00:ab:cd:01");
  auto tftp = ParseDnsmasqLogLine(
      "Nov 22 01:55:02 dnsmasq-tftp[42]: sent /var/lib/provisiond/netboot/tftp/ipxe.efi to "
      "10.99.0.100");
  REQUIRE(tftp.has_value());
  auto plain = ParseDnsmasqLogLine("dnsmasq-dhcp[7]: DHCPACK(br0) 10.0.0.5 52:54:00:00:00:02");
  REQUIRE(plain.has_value());
  CHECK(plain->mac == "52:54:00:00:00:02");
  CHECK(tftp->kind == DhcpObservation::Kind::kTftpSent);
  CHECK(tftp->file == "/var/lib/provisiond/netboot/tftp/ipxe.efi");  // the path, as logged
  CHECK(tftp->ip == "10.99.0.100");
  for (const char* other :
       {"", "dnsmasq-dhcp[1]: DHCPDISCOVER(br0) 52:54:00:00:00:01", "dnsmasq-dhcp[1]: DHCPACK(br0",
        "dnsmasq-dhcp[1]: DHCPACK(br0) 10.0.0.1 nonsense", "dnsmasq-tftp[1]: sent",
        "dnsmasq-tftp[1]: sent /x to",
        "dnsmasq-dhcp[1]: 1 DHCPACK(br0) 10.99.0.100 52:54:00:00:00:zz x",
        // Found by fuzzing: the address is written to the hosts file.
        "dnsmasq-dhcp[1]: 1 DHCPACK(br0) 1,2,3 52:54:00:00:00:01 x",
        "dnsmasq-dhcp[1]: 1 DHCPACK(br0) 10.99.0.300 52:54:00:00:00:01 x",
        "dnsmasq-tftp[1]: sent /x to 10.0.0.1\nfoo",
        // A client-chosen name is not a DHCPACK.
        "dnsmasq-dhcp[1]: 1 client provides name: DHCPACK(x) 10.0.0.9 52:54:00:00:00:02"}) {
    INFO(other);
    CHECK_FALSE(ParseDnsmasqLogLine(other).has_value());
  }
}

TEST_CASE("dnsmasq hosts file: a reservation per address book entry") {
  AddressBook book;
  book.entries = {{"52:54:00:00:00:01", "10.99.0.10", "n0"},
                  {"52:54:00:00:00:05", "10.99.0.14", ""}};
  CHECK(RenderHostsFile(book) == "52:54:00:00:00:01,10.99.0.10,n0\n52:54:00:00:00:05,10.99.0.14\n");
}

TEST_CASE("dnsmasq config: full and proxy mode (golden lines)") {
  DnsmasqSettings s;
  s.iface.name = "br0";
  s.iface.address_host = 0x0a630001;
  s.iface.netmask_host = 0xffffff00;
  s.range_first = "10.99.0.100";
  s.range_last = "10.99.0.200";
  // iPXE as the daemon copies it from boot/ipxe.cc's description.
  s.loader = {.title = "iPXE",
              .tag = "ipxe",
              .user_class = "iPXE",
              .bios_file = "undionly.kpxe",
              .uefi_file = "ipxe.efi",
              .start_url = "http://10.99.0.1:8080/boot/start.ipxe",
              .http_url = "",
              .options = {{"iPXE waits for a proxy-DHCP offer unless the answer says PXEClient.",
                           "60,PXEClient"}},
              .tftp_files = {{"/usr/lib/ipxe/undionly.kpxe", "undionly.kpxe"},
                             {"/usr/lib/ipxe/ipxe.efi", "ipxe.efi"},
                             {"/usr/lib/ipxe/snponly.efi", "snponly.efi"}},
              .package = "Debian package ipxe"};
  s.pxe_dir = PROVISION_SOURCE_DIR "/pxe";
  s.run_dir = "/var/lib/provisiond/netboot";
  auto text = ReadFile(s.pxe_dir + "/dnsmasq.conf.in");
  REQUIRE(text.ok());
  auto full = RenderDnsmasqConfig(s, *text);
  REQUIRE_MESSAGE(full.ok(), full.status().message());
  for (const char* line : {"\nport=0\n", "\ninterface=br0\n", "\nbind-interfaces\n",
                           "\ndhcp-range=10.99.0.100,10.99.0.200,255.255.255.0,12h\n",
                           "\ndhcp-hostsfile=/var/lib/provisiond/netboot/hosts\n",
                           "\ndhcp-boot=tag:!ipxe,tag:!efi64,undionly.kpxe\n",
                           "\ndhcp-boot=tag:!ipxe,tag:efi64,ipxe.efi\n",
                           "\ndhcp-boot=tag:ipxe,http://10.99.0.1:8080/boot/start.ipxe\n",
                           "\ntftp-root=/var/lib/provisiond/netboot/tftp\n"}) {
    INFO(line);
    CHECK(full->find(line) != std::string::npos);
  }
  // The clients and the boot options, whole (the loader's part of the config).
  CHECK(full->find("\n# Clients: iPXE (user class \"iPXE\"), UEFI (client architecture 7 or 9),\n"
                   "# else legacy BIOS PXE.\n"
                   "dhcp-userclass=set:ipxe,iPXE\n"
                   "dhcp-match=set:efi64,option:client-arch,7\n"
                   "dhcp-match=set:efi64,option:client-arch,9\n"
                   "dhcp-boot=tag:!ipxe,tag:!efi64,undionly.kpxe\n"
                   "dhcp-boot=tag:!ipxe,tag:efi64,ipxe.efi\n"
                   "dhcp-boot=tag:ipxe,http://10.99.0.1:8080/boot/start.ipxe\n"
                   "# iPXE waits for a proxy-DHCP offer unless the answer says PXEClient.\n"
                   "dhcp-option-force=tag:ipxe,60,PXEClient\n"
                   "# TFTP serves only the iPXE binaries provisiond copies into tftp-root.\n") !=
        std::string::npos);
  // UEFI HTTP boot: its clients get iPXE by URL, with option 60 echoed; the
  // BIOS line no longer matches them.
  s.loader.http_url = "http://10.99.0.1:8080/boot/ipxe.efi";
  auto http = RenderDnsmasqConfig(s, *text);
  REQUIRE(http.ok());
  CHECK(http->find("# UEFI HTTP boot (vendor class HTTPClient), else legacy BIOS PXE.\n"
                   "dhcp-userclass=set:ipxe,iPXE\n"
                   "dhcp-match=set:efi64,option:client-arch,7\n"
                   "dhcp-match=set:efi64,option:client-arch,9\n"
                   "dhcp-vendorclass=set:efihttp,HTTPClient\n"
                   "dhcp-boot=tag:!ipxe,tag:!efi64,tag:!efihttp,undionly.kpxe\n"
                   "dhcp-boot=tag:!ipxe,tag:efi64,ipxe.efi\n"
                   "# UEFI HTTP boot: iPXE by HTTP, no TFTP. The firmware takes the answer only "
                   "with option 60 back.\n"
                   "dhcp-boot=tag:!ipxe,tag:efihttp,http://10.99.0.1:8080/boot/ipxe.efi\n"
                   "dhcp-option-force=tag:!ipxe,tag:efihttp,60,HTTPClient\n") != std::string::npos);
  s.loader.http_url.clear();
  s.loader.uefi_file = "snponly.efi";
  auto snp = RenderDnsmasqConfig(s, *text);
  CHECK(snp->find("\ndhcp-boot=tag:!ipxe,tag:efi64,snponly.efi\n") != std::string::npos);
  s.mode = DhcpMode::kProxy;
  auto proxy = RenderDnsmasqConfig(s, *text);
  REQUIRE(proxy.ok());
  CHECK(proxy->find("\ndhcp-range=10.99.0.0,proxy,255.255.255.0\n") != std::string::npos);
  CHECK(proxy->find("pxe-service=tag:!ipxe,x86PC,\"provisiond (BIOS)\",undionly\n") !=
        std::string::npos);
  CHECK(proxy->find("dhcp-authoritative") == std::string::npos);
  CHECK(proxy->find("pxe-service=tag:!ipxe,X86-64_EFI,\"provisiond (UEFI)\",snponly\n") !=
        std::string::npos);
  CHECK(proxy->find("\n# PXE ROMs are offered iPXE by TFTP; iPXE is sent to provisiond's script.\n"
                    "pxe-service=tag:!ipxe,x86PC,\"provisiond (BIOS)\",undionly\n"
                    "pxe-service=tag:!ipxe,X86-64_EFI,\"provisiond (UEFI)\",snponly\n"
                    "pxe-service=tag:!ipxe,BC_EFI,\"provisiond (UEFI)\",snponly\n"
                    "pxe-service=tag:ipxe,x86PC,\"provisiond\",http://10.99.0.1:8080/boot/"
                    "start.ipxe\n"
                    "pxe-service=tag:ipxe,X86-64_EFI,\"provisiond\",http://10.99.0.1:8080/boot/"
                    "start.ipxe\n"
                    "dhcp-boot=tag:ipxe,http://10.99.0.1:8080/boot/start.ipxe\n") !=
        std::string::npos);
}

}  // namespace prov
