// Beside each control node of a PostgreSQL inventory, a thread that keeps
// its row of control_nodes current (ha/control_nodes.h) and, on a standby,
// copies from the active every image version the active holds and it lacks:
// GET <active>/api/v1/images/<ref>/archive with an admin token of the shared
// tokens file, the active's TLS key pinned as the active reported it, a
// download that goes on where it stopped, then images/image_archive.h's
// checks before the version is in the store. Versions never change, so a
// version copied once is the active's, byte for byte.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/result.h"
#include "ha/control_nodes.h"
#include "images/image_catalog.h"

namespace prov {

class ControlLease;

struct ControlAgentSettings {
  std::string name;         // this control node
  std::string token;        // an admin token for the active's API ("": no copies)
  std::string staging_dir;  // where downloads go before they are checked
  std::string archive_dir;  // the active's archives for the standbys (removed once all hold them)
  int64_t interval_ms = 5000;
  // As the active, report the NFS server's connections (ha/nfs_clients.h).
  bool report_nfs_clients = false;
  // What must be alike on every control node, as digests (AlikeDigests),
  // worked out for each report; null: not reported.
  std::function<std::map<std::string, std::string>()> alike;
};

class ControlAgent {
 public:
  ControlAgent(ControlLease& lease, ImageCatalog& catalog, ControlAgentSettings settings);
  ~ControlAgent();
  ControlAgent(const ControlAgent&) = delete;
  ControlAgent& operator=(const ControlAgent&) = delete;

  // Reports every interval from a thread of its own; a standby also copies.
  // `url` and `tls_pin`: the active's API, for the standbys.
  void Start(std::string role, std::string url = "", std::string tls_pin = "");
  // On the active, each round: every version's root made ready for NFS
  // (NfsService::PrepareRoot: its erofs image, which the standbys copy).
  void SetPrepareRoot(std::function<Status(const ImageVersion&)> prepare);
  void Stop();

  // One round: this control node's row, then (a standby) the copies. The
  // versions it copied; an error when a copy failed (the next round tries
  // again).
  Result<std::vector<std::string>> RunOnce();

 private:
  Status Report();
  Status Copy(const ControlNodeReport& active, const std::string& ref);
  // On the active: the archives no standby needs any more (every control
  // node that reported within a minute holds the version, or it is gone).
  void RemoveCopiedArchives();
  void Loop();

  ControlLease& lease_;
  ImageCatalog& catalog_;
  ControlAgentSettings settings_;
  std::mutex mu_;  // guards the members below
  std::string role_, url_, tls_pin_, copying_;
  std::function<Status(const ImageVersion&)> prepare_root_;
  bool stop_ = false;
  std::condition_variable cv_;
  std::thread thread_;
};

}  // namespace prov
