#include "boot/loader.h"

#include <doctest/doctest.h>

namespace prov {
namespace {

std::unique_ptr<BootLoader> Grub() {
  auto loader = CreateBootLoader("grub", {PROVISION_SOURCE_DIR "/pxe", "/usr/lib", ""});
  REQUIRE_MESSAGE(loader.ok(), loader.status().message());
  return std::move(*loader);
}

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

TEST_CASE("boot loaders: the registry lists iPXE and grub; an unknown name lists them") {
  CHECK(BootLoaderNames() == std::vector<std::string_view>{"ipxe", "grub"});
  auto unknown = CreateBootLoader("syslinux", {PROVISION_SOURCE_DIR "/pxe", "/x", ""});
  CHECK(unknown.status().code() == Code::kInvalid);
  CHECK(unknown.status().message() == "unknown boot loader 'syslinux' (ipxe, grub)");
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
  CHECK(ipxe->TftpFiles() == std::vector<TftpFile>{{"/usr/lib/ipxe/undionly.kpxe", "undionly.kpxe"},
                                                   {"/usr/lib/ipxe/ipxe.efi", "ipxe.efi"},
                                                   {"/usr/lib/ipxe/snponly.efi", "snponly.efi"}});
  // dnsmasq logs the path it sent; proxy-DHCP's menu names add ".0".
  CHECK(ipxe->TftpStage("/var/lib/provisiond/netboot/tftp/ipxe.efi") == BootStage::kIpxeBinary);
  CHECK(ipxe->TftpStage("undionly.0") == BootStage::kIpxeBinary);
  CHECK(!ipxe->TftpStage("grubx64.efi"));
  CHECK(ipxe->TftpScriptPath({.start = true, .node = ""}) == "");
  CHECK(ipxe->TftpImageDir("lab@0123") == "");
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
# provisiond: every iPXE client is sent here first; it asks for the script of
# the port it booted from (netX: the network device iPXE opened last).
:retry
chain --replace http://10.99.0.1:8080/boot/${netX/mac:hexhyp}.ipxe || goto wait
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

TEST_CASE("boot loaders: the signed chain is served by TFTP, binaries, configs and images") {
  auto grub = Grub();
  CHECK(grub->name() == "grub");
  CHECK(grub->FirstStage(ClientArch::kUefiX64) == "shimx64.efi");
  // shim looks for grubx64.efi beside itself: Debian's signed netboot grub
  // is served under that name.
  CHECK(grub->TftpFiles() ==
        std::vector<TftpFile>{
            {"/usr/lib/shim/shimx64.efi.signed", "shimx64.efi"},
            {"/usr/lib/grub/x86_64-efi-signed/grubnetx64.efi.signed", "grubx64.efi"}});
  CHECK(grub->dhcp_user_class() == "");
  CHECK(grub->StartUrl("http://x") == "");
  CHECK_FALSE(grub->ParseScriptName("52-54-00-00-00-01.ipxe").has_value());
  CHECK(grub->TftpScriptPath({.start = true, .node = ""}) == "grub/grub.cfg");
  CHECK(grub->TftpScriptPath({.start = false, .node = "52:54:00:00:00:01"}) ==
        "grub/nodes/52:54:00:00:00:01.cfg");
  CHECK(grub->TftpImageDir("lab@0123") == "images/lab/0123");
  const std::string root = "/var/lib/provisiond/netboot/tftp/";
  CHECK(grub->TftpStage(root + "shimx64.efi") == BootStage::kShim);
  CHECK(grub->TftpStage(root + "grubx64.efi") == BootStage::kGrub);
  CHECK(grub->TftpStage(root + "grub/nodes/52:54:00:00:00:01.cfg") == BootStage::kGrubConfig);
  CHECK(grub->TftpStage("images/lab/0123/vmlinuz") == BootStage::kKernel);
  CHECK(grub->TftpStage(root + "images/lab/0123/initrd.img") == BootStage::kInitrd);
  CHECK(!grub->TftpStage(root + "grub/grub.cfg"));
  CHECK(!grub->TftpStage(root + "ipxe.efi"));
  CHECK(grub->InitrdArguments({{"initrd.img", "u"}}) == "");
}

TEST_CASE("boot loaders: grub renders a node's config and its start config (golden)") {
  auto grub = Grub();
  NodeBootConfig b;
  b.context = Lab0();
  b.profile = "v0.1";
  b.image = "lab@0123";
  b.kernel_url = "/images/lab/0123/vmlinuz";
  b.initrds = {{"initrd.img", "/images/lab/0123/initrd.img"}};
  b.cmdline = "provision.url=http://10.99.0.1:8080 console=ttyS0";
  auto script = grub->NodeScript(b);
  REQUIRE_MESSAGE(script.ok(), script.status().message());
  CHECK(*script == R"(# provisiond boot config for lab0 (52:54:00:00:00:01)
# profile v0.1, image lab@0123. grub reads it, the kernel and the
# initrd by TFTP; nothing here is secret.
echo "provisiond: booting lab0 with image lab@0123"
if linux /images/lab/0123/vmlinuz provision.url=http://10.99.0.1:8080 console=ttyS0; then
  if initrd /images/lab/0123/initrd.img; then
    boot
  fi
fi
echo "provisiond: loading lab@0123 failed; restarting in 10 s"
sleep 10
reboot
)");
  ScriptContext start;
  start.boot_url = "http://10.99.0.1:8080";
  auto text = grub->StartScript(start);
  REQUIRE(text.ok());
  CHECK(text->find("source \"${prefix}/nodes/${net_default_mac}.cfg\"") != std::string::npos);
  CHECK(text->find("\nreboot\n") != std::string::npos);
  ScriptContext retired = Lab0();
  retired.state = "retired";
  CHECK(grub->LocalScript(retired)->find("\nexit\n") != std::string::npos);
  // A reason cannot end the grub string it is quoted in, expand, or add a
  // line.
  auto waiting = grub->UnavailableScript(Lab0(), "bad \"x\" $y\nreboot");
  REQUIRE(waiting.ok());
  CHECK(waiting->find("echo \"provisiond: lab0 cannot boot yet: bad 'x' 'y reboot\"") !=
        std::string::npos);
  CHECK(waiting->find("\nreboot\n") == waiting->rfind("\nreboot\n"));
}

}  // namespace prov
