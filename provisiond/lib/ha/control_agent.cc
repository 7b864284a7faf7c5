#include "ha/control_agent.h"

#include <curl/curl.h>
#include <spdlog/spdlog.h>
#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <set>

#include "base/file_util.h"
#include "base/strings.h"
#include "base/thread.h"
#include "ha/lease.h"
#include "ha/nfs_clients.h"
#include "images/image_archive.h"
#include "images/image_catalog.h"

namespace prov {
namespace fs = std::filesystem;

namespace {

// One archive download into an open file (appending after `have` bytes).
struct Download {
  CURL* curl = nullptr;
  FILE* out = nullptr;
  uint64_t have = 0;
  bool checked = false;
  long code = 0;
  std::string sha256;  // X-Archive-SHA256
  std::string error;   // the body of an answer that is not the archive
  std::function<bool(uint64_t now, uint64_t total)> progress;  // false: stop
};

size_t OnHeader(char* data, size_t size, size_t n, void* arg) {
  auto* d = static_cast<Download*>(arg);
  const std::string line(data, size * n);
  constexpr std::string_view kName = "x-archive-sha256:";
  if (line.size() > kName.size() && strncasecmp(line.c_str(), kName.data(), kName.size()) == 0)
    d->sha256 = Trim(line.substr(kName.size()));
  return size * n;
}

size_t OnBody(char* data, size_t size, size_t n, void* arg) {
  auto* d = static_cast<Download*>(arg);
  if (!d->checked) {
    d->checked = true;
    curl_easy_getinfo(d->curl, CURLINFO_RESPONSE_CODE, &d->code);
    // The whole file again (the server ignored the range): start over.
    if (d->code == 200 && d->have > 0) {
      if (ftruncate(fileno(d->out), 0) != 0 || fseek(d->out, 0, SEEK_SET) != 0) return 0;
      d->have = 0;
    }
  }
  if (d->code != 200 && d->code != 206) {
    if (d->error.size() < 1000) d->error.append(data, size * n);
    return size * n;
  }
  return fwrite(data, size, n, d->out) == n ? size * n : 0;
}

int OnProgress(void* arg, curl_off_t total, curl_off_t now, curl_off_t, curl_off_t) {
  auto* d = static_cast<Download*>(arg);
  if (!d->progress) return 0;
  return d->progress(d->have + static_cast<uint64_t>(now), d->have + static_cast<uint64_t>(total))
             ? 0
             : 1;
}

std::string MiB(uint64_t bytes) {
  return std::to_string(bytes / (1024 * 1024)) + " MiB";
}

}  // namespace

ControlAgent::ControlAgent(ControlLease& lease, ImageCatalog& catalog,
                           ControlAgentSettings settings)
    : lease_(lease), catalog_(catalog), settings_(std::move(settings)) {}

ControlAgent::~ControlAgent() {
  Stop();
}

void ControlAgent::Start(std::string role, std::string url, std::string tls_pin) {
  Stop();
  {
    std::lock_guard lock(mu_);
    role_ = std::move(role);
    url_ = std::move(url);
    tls_pin_ = std::move(tls_pin);
    stop_ = false;
  }
  thread_ = std::thread([this] { RunGuarded("control agent", [this] { Loop(); }); });
}

void ControlAgent::SetPrepareRoot(std::function<Status(const ImageVersion&)> prepare) {
  std::lock_guard lock(mu_);
  prepare_root_ = std::move(prepare);
}

void ControlAgent::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ControlAgent::Loop() {
  std::string last_error;
  std::unique_lock lock(mu_);
  while (!stop_) {
    lock.unlock();
    auto round = RunOnce();
    // A failure is logged when it changes, not every round.
    const std::string error = round.ok() ? "" : round.status().message();
    if (!error.empty() && error != last_error) spdlog::warn("{}", error);
    last_error = error;
    lock.lock();
    cv_.wait_for(lock, std::chrono::milliseconds(settings_.interval_ms), [&] { return stop_; });
  }
}

Status ControlAgent::Report() {
  ControlNodeReport r;
  r.name = settings_.name;
  {
    std::lock_guard lock(mu_);
    r.role = role_;
    r.url = url_;
    r.tls_pin = tls_pin_;
    r.copying = copying_;
  }
  DescribeImages(catalog_, r);
  if (settings_.alike) r.alike = settings_.alike();
  if (r.role == "active" && settings_.report_nfs_clients)
    for (const TcpConnection& c : EstablishedTo(kNfsPort)) r.nfs_clients.push_back(c.ToString());
  return lease_.Report(r);
}

Result<std::vector<std::string>> ControlAgent::RunOnce() {
  if (Status s = Report(); !s.ok()) return s;
  std::vector<std::string> copied;
  std::function<Status(const ImageVersion&)> prepare;
  bool is_active = false;
  {
    std::lock_guard lock(mu_);
    is_active = role_ == "active";
    prepare = prepare_root_;
  }
  if (is_active) {
    Status failed = Status::Ok();
    if (prepare)
      for (const ImageVersion& v : catalog_.List())
        if (Status s = prepare(v); !s.ok()) failed = s;
    RemoveCopiedArchives();
    if (!failed.ok()) return failed;
    return copied;
  }
  auto holder = lease_.Read();
  if (!holder.ok()) return holder.status();
  auto nodes = lease_.ControlNodes();
  if (!nodes.ok()) return nodes.status();
  const ControlNodeReport* active = nullptr;
  for (const auto& n : *nodes)
    if (n.name == holder->holder && n.role == "active" && !n.url.empty()) active = &n;
  if (!active) return copied;  // none yet, or it has not said where it is
  ControlNodeReport mine;
  DescribeImages(catalog_, mine);
  const std::vector<std::string> lacking = Lacking(mine, active->images);
  if (!lacking.empty() && settings_.token.empty())
    return Status::Error(Code::kUnavailable,
                         "control node " + settings_.name + " cannot copy " + Join(lacking, ", ") +
                             " from " + active->name +
                             ": its tokens file has no admin token (the control nodes share one)");
  Status failed = Status::Ok();
  for (const std::string& ref : lacking) {
    if (Status s = Copy(*active, ref); !s.ok()) {
      failed = s;
      continue;
    }
    copied.push_back(ref);
  }
  {
    std::lock_guard lock(mu_);
    copying_.clear();
  }
  // The names resolve as on the active, for the versions this one holds.
  for (const auto& [name, version] : active->current) {
    auto want = catalog_.Resolve(name + "@" + version);
    auto now = catalog_.Resolve(name);
    if (want.ok() && (!now.ok() || now->version != version)) {
      if (Status s = catalog_.MakeCurrent(*want); !s.ok()) failed = s;
    }
  }
  if (Status s = Report(); !s.ok()) return s;
  if (!failed.ok()) return failed;
  return copied;
}

void ControlAgent::RemoveCopiedArchives() {
  if (settings_.archive_dir.empty() || !fs::is_directory(settings_.archive_dir)) return;
  auto nodes = lease_.ControlNodes();
  if (!nodes.ok()) return;
  std::set<std::string> held;
  for (const ImageVersion& v : catalog_.List()) held.insert(v.ref());
  std::error_code ec;
  std::vector<fs::path> archives;
  for (const auto& entry : fs::directory_iterator(settings_.archive_dir, ec))
    if (entry.path().extension() == ".tar") archives.push_back(entry.path());
  for (const fs::path& archive : archives) {
    const std::string file = archive.filename().string();
    const std::string ref = file.substr(0, file.size() - 4);
    // Kept while a control node that reported within the last minute lacks
    // a version this one still holds (it may be copying it now).
    bool everyone_has_it = true;
    for (const auto& n : *nodes)
      if (n.name != settings_.name && n.age_ms <= kControlNodeDownMs &&
          !std::binary_search(n.images.begin(), n.images.end(), ref))
        everyone_has_it = false;
    if (held.count(ref) && !everyone_has_it) continue;
    fs::remove(archive, ec);
    fs::remove(archive.string() + ".sha256", ec);
    spdlog::info("removed the archive of {}: {}", ref,
                 held.count(ref) ? "every control node holds it" : "the version is gone");
  }
}

Status ControlAgent::Copy(const ControlNodeReport& active, const std::string& ref) {
  const auto started = std::chrono::steady_clock::now();
  const std::string url = active.url + "/api/v1/images/" + ref + "/archive";
  const std::string from = "copying " + ref + " from " + active.name + " (" + url + ")";
  if (active.url.rfind("https://", 0) == 0 && active.tls_pin.empty())
    return Status::Error(Code::kUnavailable, from + ": the active reported no key to pin");
  if (Status s = MakeDirs(settings_.staging_dir, 0700); !s.ok()) return s;
  const std::string part = settings_.staging_dir + "/" + ref + ".tar.part";
  FILE* out = fopen(part.c_str(), "ab");
  if (!out) return Status::Internal(from + ": cannot write " + part);
  Download d;
  d.out = out;
  // What an earlier round got of it: the download goes on from there.
  const long had = fseek(out, 0, SEEK_END) == 0 ? ftell(out) : -1;
  d.have = had > 0 ? static_cast<uint64_t>(had) : 0;
  if (d.have > 0)
    spdlog::info("{} from {}: going on after the {} bytes copied before", ref, active.name, d.have);
  int last_step = -1;
  auto last_report = std::chrono::steady_clock::now();
  d.progress = [&](uint64_t now, uint64_t total) {
    if (total > 0) {
      const int pct = static_cast<int>(now * 100 / total);
      {
        std::lock_guard lock(mu_);
        copying_ = ref + ": " + std::to_string(pct) + "% of " + MiB(total);
        if (stop_) return false;
      }
      if (pct / 25 != last_step) {
        last_step = pct / 25;
        spdlog::info("{} from {}: {}% of {}", ref, active.name, pct, MiB(total));
      }
      if (std::chrono::steady_clock::now() - last_report >
          std::chrono::milliseconds(settings_.interval_ms)) {
        last_report = std::chrono::steady_clock::now();
        (void)Report().ok();  // progress only: the next round reports again
      }
    }
    std::lock_guard lock(mu_);
    return !stop_;
  };
  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) {
    fclose(out);
    return Status::Internal(from + ": libcurl");
  }
  d.curl = curl.get();
  const std::string auth = "Authorization: Bearer " + settings_.token;
  curl_slist* headers = curl_slist_append(nullptr, auth.c_str());
  curl_easy_setopt(d.curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(d.curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(d.curl, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(d.curl, CURLOPT_WRITEDATA, &d);
  curl_easy_setopt(d.curl, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(d.curl, CURLOPT_HEADERDATA, &d);
  curl_easy_setopt(d.curl, CURLOPT_XFERINFOFUNCTION, OnProgress);
  curl_easy_setopt(d.curl, CURLOPT_XFERINFODATA, &d);
  curl_easy_setopt(d.curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(d.curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(d.curl, CURLOPT_CONNECTTIMEOUT, 10L);
  // The archive is made before the first byte (up to minutes for a large
  // image); after that, a transfer that stalls for a minute ends.
  curl_easy_setopt(d.curl, CURLOPT_TIMEOUT, 0L);
  curl_easy_setopt(d.curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(d.curl, CURLOPT_LOW_SPEED_TIME, 600L);
  curl_easy_setopt(d.curl, CURLOPT_RESUME_FROM_LARGE, static_cast<curl_off_t>(d.have));
  if (!active.tls_pin.empty()) {
    // The active's self-signed certificate: its key, as the active reported
    // it in the database, is the check.
    curl_easy_setopt(d.curl, CURLOPT_PINNEDPUBLICKEY, active.tls_pin.c_str());
    curl_easy_setopt(d.curl, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(d.curl, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  const CURLcode rc = curl_easy_perform(d.curl);
  curl_slist_free_all(headers);
  if (!d.checked) curl_easy_getinfo(d.curl, CURLINFO_RESPONSE_CODE, &d.code);
  const bool closed = fclose(out) == 0;
  std::error_code ec;
  // 416: what was asked for starts at the end: the file is whole already.
  if (rc != CURLE_OK && d.code != 416)
    return Status::Error(Code::kUnavailable, from + ": " + curl_easy_strerror(rc));
  if (!closed) return Status::Internal(from + ": cannot write " + part);
  if (d.code != 200 && d.code != 206 && d.code != 416) {
    fs::remove(part, ec);
    return Status::Error(Code::kUnavailable, from + ": HTTP " + std::to_string(d.code) +
                                                 (d.error.empty() ? "" : ": " + Trim(d.error)));
  }
  if (d.sha256.empty())
    return Status::Error(Code::kUnavailable, from + ": no X-Archive-SHA256 in the answer");
  auto installed = InstallImageArchive(catalog_, ref, part, d.sha256);
  fs::remove(part, ec);  // a damaged copy is not resumed: the next round starts over
  if (!installed.ok())
    return Status::Error(installed.status().code(), from + ": " + installed.status().message());
  const double s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  spdlog::info("copied {} from {} in {:.1f} s", ref, active.name, s);
  return Status::Ok();
}

}  // namespace prov
