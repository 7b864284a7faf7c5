// A boot loader, described: what PXE firmware is given by TFTP for each
// client architecture and where those files are on the control node; how the
// loader's own requests are told apart from the firmware's (its DHCP user
// class, the names of the scripts it asks for over HTTP); and the scripts it
// runs, rendered per node from a kernel URL, initrd URLs and a kernel
// command line. Two are known: iPXE (boot/ipxe.cc; BIOS, and UEFI with
// Secure Boot off), whose scripts and files come over HTTP, and the signed
// chain shim -> grub (boot/grub.cc; UEFI, Secure Boot on or off), whose
// scripts and files come over TFTP. Another is a new file implementing
// BootLoader plus its line in loader.cc's table; dnsmasq's config, the TFTP
// root and the boot routes follow from the description.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/template.h"
#include "store/boot_stage.h"

namespace prov {

// PXE client architectures (DHCP option 93): 0 is BIOS, 7 and 9 are UEFI
// x86-64 (dnsmasq tags both "efi64").
enum class ClientArch { kBios, kUefiX64 };

// What a loader is created with (provisiond's config).
struct LoaderSettings {
  std::string templates_dir;  // pxe/: its script templates
  std::string files_dir;      // its first-stage binaries ("ipxe_dir": /usr/lib/ipxe)
  // Its UEFI binary where it has several ("dhcp.uefi_binary"); empty: its
  // default.
  std::string uefi_file;
};

// A file TFTP serves: where it is on the control node, and its name in the
// TFTP root.
struct TftpFile {
  std::string source;
  std::string name;
  bool operator==(const TftpFile&) const = default;
};

// A file the loader downloads: the name the kernel knows it by, and its URL.
struct BootFile {
  std::string name;
  std::string url;
};

// What every script knows: where provisiond is and who is asking.
struct ScriptContext {
  std::string boot_url;  // how nodes reach provisiond, no trailing slash
  int retry_delay_s = 10;
  // The node (empty in the start script, which every client gets first).
  std::string mac;       // "52:54:00:00:00:01"
  std::string hostname;  // may be empty (a discovered node)
  std::string name;      // the hostname, or the MAC when there is none
  std::string state;     // "enrolled", "retired", ...
};

// A node that boots its image.
struct NodeBootConfig {
  ScriptContext context;
  std::string profile;  // the profile version, the image ref: shown in
  std::string image;    // the script and on the node's console
  // The node's own files on provisiond (<boot_url>/boot/<mac-hyphen>); the
  // URLs below are under it.
  std::string files_url;
  std::string kernel_url;
  std::vector<BootFile> initrds;  // in the order they are loaded
  std::string cmdline;            // the kernel command line
  int max_tries = 10;             // downloads before asking for a new script
  int retry_jitter_s = 1;         // wait between tries, different per node
};

// A request for one of the loader's scripts, by its name under /boot/.
struct ScriptName {
  bool start = false;  // the start script every client is sent to first
  std::string node;    // else the node's MAC as the client wrote it
};

class BootLoader {
 public:
  virtual ~BootLoader() = default;

  // Its name in the registry and in provisiond's config ("ipxe").
  virtual std::string_view name() const = 0;
  // What it is in messages and comments ("iPXE").
  virtual std::string_view title() const = 0;

  // --- What DHCP and TFTP serve (the daemon hands this to dnsmasq).
  // The file firmware of `arch` is told to load by TFTP.
  virtual std::string FirstStage(ClientArch arch) const = 0;
  // Every binary TFTP serves for it.
  virtual std::vector<TftpFile> TftpFiles() const = 0;
  // The boot stage a node passed when TFTP sent it `file` (a path in the
  // TFTP root, as dnsmasq logs it); none for files not the loader's.
  virtual std::optional<BootStage> TftpStage(std::string_view file) const = 0;
  // Where those files come from, for the error when one is missing
  // ("Debian package ipxe").
  virtual std::string_view package() const = 0;
  // The DHCP user class (option 77) of the loader's own requests, which are
  // answered with StartUrl rather than the first stage again; empty when it
  // makes none.
  virtual std::string_view dhcp_user_class() const = 0;
  // Options added to answers to its own requests when provisiond is the
  // DHCP server: {why, "NUMBER,VALUE"}.
  virtual std::vector<std::pair<std::string, std::string>> DhcpOptions() const = 0;
  // The first thing the loader fetches from provisiond (its start script).
  virtual std::string StartUrl(const std::string& boot_url) const = 0;

