#include "boot/loader.h"

#include <doctest/doctest.h>

namespace prov {
namespace {

std::unique_ptr<BootLoader> Ipxe(const std::string& uefi_file = "") {
  auto loader = CreateBootLoader("ipxe", {PROVISION_SOURCE_DIR "/pxe", "/usr/lib/ipxe", uefi_file});
  REQUIRE_MESSAGE(loader.ok(), loader.status().message());
  return std::move(*loader);
}

ScriptContext Lab0() {
  ScriptContext c;
  c.boot_url = "http://10.99.0.1:8080";
  c.mac = "52:54:00:00:00:01";
  c.hostname = "lab0";
  c.name = "lab0";
  c.state = "enrolled";
  return c;
}

}  // namespace

TEST_CASE("boot loaders: the registry lists iPXE; an unknown name lists the known ones") {
  CHECK(BootLoaderNames() == std::vector<std::string_view>{"ipxe"});
  auto unknown = CreateBootLoader("grub", {PROVISION_SOURCE_DIR "/pxe", "/x", ""});
  CHECK(unknown.status().code() == Code::kInvalid);
  CHECK(unknown.status().message() == "unknown boot loader 'grub' (ipxe)");
  auto missing = CreateBootLoader("ipxe", {"/nonexistent", "/usr/lib/ipxe", ""});
  CHECK(missing.status().message().find("boot script template missing") != std::string::npos);
  auto bad_uefi = CreateBootLoader("ipxe", {PROVISION_SOURCE_DIR "/pxe", "/x", "grubx64.efi"});
  CHECK(bad_uefi.status().message() ==
        "iPXE has no UEFI binary 'grubx64.efi' (ipxe.efi or snponly.efi)");
}

TEST_CASE("boot loaders: iPXE's first stage per architecture, and its requests") {
  auto ipxe = Ipxe();
  CHECK(ipxe->name() == "ipxe");
  CHECK(ipxe->FirstStage(ClientArch::kBios) == "undionly.kpxe");
  CHECK(ipxe->FirstStage(ClientArch::kUefiX64) == "ipxe.efi");
  CHECK(Ipxe("snponly.efi")->FirstStage(ClientArch::kUefiX64) == "snponly.efi");
  CHECK(ipxe->TftpFiles() == std::vector<std::string>{"/usr/lib/ipxe/undionly.kpxe",
                                                      "/usr/lib/ipxe/ipxe.efi",
                                                      "/usr/lib/ipxe/snponly.efi"});
  CHECK(ipxe->dhcp_user_class() == "iPXE");
  CHECK(ipxe->DhcpOptions().size() == 1);
  CHECK(ipxe->DhcpOptions()[0].second == "60,PXEClient");
  CHECK(ipxe->StartUrl("http://10.99.0.1:8080") == "http://10.99.0.1:8080/boot/start.ipxe");

  CHECK(ipxe->ParseScriptName("start.ipxe")->start);
  auto node = ipxe->ParseScriptName("52-54-00-00-00-01.ipxe");
  REQUIRE(node.has_value());
  CHECK_FALSE(node->start);
  CHECK(node->node == "52-54-00-00-00-01");
  for (const char* other : {".ipxe", "ipxe", "52-54-00-00-00-01.cfg", "grub.cfg", ""}) {
    INFO(other);
    CHECK_FALSE(ipxe->ParseScriptName(other).has_value());
  }
  CHECK(ipxe->InitrdArguments({{"initrd.img", "u"}}) == "initrd=initrd.img");
  CHECK(ipxe->InitrdArguments({{"initrd.img", "u"}, {"ticket.img", "v"}}) ==
        "initrd=initrd.img initrd=ticket.img");
}

TEST_CASE("boot loaders: iPXE renders a node's script (golden)") {
  auto ipxe = Ipxe();
  NodeBootConfig b;
  b.context = Lab0();
  b.profile = "v0.1";
  b.image = "lab@0123456789abcdef";
  b.files_url = "http://10.99.0.1:8080/boot/52-54-00-00-00-01";
  b.kernel_url = b.files_url + "/vmlinuz?v=0123456789abcdef";
  b.initrds = {{"initrd.img", b.files_url + "/initrd.img?v=0123456789abcdef"}};
  b.cmdline = "initrd=initrd.img provision.url=http://10.99.0.1:8080 console=ttyS0";
  b.max_tries = 10;
  b.retry_jitter_s = 3;
  auto script = ipxe->NodeScript(b);
  REQUIRE_MESSAGE(script.ok(), script.status().message());
  // The bytes pxe/node.ipxe.in rendered to before the loader interface.
  CHECK(*script ==
        R"(#!ipxe
# provisiond boot script for lab0 (52:54:00:00:00:01)
# profile v0.1, image lab@0123456789abcdef
set base http://10.99.0.1:8080/boot/52-54-00-00-00-01
set tries:int32 0
echo provisiond: booting lab0 with image lab@0123456789abcdef

:kernel
kernel ${base}/vmlinuz?v=0123456789abcdef initrd=initrd.img provision.url=http://10.99.0.1:8080 console=ttyS0 && goto initrd ||
inc tries
iseq ${tries} 10 && goto failed ||
echo kernel download failed (try ${tries}); retrying in 3 s
sleep 3
goto kernel

:initrd
initrd --name initrd.img ${base}/initrd.img?v=0123456789abcdef && goto boot ||
inc tries
iseq ${tries} 10 && goto failed ||
echo initrd download failed (try ${tries}); retrying in 3 s
sleep 3
goto initrd

:boot
boot ||
echo boot failed

:failed
echo provisiond: giving up after ${tries} failed downloads; asking for a new script in 30 s
sleep 30
chain --replace http://10.99.0.1:8080/boot/52-54-00-00-00-01.ipxe
)");

  // More than one initrd: loaded in order in one command; a URL elsewhere
  // is written whole.
  b.initrds.push_back({"ticket.img", "http://10.99.0.2/ticket.img"});
  CHECK(ipxe->NodeScript(b)->find(
            "\ninitrd --name initrd.img ${base}/initrd.img?v=0123456789abcdef && initrd --name "
            "ticket.img http://10.99.0.2/ticket.img && goto boot ||\n") != std::string::npos);
}

TEST_CASE("boot loaders: iPXE's start, waiting and local scripts (golden)") {
  auto ipxe = Ipxe();
  ScriptContext start;
  start.boot_url = "http://10.99.0.1:8080";
  start.retry_delay_s = 10;
  CHECK(*ipxe->StartScript(start) == R"(#!ipxe
# provisiond: every iPXE client is sent here first; it asks for its own script.
:retry
chain --replace http://10.99.0.1:8080/boot/${net0/mac:hexhyp}.ipxe || goto wait
:wait
echo provisiond at http://10.99.0.1:8080 did not answer; trying again in 10 s
sleep 10
goto retry
)");
  ScriptContext c = Lab0();
  c.hostname = "";
  c.name = c.mac;
  c.state = "discovered";
  CHECK(*ipxe->DiscoveredScript(c) == R"(#!ipxe
# provisiond: 52:54:00:00:00:01 is not enrolled. This script waits and asks again; it
# never installs anything.
echo provisiond: this machine (52:54:00:00:00:01) is not enrolled yet.
echo Enroll it on the control node:  provisionctl node add <hostname> --mac 52:54:00:00:00:01
echo Asking again in 10 s
sleep 10
chain --replace http://10.99.0.1:8080/boot/52-54-00-00-00-01.ipxe
)");
  c = Lab0();
  c.state = "retired";
  CHECK(*ipxe->LocalScript(c) == R"(#!ipxe
# provisiond: lab0 is retired; it boots from its next boot device.
echo provisiond: lab0 is retired: not netbooting, trying the next boot device
exit
)");
  CHECK(*ipxe->UnavailableScript(Lab0(), "image 'x' has not been built") == R"(#!ipxe
# provisiond: lab0 cannot boot yet: image 'x' has not been built
echo provisiond: lab0 cannot boot yet: image 'x' has not been built
echo Asking again in 10 s
sleep 10
chain --replace http://10.99.0.1:8080/boot/52-54-00-00-00-01.ipxe
)");
}

}  // namespace prov
