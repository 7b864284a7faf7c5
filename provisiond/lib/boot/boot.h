// The HTTP half of netboot: per-node boot scripts rendered by the boot loader
// (boot/loader.h; iPXE today), the node's kernel and initrd served zero-copy
// from the image catalog, and every stage a node passes recorded as an event
// (which also moves it to `booting`). Unknown MACs become `discovered` and
// get a script that waits. One class, four units by concern: scripts
// (boot.cc), the TFTP tree (boot_tftp.cc), tickets and files
// (boot_files.cc) and the stage machine (boot_stages.cc).
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

#include <functional>
#include <memory>
#include <vector>

#include "boot/loader.h"
#include "http/http.h"
#include "images/image_catalog.h"
#include "store/store.h"

namespace prov {

struct BootSettings {
  std::string boot_url;  // how nodes reach us, no trailing slash
  std::string pxe_dir;   // templates
  // The boot loaders (boot/loader.h's registry, by the names of
  // store/boot_stage.h): iPXE for BIOS firmware (from loader_dir, with its
  // UEFI binary uefi_file, empty: its default), and the loader UEFI firmware
  // gets: by default the signed chain shim -> grub from signed_loader_dir,
  // or iPXE.
  std::string loader = LoaderName(BootChain::kIpxe);
  std::string loader_dir = "/usr/lib/ipxe";
  std::string uefi_file;
  std::string uefi_loader = LoaderName(kDefaultUefiChain);
  std::string signed_loader_dir = "/usr/lib";
  // The TFTP root (dnsmasq serves it): where loaders that read their
  // scripts by TFTP find them, and the image files they load.
  std::string tftp_dir;
  int retry_delay_s = 10;
  int max_tries = 10;
  // Unknown MACs kept as discovered nodes at once (anyone on the boot
  // network can make up MACs): past it, they are answered but not recorded.
  int max_discovered = 256;
  // The extra kernel arguments of a profile version (empty if unknown).
  std::function<std::vector<std::string>(const std::string& version)> profile_kernel_args;
  // The UEFI loader a profile version chooses ("" : none, or unknown).
  std::function<std::string(const std::string& version)> profile_uefi_loader;
  // Arguments that tell the node's initrd where its root is (images over
  // NFS); empty for images without a root.
  std::function<std::string(const ImageVersion& image)> root_args;
  // Checks that the image's root can be read over NFS before a node is
  // pointed at it; an error keeps the node waiting with that reason.
  std::function<Status(const ImageVersion& image)> verify_image;
  // Full DHCP mode: provisiond reserves every node's address, so a node's
  // boot ticket is served to that address only.
  bool reserved_addresses = false;
  // The node's overlay archive (GET /boot/<mac>/overlay.tar?ticket=...):
  // hello/phonehome.h checks the ticket and the request's port.
  std::function<Result<std::string>(const std::string& mac, const HttpRequest& request)>
      render_overlay;
  // Told each boot stage recorded for a node (its event's text, e.g.
  // "kernel: lab@1a2b"), after it was written: the network console's
  // loader lines.
  std::function<void(const NodeRecord& node, BootStage stage, const std::string& text)> on_stage;
  // Where the node's kernel sends its console ("ADDR:PORT", the network
  // console; "" : nowhere): provision.console= on the command line.
  std::string console_target;
};

// A node's credentials on its way up. The boot script and the kernel command
// line carry no secret (every user of a node reads /proc/cmdline; anyone on
// the boot network can fetch a script). Rendering a node's script issues a
// one-boot ticket, if none is outstanding; the script loads it as a second
// initrd (ticket.img: /provision/ticket, 0400, in the initramfs, which is
// gone after switch_root), served only to the node's reserved address in
// full DHCP mode. The initrd fetches the overlay with it, from a privileged
// port; the overlay holds the node's token in a root-only file; the hello of
// the boot spends the ticket (hello/phonehome.h). Loaders that read by TFTP
// (grub) load no ticket: their initrd asks for it over HTTP from a privileged
// port while the node is booting (the same address rule), and the ticket is
// issued then.

class BootService {
 public:
  // Creates the boot loader, which loads its templates; a missing or bad one
  // is an error naming it.
  static Result<std::unique_ptr<BootService>> Create(const BootSettings& settings, Store& store,
                                                     ImageCatalog& images);

  // Records that the node with `mac` passed `stage` (detail: what was seen)
  // and returns the node as it is now. Unknown MACs become discovered nodes.
  // The same stage of the same node again within a few seconds (iPXE retries,
  // a client asking twice) is not written again. Thread-safe.
  Result<NodeRecord> RecordStage(const std::string& mac, BootStage stage, const std::string& detail,
                                 const std::string& ip = "");
  // RecordStage where the stage is only told (a DHCP lease given, a file
  // being sent): a failure to record it is logged.
  void NoteStage(const std::string& mac, BootStage stage, const std::string& detail,
                 const std::string& ip);

  HttpResponse StartScript() const;
  HttpResponse NodeScript(const std::string& mac_text, const std::string& remote);