  // --- Where its scripts come from. A loader with no HTTP client (grub as
  // Debian signs it) reads its scripts, kernel and initrd by TFTP: they are
  // files in the TFTP root, at these paths; empty for loaders that fetch
  // them over HTTP.
  virtual std::string TftpScriptPath(const ScriptName& script) const = 0;
  // Where a node's kernel and initrd are in the TFTP root (image files are
  // linked there), as the script names them; empty: they come over HTTP.
  virtual std::string TftpImageDir(const std::string& image_ref) const = 0;

  // --- What HTTP serves.
  // Recognises the names of its script requests; nullopt for any other name.
  virtual std::optional<ScriptName> ParseScriptName(std::string_view name) const = 0;
  // The kernel arguments that name its initrds (iPXE: "initrd=initrd.img",
  // which the kernel's EFI stub needs); empty when the loader passes them
  // otherwise.
  virtual std::string InitrdArguments(const std::vector<BootFile>& initrds) const = 0;
  // The scripts. Each is complete text for the loader; an error names the
  // template that failed.
  virtual Result<std::string> StartScript(const ScriptContext& context) const = 0;
  // Boots the node's image: kernel, initrds, command line, with retries.
  virtual Result<std::string> NodeScript(const NodeBootConfig& config) const = 0;
  // An unknown MAC: waits and asks again, never installs anything.
  virtual Result<std::string> DiscoveredScript(const ScriptContext& context) const = 0;
  // Retired or in maintenance: boots from the machine's next boot device.
  virtual Result<std::string> LocalScript(const ScriptContext& context) const = 0;
  // Enrolled but unable to boot now (`reason`): waits and asks again.
  virtual Result<std::string> UnavailableScript(const ScriptContext& context,
                                                const std::string& reason) const = 0;
};

// A loader's script templates (<templates_dir>/<name><suffix>), read once;
// rendered with boot_url and delay (the retry delay) besides their own values.
class ScriptTemplates {
 public:
  // A missing template is an error naming its file.
  Status Load(const std::string& dir, const std::vector<std::string>& names,
              const std::string& suffix);
  // `values`, with the context's boot_url and delay, and its node's mac,
  // mac_hyphen, hostname, name and state unless `values` sets them.
  Result<std::string> Render(const std::string& name, const ScriptContext& context,
                             TemplateValues values) const;

 private:
  std::string Path(const std::string& name) const { return dir_ + "/" + name + suffix_; }
  std::string dir_, suffix_;
  std::map<std::string, std::string> text_;  // name -> template
};

// Makes a Loader (constructed from settings, then Load()ed): for the
// factories in loader.cc's table.
template <class Loader>
Result<std::unique_ptr<BootLoader>> MakeLoader(const LoaderSettings& settings) {
  auto loader = std::make_unique<Loader>(settings);
  Status s = loader->Load();
  if (!s.ok()) return s;
  return std::unique_ptr<BootLoader>(std::move(loader));
}

// Creates the loader called `name` (reading its templates); an unknown name
// is an error that lists the known ones.
Result<std::unique_ptr<BootLoader>> CreateBootLoader(std::string_view name,
                                                     const LoaderSettings& settings);

// The known loaders' names, in the registry's order.
std::vector<std::string_view> BootLoaderNames();

}  // namespace prov
