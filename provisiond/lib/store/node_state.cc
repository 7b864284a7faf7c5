#include "store/node_state.h"

#include <algorithm>
#include <array>
#include <sstream>

#include "base/file_util.h"
#include "base/strings.h"

namespace prov {
namespace {

using S = NodeState;

struct Edge {
  S from;
  std::initializer_list<S> to;
};

// The whole life cycle in one table.
const Edge kEdges[] = {
    {S::kDiscovered, {S::kEnrolled, S::kRetired}},
    {S::kEnrolled, {S::kBooting, S::kFailed, S::kMaintenance, S::kRetired}},
    {S::kBooting, {S::kBooted, S::kEnrolled, S::kFailed, S::kMaintenance, S::kRetired}},
    {S::kBooted,
     {S::kConfiguring, S::kBooting, S::kEnrolled, S::kFailed, S::kMaintenance, S::kRetired}},
    {S::kConfiguring,
     {S::kReady, S::kBooting, S::kEnrolled, S::kFailed, S::kMaintenance, S::kRetired}},
    {S::kReady,
     {S::kConfiguring, S::kBooting, S::kEnrolled, S::kFailed, S::kMaintenance, S::kRetired}},
    {S::kFailed, {S::kEnrolled, S::kBooting, S::kConfiguring, S::kMaintenance, S::kRetired}},
    {S::kMaintenance, {S::kEnrolled, S::kBooting, S::kRetired}},
    {S::kRetired, {S::kEnrolled}},
};

const std::array<std::string_view, 9> kNames = {"discovered", "enrolled",    "booting",
                                                "booted",     "configuring", "ready",
                                                "failed",     "maintenance", "retired"};

}  // namespace

const std::vector<NodeState>& AllNodeStates() {
  static const std::vector<NodeState> all = {S::kDiscovered, S::kEnrolled,    S::kBooting,
                                             S::kBooted,     S::kConfiguring, S::kReady,
                                             S::kFailed,     S::kMaintenance, S::kRetired};
  return all;
}

std::string_view ToString(NodeState s) {
  return kNames[static_cast<size_t>(s)];
}

std::optional<NodeState> ParseNodeState(std::string_view s) {
  for (size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == s) return static_cast<NodeState>(i);
  return std::nullopt;
}

bool CanTransition(NodeState from, NodeState to) {
  for (const auto& e : kEdges)
    if (e.from == from)
      for (S t : e.to)
        if (t == to) return true;
  return false;
}

Status CheckTransition(NodeState from, NodeState to) {
  if (CanTransition(from, to)) return Status::Ok();
  std::string allowed;
  for (const auto& e : kEdges)
    if (e.from == from)
      for (S t : e.to) allowed += (allowed.empty() ? "" : ", ") + std::string(ToString(t));
  return Status::Conflict("a node cannot go from '" + std::string(ToString(from)) + "' to '" +
                          std::string(ToString(to)) + "' (from '" + std::string(ToString(from)) +
                          "' it can go to: " + allowed + ")");
}

bool IsOperatorState(NodeState s) {
  return s == S::kEnrolled || s == S::kMaintenance || s == S::kRetired;
}

Status ValidateHostname(std::string_view name) {
  if (name.empty()) return Status::Invalid("hostname is empty");
  if (name.size() > 63)
    return Status::Invalid("hostname '" + std::string(name) + "' is longer than 63 characters");
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_';
    if (!ok)
      return Status::Invalid("hostname '" + std::string(name) + "' has the character '" +
                             std::string(1, c) + "'; use letters, digits, '-' and '_'");
  }
  if (name.front() == '-' || name.back() == '-')
    return Status::Invalid("hostname '" + std::string(name) + "' starts or ends with '-'");
  return Status::Ok();
}

Status ValidateNodeIp(std::string_view ip) {
  auto bad = [&](const std::string& why) {
    return Status::Invalid("ip '" + std::string(ip.substr(0, 64)) + "' is not an IPv4 address (" +
                           why + ")");
  };
  int parts = 0;
  size_t pos = 0;
  while (pos <= ip.size()) {
    size_t end = ip.find('.', pos);
    if (end == std::string_view::npos) end = ip.size();
    std::string_view part = ip.substr(pos, end - pos);
    if (part.empty() || part.size() > 3) return bad("four numbers 0-255 separated by dots");
    for (char c : part)
      if (c < '0' || c > '9') return bad("it has the character '" + std::string(1, c) + "'");
    if ((part.size() > 1 && part[0] == '0') || std::stoi(std::string(part)) > 255)
      return bad("four numbers 0-255 separated by dots");
    ++parts;
    pos = end + 1;
  }
  if (parts != 4) return bad("four numbers 0-255 separated by dots");
  return Status::Ok();
}

Status ValidateHostKey(std::string_view key) {
  static constexpr std::array<std::string_view, 8> kTypes = {"ssh-ed25519",
                                                             "ssh-rsa",
                                                             "ecdsa-sha2-nistp256",
                                                             "ecdsa-sha2-nistp384",
                                                             "ecdsa-sha2-nistp521",
                                                             "sk-ssh-ed25519@openssh.com",
                                                             "ssh-dss",
                                                             "sk-ecdsa-sha2-nistp256@openssh.com"};
  if (key.size() > 16384) return Status::Invalid("host key is longer than 16384 bytes");
  for (char c : key)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      return Status::Invalid("host key has a control character (one key, one line)");
  const size_t space = key.find(' ');
  if (space == std::string_view::npos)
    return Status::Invalid("host key is not 'TYPE BASE64 [COMMENT]'");
  std::string_view type = key.substr(0, space);
  if (std::find(kTypes.begin(), kTypes.end(), type) == kTypes.end())
    return Status::Invalid("host key type '" + std::string(type.substr(0, 40)) + "' is not known");
  std::string_view data = key.substr(space + 1);
  data = data.substr(0, data.find(' '));
  if (data.empty()) return Status::Invalid("host key has no key data");
  for (char c : data)
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
          c == '/' || c == '='))
      return Status::Invalid("host key data is not base64");
  return Status::Ok();
}

std::string HostKeyFingerprint(const std::string& key) {
  std::istringstream in(key);
  std::string type, blob;
  in >> type >> blob;
  auto raw = Base64Decode(blob);
  if (blob.empty() || !raw) return "";
  const std::string hex = Sha256Hex(*raw);
  std::string digest;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    digest.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  std::string b64 = Base64Encode(digest);
  while (!b64.empty() && b64.back() == '=') b64.pop_back();
  return "SHA256:" + b64;
}

}  // namespace prov
