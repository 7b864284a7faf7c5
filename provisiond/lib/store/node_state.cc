#include "store/node_state.h"

#include <array>

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

}  // namespace prov
