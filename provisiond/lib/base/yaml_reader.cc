#include "base/yaml_reader.h"

#include <charconv>

namespace prov {

void YamlErrors::Add(const YAML::Mark& mark, const std::string& message) {
  if (mark.is_null()) {
    AddFileLevel(message);
    return;
  }
  errors_.push_back(file_ + ":" + std::to_string(mark.line + 1) + ":" +
                    std::to_string(mark.column + 1) + ": " + message);
}

Status YamlErrors::ToStatus() const {
  if (errors_.empty()) return Status::Ok();
  std::string all;
  for (const auto& e : errors_) {
    if (!all.empty()) all += '\n';
    all += e;
  }
  return Status::Invalid(all);
}

YAML::Node ParseYaml(const std::string& text, YamlErrors& errors) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    errors.Add(e.mark, "YAML syntax: " + e.msg);
    return YAML::Node();
  }
}

std::string ScalarText(const YAML::Node& node) {
  if (node.IsScalar()) return node.Scalar();
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a mapping";
  return "nothing";
}

MapReader::MapReader(const YAML::Node& node, YamlErrors& errors, std::string what)
    : node_(node), errors_(errors), what_(std::move(what)) {
  if (!node_.IsDefined() || node_.IsNull()) {
    node_ = YAML::Node(YAML::NodeType::Map);
  } else if (!node_.IsMap()) {
    errors_.Add(node_, what_ + " must be a mapping of keys to values, found " + ScalarText(node_));
    valid_ = false;
    node_ = YAML::Node(YAML::NodeType::Map);
  } else {
    // yaml-cpp keeps the last of duplicate keys silently; a duplicate is
    // almost always a mistake, so say so.
    for (const auto& kv : node_) {
      const std::string key = kv.first.Scalar();
      if (!index_.emplace(key, kv.second).second)
        errors_.Add(kv.first, "duplicate key '" + key + "'");
    }
  }
}

bool MapReader::Has(const std::string& key) const {
  auto it = index_.find(key);
  return it != index_.end() && it->second.IsDefined();
}

YAML::Node MapReader::Raw(const std::string& key) {
  asked_.insert(key);
  auto it = index_.find(key);
  return it != index_.end() ? it->second : YAML::Node(YAML::NodeType::Undefined);
}

YAML::Node MapReader::Lookup(const std::string& key, bool required, const char* expected) {
  asked_.insert(key);
  YAML::Node n = Raw(key);
  if (!n.IsDefined() || n.IsNull()) {
    if (required)
      errors_.Add(node_, what_ + ": missing required key '" + key + "' (" + expected + ")");
    return YAML::Node(YAML::NodeType::Undefined);
  }
  return n;
}

bool MapReader::GetString(const std::string& key, std::string& out, bool required) {
  YAML::Node n = Lookup(key, required, "a string");
  if (!n.IsDefined()) return false;
  if (!n.IsScalar()) {
    errors_.Add(n, "'" + key + "' must be a string, found " + ScalarText(n));
    return false;
  }
  out = n.Scalar();
  return true;
}

bool MapReader::GetInt(const std::string& key, long& out, bool required, long min, long max) {
  YAML::Node n = Lookup(key, required, "an integer");
  if (!n.IsDefined()) return false;
  long v = 0;
  const std::string s = n.IsScalar() ? n.Scalar() : "";
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (!n.IsScalar() || s.empty() || ec != std::errc() || end != s.data() + s.size()) {
    errors_.Add(n, "'" + key + "' must be an integer, found '" + ScalarText(n) + "'");
    return false;
  }
  if (v < min || v > max) {
    errors_.Add(n, "'" + key + "' must be between " + std::to_string(min) + " and " +
                       std::to_string(max) + ", found " + s);
    return false;
  }
  out = v;
  return true;
}

bool MapReader::GetBool(const std::string& key, bool& out, bool required) {
  YAML::Node n = Lookup(key, required, "true or false");
  if (!n.IsDefined()) return false;
  const std::string s = n.IsScalar() ? n.Scalar() : "";
  if (s == "true" || s == "yes") {
    out = true;
  } else if (s == "false" || s == "no") {
    out = false;
  } else {
    errors_.Add(n, "'" + key + "' must be true or false, found '" + ScalarText(n) + "'");
    return false;
  }
  return true;
}

bool MapReader::GetStringList(const std::string& key, std::vector<std::string>& out,
                              bool required) {
  YAML::Node n = Lookup(key, required, "a list of strings");
  if (!n.IsDefined()) return false;
  if (!n.IsSequence()) {
    errors_.Add(n, "'" + key + "' must be a list of strings, found " + ScalarText(n));
    return false;
  }
  out.clear();
  bool ok = true;
  for (const auto& item : n) {
    if (!item.IsScalar()) {
      errors_.Add(item, "entries of '" + key + "' must be strings, found " + ScalarText(item));
      ok = false;
      continue;
    }
    out.push_back(item.Scalar());
  }
  return ok;
}

bool MapReader::GetMapList(const std::string& key, const std::function<void(MapReader&)>& each,
                           bool required) {
  YAML::Node n = Lookup(key, required, "a list of mappings");
  if (!n.IsDefined()) return false;
  if (!n.IsSequence()) {
    errors_.Add(n, "'" + key + "' must be a list, found " + ScalarText(n));
    return false;
  }
  for (const auto& item : n) {
    MapReader entry(item, errors_, "entry of '" + key + "'");
    if (!entry.valid()) continue;
    each(entry);
    entry.Finish();
  }
  return true;
}

bool MapReader::GetMap(const std::string& key, const std::function<void(MapReader&)>& fill,
                       bool required) {
  YAML::Node n = Lookup(key, required, "a mapping");
  if (!n.IsDefined()) return false;
  MapReader inner(n, errors_, "'" + key + "'");
  if (!inner.valid()) return false;
  fill(inner);
  inner.Finish();
  return true;
}

void MapReader::Finish() {
  std::string known;
  for (const auto& k : asked_) known += (known.empty() ? "" : ", ") + k;
  for (const auto& kv : node_) {
    const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "?";
    if (!asked_.count(key))
      errors_.Add(kv.first,
                  "unknown key '" + key + "' in " + what_ + " (known keys: " + known + ")");
  }
}

}  // namespace prov
