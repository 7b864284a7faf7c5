// What a booting node downloads over HTTP: the loaders' files, its kernel
// and initrds, and its ticket (a one-time credential in an initrd of its
// own), each first download a boot stage.
#include "boot/boot.h"

#include <sys/stat.h>

#include <spdlog/spdlog.h>

#include <atomic>
#include <random>

#include "base/file_util.h"
#include "base/mac.h"
#include "base/tar.h"

namespace prov {

namespace {

// Whether a request starts a download (a Range request for a later part is
// the same download continuing): only those are boot stages.
bool StartsDownload(const HttpRequest& request) {
  const std::string range = request.Header("range");
  return range.empty() || range.rfind("bytes=0-", 0) == 0;
}

}  // namespace

std::string BootService::FilesUrl(const std::string& mac) const {
  return boot_url() + "/boot/" + HyphenatedMac(mac);
}

std::vector<BootFile> BootService::Initrds(const std::string& mac,
                                           const ImageVersion& image) const {
  // ?v= names the version the script was rendered for (see NodeFile); the
  // ticket comes after the image's initrd, which the kernel unpacks first.
  return {{"initrd.img", FilesUrl(mac) + "/initrd.img?v=" + image.version},
          {"ticket.img", FilesUrl(mac) + "/ticket.img"}};
}

Result<std::string> BootService::IssueTicket(int64_t node_id) {
  std::string ticket;
  Status s = store_.Transact([&](StoreTx& tx) -> Status {
    auto n = tx.NodeById(node_id);
    if (!n.ok()) return n.status();
    if (!n->ticket.empty()) {
      ticket = n->ticket;
      return Status::Ok();
    }
    n->ticket = ticket = RandomHex(16);
    return tx.UpdateNode(*n);
  });
  if (!s.ok()) return s;
  return ticket;
}

HttpResponse BootService::TicketImage(const HttpRequest& request, const std::string& mac) {
  auto node = store_.FindNode(mac);
  if (!node.ok()) return HttpResponse::FromStatus(node.status());
  if (node->ticket.empty())
    return HttpResponse::Error(
        404, "no boot of " + node->name() + " waits for a ticket (its boot script issues one)");
  if (settings_.reserved_addresses && request.remote != node->ip) {
    EventRecord e{.node_id = node->id,
                  .node = node->name(),
                  .kind = "refused",
                  .detail = "boot ticket asked for from " + request.remote + ", not from " +
                            (node->ip.empty() ? "its reserved address (none yet)" : node->ip),
                  .who = "boot"};
    store_.RecordEvent(e);
    return HttpResponse::Error(
        403, "the boot ticket of " + node->name() + " is served to its reserved address only");
  }
  HttpResponse r = HttpResponse::Text(200,
                                      WriteCpio({{"provision", "", 0700, 0, 0, true},
                                                 {"provision/ticket", node->ticket + "\n", 0400}},
                                                NowMs() / 1000),
                                      "application/octet-stream");
  r.headers.emplace_back("Cache-Control", "no-store");
  return r;
}

HttpResponse BootService::TicketText(const HttpRequest& request, const std::string& mac) {
  auto node = store_.FindNode(mac);
  if (!node.ok()) return HttpResponse::FromStatus(node.status());
  std::string refusal;
  if (!request.FromPrivilegedPort())
    refusal = "from port " + std::to_string(request.remote_port) +
              " (only root on the node can use a port below 1024)";
  else if (settings_.reserved_addresses && request.remote != node->ip)
    refusal = "from " + request.remote + ", not from " +
              (node->ip.empty() ? "its reserved address (none yet)" : node->ip);
  else if (node->state != NodeState::kBooting)
    refusal = "while it is " + std::string(ToString(node->state)) +
              " (a ticket is for a boot through the boot path)";
  if (!refusal.empty()) {
    EventRecord e{.node_id = node->id,
                  .node = node->name(),
                  .kind = "refused",
                  .detail = "boot ticket asked for " + refusal,
                  .who = "boot"};
    store_.RecordEvent(e);
    return HttpResponse::Error(403,
                               "no boot ticket for " + node->name() + ": asked for " + refusal);
  }
  auto ticket = node->ticket.empty() ? IssueTicket(node->id) : Result<std::string>(node->ticket);
  if (!ticket.ok()) return HttpResponse::FromStatus(ticket.status());
  HttpResponse r = HttpResponse::Text(200, *ticket + "\n", "text/plain");
  r.headers.emplace_back("Cache-Control", "no-store");
  return r;
}

std::string BootService::HttpLoaderUrl() const {
  if (!loader_->TftpScriptPath(ScriptName{.start = true, .node = ""}).empty()) return "";
  return boot_url() + "/boot/" + loader_->FirstStage(ClientArch::kUefiX64);
}

HttpResponse BootService::LoaderFile(const HttpRequest& request, const std::string& name) {
  if (!loader_->TftpScriptPath(ScriptName{.start = true, .node = ""}).empty())
    return HttpResponse::Error(404, "no boot script '" + name + "'");
  for (const auto& f : loader_->TftpFiles()) {
    if (f.name != name) continue;
    struct stat st {};
    if (stat(f.source.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      return HttpResponse::Error(404, f.source + " is missing on the control node (" +
                                          std::string(loader_->package()) + ")");
    if (request.method == "GET" && StartsDownload(request)) RecordTftpSent(request.remote, name);
    return ServeFile(
        request, f.source, static_cast<uint64_t>(st.st_size),
        "\"" + name + "-" + std::to_string(st.st_size) + "-" + std::to_string(st.st_mtime) + "\"",
        "application/efi");
  }
  return HttpResponse::Error(404, "no boot script or loader '" + name + "'");
}

HttpResponse BootService::NodeFile(const HttpRequest& request, const std::string& mac_text,
                                   const std::string& file) {
  auto mac = NormalizeMac(mac_text);
  if (!mac.ok()) return HttpResponse::FromStatus(mac.status());
  if (file == "overlay.tar") {
    if (!settings_.render_overlay) return HttpResponse::Error(404, "no overlays are served");
    auto tar = settings_.render_overlay(*mac, request);
    if (!tar.ok()) return HttpResponse::FromStatus(tar.status());
    HttpResponse r = HttpResponse::Text(200, std::move(*tar), "application/x-tar");
    r.headers.emplace_back("Cache-Control", "no-store");
    return r;
  }
  if (file == "ticket.img") return TicketImage(request, *mac);
  if (file == "ticket") return TicketText(request, *mac);
  if (file != "vmlinuz" && file != "initrd.img")
    return HttpResponse::Error(
        404,
        "no boot file '" + file + "' (vmlinuz, initrd.img, ticket.img, ticket or overlay.tar)");
  auto node = store_.FindNode(*mac);
  if (!node.ok()) return HttpResponse::FromStatus(node.status());
  if (node->image_version.empty())
    return HttpResponse::Error(404, node->name() + " has no image (no profile)");
  // The script names the version it was rendered for, so a build finishing
  // between the script and the downloads cannot mix two versions in one boot.
  std::string ref = node->image_version;
  if (std::string v = request.Query("v"); !v.empty()) ref = ref.substr(0, ref.find('@')) + "@" + v;
  auto image = images_.Resolve(ref);
  if (!image.ok()) return HttpResponse::FromStatus(image.status());
  const bool kernel = file == "vmlinuz";
  if (StartsDownload(request))
    NoteStage(*mac, kernel ? BootStage::kKernel : BootStage::kInitrd, image->ref(), request.remote);
  return ServeFile(request, kernel ? image->kernel : image->initrd,
                   kernel ? image->kernel_size : image->initrd_size,
                   "\"" + image->version + "-" + file + "\"", "application/octet-stream");
}

}  // namespace prov
