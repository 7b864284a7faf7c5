// Strict, position-aware reading of YAML documents. Every error carries
// "file:line:col: what is expected there"; unknown keys are errors. Readers
// collect all errors of a document so a user fixes them in one pass.
#pragma once

#include <yaml-cpp/yaml.h>

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/result.h"

namespace prov {

// Accumulates errors of one load, each prefixed with its position.
class YamlErrors {
 public:
  explicit YamlErrors(std::string file) : file_(std::move(file)) {}
  void Add(const YAML::Mark& mark, const std::string& message);
  void Add(const YAML::Node& at, const std::string& message) { Add(at.Mark(), message); }
  void AddFileLevel(const std::string& message) { errors_.push_back(file_ + ": " + message); }
  // A message that names its own place (another file's error).
  void AddPlaced(const std::string& message) { errors_.push_back(message); }
  bool empty() const { return errors_.empty(); }
  const std::vector<std::string>& list() const { return errors_; }
  const std::string& file() const { return file_; }
  // All errors joined by newlines, as one Status (kInvalid), or Ok.
  Status ToStatus() const;

 private:
  std::string file_;
  std::vector<std::string> errors_;
};

// Parses `text` into a YAML document; a syntax error becomes a positioned
// error in `errors` and an empty node.
YAML::Node ParseYaml(const std::string& text, YamlErrors& errors);

// Reads the keys of one mapping. Each Get marks its key as known; Finish()
// reports the keys nobody asked for.
class MapReader {
 public:
  // `what` names the mapping in messages ("profile", "playbook entry").
  MapReader(const YAML::Node& node, YamlErrors& errors, std::string what);

  bool valid() const { return valid_; }
  bool Has(const std::string& key) const;
  YAML::Node Raw(const std::string& key);  // marks known; may be undefined

  bool GetString(const std::string& key, std::string& out, bool required = false);
  bool GetInt(const std::string& key, long& out, bool required = false, long min = 0,
              long max = 1L << 40);
  bool GetBool(const std::string& key, bool& out, bool required = false);
  bool GetStringList(const std::string& key, std::vector<std::string>& out, bool required = false);
  // Calls `each` for every entry of a sequence of mappings.
  bool GetMapList(const std::string& key, const std::function<void(MapReader&)>& each,
                  bool required = false);
  // A nested mapping.
  bool GetMap(const std::string& key, const std::function<void(MapReader&)>& fill,
              bool required = false);

  // Reports unknown keys, listing the known ones.
  void Finish();

  const YAML::Node& node() const { return node_; }
  YamlErrors& errors() { return errors_; }

 private:
  YAML::Node Lookup(const std::string& key, bool required, const char* expected);

  YAML::Node node_;
  // The mapping's entries by key, made once: yaml-cpp's node_[key] walks the
  // whole mapping converting every key, for each key asked.
  std::unordered_map<std::string, YAML::Node> index_;
  YamlErrors& errors_;
  std::string what_;
  bool valid_ = true;
  std::set<std::string> asked_;
};

// Scalar text of a node, for messages and for string values.
std::string ScalarText(const YAML::Node& node);

}  // namespace prov