  // For loaders that read their scripts by TFTP: writes their start scripts
  // into the TFTP root (at start), and the node's script when its port asks
  // DHCP for an address (dnsmasq's log, before its firmware loads the
  // loader), from the node as it is then. Files are written only when they
  // change (write, rename). The node's may wait for its image's NFS check:
  // call it off threads that must not block (the daemon queues it).
  Status WriteTftpStartScripts();
  void WriteTftpNodeScript(const std::string& mac);
  // dnsmasq sent `file` (a path in the TFTP root) to `ip`: the stage it
  // marks for the node with that address, if it is a loader's file.
  void RecordTftpSent(const std::string& ip, const std::string& file);

  // The loader UEFI firmware gives `node`: its own choice, else its
  // profile's, else dhcp.uefi_loader.
  const BootLoader& UefiLoaderFor(const NodeRecord& node) const;
  // Per-node loader choices over TFTP. dnsmasq serves a client from
  // <tftp root>/<mac-hyphen>/ when that directory exists
  // (tftp-unique-root=mac), else from the root. A node whose UEFI loader is
  // not the default has such a directory: the default's first stage there is
  // a link to its loader's, and everything else that loader reads is a link
  // to the root. Brings the directories in step with the inventory when
  // Store::BootLoadersVersion moved (the daemon calls it on dnsmasq's tick);
  // returns how many were made or removed.
  int SyncTftpNodeDirs();
  HttpResponse NodeFile(const HttpRequest& request, const std::string& mac_text,
                        const std::string& file);
  // UEFI HTTP boot: the URL firmware that boots over HTTP loads the loader
  // from (the UEFI binary of the loader BIOS clients get, iPXE); empty when
  // that loader reads its scripts by TFTP (it could go no further).
  std::string HttpLoaderUrl() const;
  // GET /boot/<name> of one of that loader's binaries, recorded as the
  // stage TFTP records for it (by the client's address); 404 for others.
  HttpResponse LoaderFile(const HttpRequest& request, const std::string& name);

  // Set once the HTTP server knows its port (before dnsmasq starts).
  void set_boot_url(const std::string& url);
  std::string boot_url() const;
  // Set once the network console listens (before dnsmasq starts).
  void set_console_target(const std::string& target);

  // The kernel command line for a node (also shown by `node why`).
  std::string KernelCommandLine(const NodeRecord& node, const ImageVersion& image) const {
    return KernelCommandLine(node, image, *loader_);
  }
  std::string KernelCommandLine(const NodeRecord& node, const ImageVersion& image,
                                const BootLoader& loader) const;

  // The loader whose scripts are asked for over HTTP (iPXE, for BIOS
  // firmware), and the one UEFI firmware is given.
  const BootLoader& loader() const { return *loader_; }
  const BootLoader& uefi_loader() const { return *uefi_loader_; }
  // Every file TFTP serves for both.
  std::vector<TftpFile> TftpFiles() const;

 private:
  BootService(const BootSettings& settings, Store& store, ImageCatalog& images)
      : settings_(settings), store_(store), images_(images) {}
  ScriptContext Context(const NodeRecord* node) const;
  // The node's script from `loader`, for the node as it is.
  Result<std::string> RenderNodeScript(const BootLoader& loader, const NodeRecord& node);
  // Writes `text` at `path` in the TFTP root (write, rename).
  Status WriteTftpFile(const std::string& path, const std::string& text);
  // The links of a node's TFTP directory for `loader`: name -> file or
  // folder of the root.
  std::map<std::string, std::string> NodeDirLinks(const BootLoader& loader) const;
  // Links the image's kernel and initrd into the TFTP root (once).
  Status LinkTftpImage(const BootLoader& loader, const ImageVersion& image);
  // The node's files on provisiond (the URL of what NodeFile serves), and the
  // initrds it loads from there.
  std::string FilesUrl(const std::string& mac) const;
  std::vector<BootFile> Initrds(const std::string& mac, const ImageVersion& image) const;
  // The node's outstanding ticket, made now if there is none.
  Result<std::string> IssueTicket(int64_t node_id);
  HttpResponse TicketImage(const HttpRequest& request, const std::string& mac);
  // GET /boot/<mac>/ticket: the ticket as text, for initrds loaded without
  // one (by TFTP), from a privileged port of a node that is booting.
  HttpResponse TicketText(const HttpRequest& request, const std::string& mac);

  BootSettings settings_;  // boot_url and console_target guarded by url_mu_
  mutable std::mutex url_mu_;
  Store& store_;
  ImageCatalog& images_;
  std::unique_ptr<BootLoader> loader_, uefi_loader_;
  // The UEFI loader that is not the default, for nodes that choose it (null
  // when the default is iPXE and the signed chain's files are missing).
  std::unique_ptr<BootLoader> uefi_other_;
  std::mutex tftp_mu_;
  int64_t tftp_dirs_version_ = -1;                             // tftp_mu_
  std::map<std::string, std::string> tftp_dirs_;               // mac-hyphen -> loader; tftp_mu_
  std::unordered_map<std::string, std::string> tftp_written_;  // path -> content; tftp_mu_
  std::mutex recent_mu_;
  std::unordered_map<std::string, int64_t> recent_;  // mac+stage -> ms; guarded by recent_mu_
};

}  // namespace prov
