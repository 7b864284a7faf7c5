#include "ha/control_nodes.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "base/file_util.h"
#include "images/image_catalog.h"

namespace prov {

namespace fs = std::filesystem;

Status WriteControlNode(sql::Database& db, const ControlNodeReport& r) {
  const std::string now = sql::NowMsSql(db.dialect());
  auto st = db.Prepare(
      "INSERT INTO control_nodes (name, role, url, tls_pin, images, current, copying, "
      "nfs_clients, alike, reported) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, " +
      now +
      ") ON CONFLICT (name) DO UPDATE SET role = excluded.role, url = excluded.url, "
      "tls_pin = excluded.tls_pin, images = excluded.images, current = excluded.current, "
      "copying = excluded.copying, nfs_clients = excluded.nfs_clients, "
      "alike = excluded.alike, reported = excluded.reported");
  if (!st.ok()) return st.status();
  nlohmann::json current = r.current;
  st->Bind(1, r.name)
      .Bind(2, r.role)
      .Bind(3, r.url)
      .Bind(4, r.tls_pin)
      .Bind(5, nlohmann::json(r.images).dump())
      .Bind(6, current.dump())
      .Bind(7, r.copying)
      .Bind(8, nlohmann::json(r.nfs_clients).dump())
      .Bind(9, nlohmann::json(r.alike).dump());
  return st->Run("control node " + r.name + ": cannot write its report");
}

Result<std::vector<ControlNodeReport>> ReadControlNodes(sql::Database& db) {
  auto st = db.Prepare(
      std::string("SELECT name, role, url, tls_pin, images, current, copying, reported, ") +
      "nfs_clients, alike, " + sql::NowMsSql(db.dialect()) +
      " - reported FROM control_nodes ORDER BY name");
  if (!st.ok()) return st.status();
  std::vector<ControlNodeReport> out;
  for (;;) {
    auto row = st->Step("control nodes: cannot read");
    if (!row.ok()) return row.status();
    if (!*row) break;
    ControlNodeReport r;
    r.name = st->Text(0);
    r.role = st->Text(1);
    r.url = st->Text(2);
    r.tls_pin = st->Text(3);
    // Written by WriteControlNode only; a row another writer spoiled reads
    // as holding nothing.
    auto images = nlohmann::json::parse(st->Text(4), nullptr, false);
    if (images.is_array())
      for (const auto& i : images)
        if (i.is_string()) r.images.push_back(i.get<std::string>());
    std::sort(r.images.begin(), r.images.end());
    auto current = nlohmann::json::parse(st->Text(5), nullptr, false);
    if (current.is_object())
      for (const auto& [k, v] : current.items())
        if (v.is_string()) r.current[k] = v.get<std::string>();
    r.copying = st->Text(6);
    r.reported_ms = st->Int(7);
    auto clients = nlohmann::json::parse(st->Text(8), nullptr, false);
    if (clients.is_array())
      for (const auto& c : clients)
        if (c.is_string()) r.nfs_clients.push_back(c.get<std::string>());
    auto alike = nlohmann::json::parse(st->Text(9), nullptr, false);
    if (alike.is_object())
      for (const auto& [k, v] : alike.items())
        if (v.is_string()) r.alike[k] = v.get<std::string>();
    r.age_ms = st->Int(10);
    out.push_back(std::move(r));
  }
  return out;
}

void DescribeImages(ImageCatalog& catalog, ControlNodeReport& r) {
  r.images.clear();
  r.current.clear();
  std::set<std::string> names;
  for (const ImageVersion& v : catalog.List()) {
    r.images.push_back(v.ref());
    names.insert(v.name);
  }
  std::sort(r.images.begin(), r.images.end());
  for (const std::string& name : names)
    if (auto cur = catalog.Resolve(name); cur.ok()) r.current[name] = cur->version;
}

namespace {

// Every file below `dir` (symbolic links followed), by relative path and
// content, in path order; a missing folder is an empty one.
std::string FolderDigest(const std::string& dir) {
  std::error_code ec;
  std::vector<std::string> files;
  if (!fs::exists(dir, ec) && !ec) return Sha256Hex("");
  for (auto it = fs::recursive_directory_iterator(
           dir, fs::directory_options::follow_directory_symlink, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->is_regular_file(ec)) files.push_back(fs::relative(it->path(), dir, ec).string());
  if (ec) return "unreadable: " + dir + ": " + ec.message();
  std::sort(files.begin(), files.end());
  Sha256 all;
  for (const std::string& f : files) {
    auto content = Sha256File(dir + "/" + f);
    if (!content.ok()) return "unreadable: " + content.status().message();
    all.Update(f);
    all.Update(std::string_view("\0", 1));
    all.Update(*content);
  }
  return all.HexDigest();
}

}  // namespace

std::map<std::string, std::string> AlikeDigests(const std::string& control_public_key,
                                                const std::string& profiles_dir,
                                                const std::string& playbooks_dir,
                                                const std::string& secrets_dir) {
  std::map<std::string, std::string> out;
  auto key = ReadFile(control_public_key);
  // The key itself, not the comment after it (ssh-ed25519 BASE64 comment).
  std::string type, base64;
  if (key.ok()) std::istringstream(*key) >> type >> base64;
  out["control key"] =
      key.ok() ? Sha256Hex(type + " " + base64) : "unreadable: " + key.status().message();
  out["profiles"] = FolderDigest(profiles_dir);
  out["playbooks"] = FolderDigest(playbooks_dir);
  // One digest of every secret together: no single value's hash leaves.
  out["secrets"] = FolderDigest(secrets_dir);
  return out;
}

std::vector<std::string> Unlike(const std::map<std::string, std::string>& mine,
                                const std::map<std::string, std::string>& other) {
  std::vector<std::string> out;
  for (const auto& [part, digest] : mine)
    if (auto it = other.find(part); it != other.end() && it->second != digest) out.push_back(part);
  return out;
}

std::vector<std::string> Lacking(const ControlNodeReport& node,
                                 const std::vector<std::string>& wanted) {
  std::vector<std::string> out;
  for (const std::string& ref : wanted)
    if (!std::binary_search(node.images.begin(), node.images.end(), ref)) out.push_back(ref);
  return out;
}

}  // namespace prov
