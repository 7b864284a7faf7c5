// The nodes table: a node's row read, added, changed, removed and moved
// through its life cycle within a transaction; the node cache filled from
// it; the counts by state; and the address book (migration 006) the dnsmasq
// hosts file and every node's /etc/hosts are written from.
#include <string_view>

#include "base/file_util.h"
#include "store/store.h"
#include "store/store_sql.h"

namespace prov {
namespace {

constexpr const char* kNodeColumns =
    "id, mac, hostname, ip, state, reason, profile_version, image_version, facts, host_key, "
    "token, stage, last_seen, created, updated, power, configured, ticket, uefi_loader, health, "
    "storage_wipe, installed, installed_baked";

// SQL texts, each prepared once (the cache is keyed by these pointers).
const std::string kSelectNodeByName =
    std::string("SELECT ") + kNodeColumns + " FROM nodes WHERE hostname = ?1 OR mac = ?1";
const std::string kSelectNodeById =
    std::string("SELECT ") + kNodeColumns + " FROM nodes WHERE id = ?1";
const std::string kAllNodes = std::string("SELECT ") + kNodeColumns + " FROM nodes";
const char* const kSelectAllNodes = kAllNodes.c_str();
const std::string kSelectNodes = std::string("SELECT ") + kNodeColumns +
                                 " FROM nodes WHERE (CAST(?1 AS TEXT) IS NULL OR state = ?1) AND "
                                 "(CAST(?2 AS TEXT) IS NULL OR profile_version = ?2) "
                                 "ORDER BY hostname IS NULL, hostname, mac";
// Nodes that may boot another UEFI loader than the default (migration 008):
// their own choice, or a profile version in ?1 (a JSON array).
const std::string kSelectUefiChoosers =
    std::string("SELECT ") + kNodeColumns +
    " FROM nodes WHERE state NOT IN ('discovered', 'retired') AND (uefi_loader != '' OR "
    "profile_version IN (SELECT value FROM json_each(?1))) ORDER BY id";
// The same on PostgreSQL, whose JSON array elements come from another
// function.
const std::string kSelectUefiChoosersPostgres =
    std::string("SELECT ") + kNodeColumns +
    " FROM nodes WHERE state NOT IN ('discovered', 'retired') AND (uefi_loader != '' OR "
    "profile_version IN (SELECT json_array_elements_text(CAST(?1 AS json)))) ORDER BY id";
constexpr const char* kSelectProfilesInUse =
    "SELECT DISTINCT profile_version FROM nodes WHERE profile_version IS NOT NULL AND "
    "state NOT IN ('discovered', 'retired')";
constexpr const char* kInsertNode =
    "INSERT INTO nodes (mac, hostname, ip, state, reason, profile_version, image_version, facts, "
    "host_key, token, stage, last_seen, created, updated, power, configured, ticket, uefi_loader, "
    "health, storage_wipe, installed, installed_baked) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, "
    "?10, ?11, ?12, ?13, ?14, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23) RETURNING id";
constexpr const char* kUpdateNode =
    "UPDATE nodes SET mac = ?1, hostname = ?2, ip = ?3, state = ?4, reason = ?5, "
    "profile_version = ?6, image_version = ?7, facts = ?8, host_key = ?9, token = ?10, "
    "stage = ?11, last_seen = ?12, updated = ?14, power = ?16, configured = ?17, ticket = ?18, "
    "uefi_loader = ?19, health = ?20, storage_wipe = ?21, installed = ?22, installed_baked = ?23 "
    "WHERE id = ?15";
constexpr const char* kDeleteNode = "DELETE FROM nodes WHERE id = ?1";
constexpr const char* kCountByState = "SELECT state, count(*) FROM nodes GROUP BY state";
constexpr const char* kCountInState = "SELECT count(*) FROM nodes WHERE state = ?1";
constexpr const char* kAddressesVersion = "SELECT value FROM counters WHERE name = 'addresses'";
constexpr const char* kBootLoadersVersion =
    "SELECT value FROM counters WHERE name = 'boot_loaders'";
constexpr const char* kSelectAddresses =
    "SELECT mac, ip, hostname FROM nodes WHERE ip IS NOT NULL AND ip != '' AND "
    "state NOT IN ('discovered', 'retired') ORDER BY id";

NodeRecord ReadNode(const sql::Statement& s) {
  NodeRecord n;
  n.id = s.Int(0);
  n.mac = s.Text(1);
  n.hostname = s.Text(2);
  n.ip = s.Text(3);
  n.state = ParseNodeState(s.Text(4)).value_or(NodeState::kFailed);
  n.reason = s.Text(5);
  n.profile_version = s.Text(6);
  n.image_version = s.Text(7);
  n.facts = s.Text(8);
  n.host_key = s.Text(9);
  n.token = s.Text(10);
  n.stage = ParseBootStage(s.Text(11));
  n.last_seen_ms = s.Int(12);
  n.created_ms = s.Int(13);
  n.updated_ms = s.Int(14);
  n.power = s.Text(15);
  n.configured = s.Text(16);
  n.ticket = s.Text(17);
  n.uefi_loader = s.Text(18);
  n.health = s.Text(19);
  n.storage_wipe = s.Text(20);
  n.installed = s.Int(21) != 0;
  n.installed_baked = s.Text(22);
  return n;
}

void BindNode(sql::Statement& s, const NodeRecord& n) {
  BindText(s, 1, n.mac);
  BindText(s, 2, n.hostname, true);
  BindText(s, 3, n.ip, true);
  BindText(s, 4, ToString(n.state));
  BindText(s, 5, n.reason);
  BindText(s, 6, n.profile_version, true);
  BindText(s, 7, n.image_version, true);
  BindText(s, 8, n.facts);
  BindText(s, 9, n.host_key, true);
  BindText(s, 10, n.token);
  BindText(s, 11, n.stage ? ToString(*n.stage) : "");
  if (n.last_seen_ms)
    s.Bind(12, n.last_seen_ms);
  else
    s.BindNull(12);
  s.Bind(13, n.created_ms);
  s.Bind(14, n.updated_ms);
  BindText(s, 16, n.power.empty() ? "{}" : n.power);
  BindText(s, 17, n.configured);
  BindText(s, 18, n.ticket);
  BindText(s, 19, n.uefi_loader);
  BindText(s, 20, n.health);
  BindText(s, 21, n.storage_wipe);
  s.Bind(22, int64_t{n.installed ? 1 : 0});
  BindText(s, 23, n.installed_baked);
}

}  // namespace

Result<NodeRecord> StoreTx::FindNode(const std::string& name) {
  Store::Stmt s(store_, kSelectNodeByName.c_str());
  BindText(*s, 1, name);
  auto row = s->Step("cannot look up a node");
  if (!row.ok()) return row.status();
  if (*row) return ReadNode(*s);
  return Status::NotFound("no node named '" + name + "' (by hostname or MAC)");
}

Result<NodeRecord> StoreTx::NodeById(int64_t id) {
  Store::Stmt s(store_, kSelectNodeById.c_str());
  s->Bind(1, id);
  auto row = s->Step("cannot read a node");
  if (!row.ok()) return row.status();
  if (*row) return ReadNode(*s);
  return Status::NotFound("no node with id " + std::to_string(id));
}

Result<NodeRecord> StoreTx::InsertNode(NodeRecord node) {
  node.created_ms = node.updated_ms = NowMs();
  if (node.token.empty()) node.token = RandomHex(16);
  Store::Stmt s(store_, kInsertNode);
  BindNode(*s, node);
  const std::string what = "cannot add node " + node.name();
  auto id = s->Insert(what);
  if (!id.ok()) {
    const Status& e = id.status();
    if (e.code() == Code::kConflict) {
      // The database's message follows `what`: "UNIQUE constraint failed:
      // nodes.mac" (SQLite), "... violates unique constraint "nodes_mac_key""
      // (PostgreSQL).
      const std::string_view m = std::string_view(e.message()).substr(what.size());
      auto names = [&](std::string_view column) {
        return m.find("nodes." + std::string(column)) != std::string_view::npos ||
               m.find("nodes_" + std::string(column) + "_key") != std::string_view::npos;
      };
      if (names("mac")) return Status::Conflict("a node with MAC " + node.mac + " exists already");
      if (names("hostname"))
        return Status::Conflict("a node named '" + node.hostname + "' exists already");
    }
    return e;
  }
  node.id = *id;
  // The node cache gets the row as SQLite holds it (NULLs, defaults).
  auto stored = NodeById(node.id);
  if (!stored.ok()) return stored.status();
  store_.pending_nodes_.emplace_back(node.id, *stored);
  return node;
}

Status StoreTx::UpdateNode(NodeRecord& node) {
  node.updated_ms = NowMs();
  Store::Stmt s(store_, kUpdateNode);
  BindNode(*s, node);
  s->Bind(15, node.id);
  if (Status e = s->Run("cannot update node " + node.name()); !e.ok()) {
    if (e.code() == Code::kConflict)
      return Status::Conflict("another node already has hostname '" + node.hostname + "' or MAC " +
                              node.mac);
    return e;
  }
  if (store_.db_.Changes() != 1) return Status::NotFound("node " + node.name() + " is gone");
  auto stored = NodeById(node.id);
  if (!stored.ok()) return stored.status();
  store_.pending_nodes_.emplace_back(node.id, *stored);
  return Status::Ok();
}

Status StoreTx::DeleteNode(int64_t id) {
  Store::Stmt s(store_, kDeleteNode);
  s->Bind(1, id);
  if (Status e = s->Run("cannot delete node"); !e.ok()) return e;
  store_.pending_nodes_.emplace_back(id, std::nullopt);
  return Status::Ok();
}

Status StoreTx::Transition(NodeRecord& node, NodeState to, const std::string& detail,
                           const std::string& who) {
  Status s = CheckTransition(node.state, to);
  if (!s.ok()) return Status::Conflict(node.name() + ": " + s.message());
  NodeState from = node.state;
  node.state = to;
  if (to != NodeState::kFailed && to != NodeState::kMaintenance) node.reason.clear();
  if (to == NodeState::kFailed || to == NodeState::kMaintenance) node.reason = detail;
  s = UpdateNode(node);
  if (!s.ok()) return s;
  EventRecord e;
  e.node_id = node.id;
  e.node = node.name();
  e.kind = "state";
  e.detail = std::string(ToString(from)) + " -> " + std::string(ToString(to)) +
             (detail.empty() ? "" : ": " + detail);
  e.who = who;
  return AppendEvent(e);
}

std::vector<NodeRecord> StoreTx::ListNodes(const NodeFilter& filter) {
  Store::Stmt s(store_, kSelectNodes.c_str());
  if (filter.state) BindText(*s, 1, ToString(*filter.state));
  if (filter.profile_version) BindText(*s, 2, *filter.profile_version);
  std::vector<NodeRecord> out;
  while (ReadRow(*s, "cannot list the nodes")) out.push_back(ReadNode(*s));
  return out;
}

int64_t StoreTx::CountInState(NodeState state) {
  Store::Stmt s(store_, kCountInState);
  BindText(*s, 1, ToString(state));
  return ReadRow(*s, "cannot count the nodes in a state") ? s->Int(0) : 0;
}

Result<NodeRecord> Store::FindNode(const std::string& name) {
  if (NodePtr n = nodes_.Find(name)) return *n;
  return Status::NotFound("no node named '" + name + "' (by hostname or MAC)");
}

Result<NodeRecord> Store::FindNodeByIp(const std::string& ip) {
  if (NodePtr n = nodes_.ByIp(ip)) return *n;
  return Status::NotFound("no node has address " + ip);
}

Status Store::LoadNodes() {
  std::vector<NodeRecord> all;
  Stmt s(*this, kSelectAllNodes);
  Status read = ForEachRow(*s, "cannot read the nodes",
                           [&](const sql::Statement& row) { all.push_back(ReadNode(row)); });
  if (!read.ok()) return read;
  nodes_.Reset(std::move(all));
  return Status::Ok();
}

int64_t Store::AddressesVersion() {
  std::lock_guard lock(mu_);
  Stmt s(*this, kAddressesVersion);
  return ReadRow(*s, "cannot read the address counter") ? s->Int(0) : 0;
}

int64_t Store::BootLoadersVersion() {
  std::lock_guard lock(mu_);
  Stmt s(*this, kBootLoadersVersion);
  return ReadRow(*s, "cannot read the boot loader counter") ? s->Int(0) : 0;
}

std::shared_ptr<const AddressBook> Store::Addresses() {
  std::lock_guard lock(mu_);
  int64_t version = 0;
  {
    Stmt s(*this, kAddressesVersion);
    if (ReadRow(*s, "cannot read the address counter")) version = s->Int(0);
  }
  if (addresses_ && addresses_->version == version) return addresses_;
  auto book = std::make_shared<AddressBook>();
  book->version = version;
  Stmt s(*this, kSelectAddresses);
  while (ReadRow(*s, "cannot read the address book"))
    book->entries.push_back({s->Text(0), s->Text(1), s->Text(2)});
  addresses_ = std::move(book);
  return addresses_;
}

std::vector<NodeRecord> Store::ListNodes(const NodeFilter& filter) {
  auto list = nodes_.List();
  std::vector<NodeRecord> out;
  for (const auto& n : list->nodes)
    if (NodeMatches(*n, filter)) out.push_back(*n);
  return out;
}

std::vector<std::string> Store::ProfileVersionsInUse() {
  std::lock_guard lock(mu_);
  Stmt s(*this, kSelectProfilesInUse);
  std::vector<std::string> out;
  while (ReadRow(*s, "cannot read the profile versions in use")) out.push_back(s->Text(0));
  return out;
}

std::vector<NodeRecord> Store::UefiLoaderChoosers(const std::vector<std::string>& versions) {
  std::lock_guard lock(mu_);
  Stmt s(*this, db_.dialect() == sql::Dialect::kPostgres ? kSelectUefiChoosersPostgres.c_str()
                                                         : kSelectUefiChoosers.c_str());
  std::string array = "[";  // JSON: versions are words, but quotes are escaped all the same
  for (const auto& v : versions) {
    array += array.size() > 1 ? ",\"" : "\"";
    for (char c : v) {
      if (c == '"' || c == '\\') array += '\\';
      if (static_cast<unsigned char>(c) >= 0x20) array += c;
    }
    array += '"';
  }
  BindText(*s, 1, array + "]");
  std::vector<NodeRecord> out;
  while (ReadRow(*s, "cannot read the nodes that choose a UEFI loader"))
    out.push_back(ReadNode(*s));
  return out;
}

std::map<NodeState, int64_t> Store::CountByState() {
  std::lock_guard lock(mu_);
  Stmt s(*this, kCountByState);
  std::map<NodeState, int64_t> out;
  for (NodeState st : AllNodeStates()) out[st] = 0;
  while (ReadRow(*s, "cannot count the nodes by state")) {
    auto st = ParseNodeState(s->Text(0));
    if (st) out[*st] = s->Int(1);
  }
  return out;
}

}  // namespace prov
