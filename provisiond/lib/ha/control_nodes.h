// What each control node sharing one PostgreSQL inventory says of itself, a
// row of control_nodes (store/migrations/015): its role, where the active's
// API is (the standbys copy its images from there, its TLS key pinned), the
// image versions its image store holds and what it is copying. Each control
// node writes its own row (ha/image_sync.h); status and preflight read them
// all to name a control node that lacks an image a node boots.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/result.h"
#include "db/sql.h"

namespace prov {

class ImageCatalog;

struct ControlNodeReport {
  std::string name{};
  std::string role{};                            // "active" or "standby"
  std::string url{};                             // the active's API ("" from a standby)
  std::string tls_pin{};                         // "sha256//BASE64" of the key behind an https url
  std::vector<std::string> images{};             // "name@version", sorted
  std::map<std::string, std::string> current{};  // name -> the version it resolves to
  std::string copying{};                         // "lab@0123...: 40% of 700 MiB", or ""
  // The active's: its NFS server's connections ("10.99.0.1:2049>10.99.0.101:872",
  // ha/nfs_clients.h), for the next active to tell them that they ended.
  std::vector<std::string> nfs_clients{};
  // What must be alike on every control node (AlikeDigests), each as a
  // digest: "control key", "profiles", "playbooks", "secrets".
  std::map<std::string, std::string> alike{};
  int64_t reported_ms = 0;  // the database's clock at the report
  int64_t age_ms = 0;       // how long before the read
};

// A control node silent for this long is down: it holds no apply up, its
// differences are not named, the archives it lacked may go.
inline constexpr int64_t kControlNodeDownMs = 60000;

// Writes `r` as its control node's row, stamped with the database's clock.
Status WriteControlNode(sql::Database& db, const ControlNodeReport& r);
// Every control node's row, by name.
Result<std::vector<ControlNodeReport>> ReadControlNodes(sql::Database& db);

// The image versions `catalog` holds and the version each name resolves to,
// into `r`.
void DescribeImages(ImageCatalog& catalog, ControlNodeReport& r);

// What a control node must share with the others, for a takeover to
// configure nodes as the old active did: the key nodes trust (its public
// half), the profiles, the playbooks and the secrets store, each as a digest
// (a folder's: every file's relative path and content, in path order; the
// secrets' is one digest of them all). Unreadable parts digest as
// "unreadable: why".
std::map<std::string, std::string> AlikeDigests(const std::string& control_public_key,
                                                const std::string& profiles_dir,
                                                const std::string& playbooks_dir,
                                                const std::string& secrets_dir);
// The parts in which `other` differs from `mine` ("control key",
// "profiles"): empty when alike. A part `other` did not report is not compared.
std::vector<std::string> Unlike(const std::map<std::string, std::string>& mine,
                                const std::map<std::string, std::string>& other);

// What `node` lacks of `wanted` ("name@version" refs), in `wanted`'s order.
std::vector<std::string> Lacking(const ControlNodeReport& node,
                                 const std::vector<std::string>& wanted);

}  // namespace prov
