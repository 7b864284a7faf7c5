// What every noun's output shares: tables, "key: value" blocks, reading the
// API's JSON where a missing field shows as "" or "-" rather than failing,
// and times, sizes and durations for people. output/<noun>.h turn the API's
// replies into text with these: pure functions, tested without a daemon.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace prov::ctl {

// Columns padded to their widest cell and separated by two spaces; the last
// column is not padded.
class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void AddRow(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  size_t size() const { return rows_.size(); }
  std::string Render() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// "key:" lines with the values aligned; a value of several lines continues
// under itself.
class KeyValues {
 public:
  void Add(std::string key, std::string value) {
    lines_.emplace_back(std::move(key), std::move(value));
  }
  std::string Render(const std::string& indent = "") const;

 private:
  std::vector<std::pair<std::string, std::string>> lines_;
};

// Fields of the API's replies. A field as text: strings as they are, other
// scalars as JSON, absent or null (or `j` not an object) as "".
std::string Str(const nlohmann::json& j, const char* key);
// A number field, or 0.
int64_t Int(const nlohmann::json& j, const char* key);
// A boolean field, or false.
bool Bool(const nlohmann::json& j, const char* key);
// An array field, or an empty array.
const nlohmann::json& Array(const nlohmann::json& j, const char* key);
// A scalar as text: strings as they are, others as JSON.
std::string Scalar(const nlohmann::json& j);
// Every element of an array as Scalar text.
std::vector<std::string> Strings(const nlohmann::json& array);

// "-" for what is unknown.
std::string Dash(const std::string& s);
std::string Join(const std::vector<std::string>& parts, const std::string& sep);
// `s` padded with spaces to `width`.
std::string Pad(const std::string& s, size_t width);
// Every line of `text` after `prefix` ("stderr| ").
std::string PrefixLines(const std::string& text, const std::string& prefix);

// Milliseconds since the epoch as local ISO-8601 with milliseconds and the
// offset: "2026-11-22T01:37:32.123+01:00". 0 is "-".
std::string FormatTime(int64_t ms);

// How long before `now_ms` `ms` was: "45s ago", "3m ago", "2h ago", "4d ago";
// 0 is "never".
std::string FormatAge(int64_t ms, int64_t now_ms);

// The first 12 hex digits of a SHA-256, as git shows commits.
std::string ShortSha(const std::string& sha256);

// A profile version with its short hash: "v0.2 (sha256 3a5095c593af)".
std::string VersionAndSha(const std::string& version, const std::string& sha);

// A size in bytes for people: "812 B", "11.9 MiB", "1.2 GiB".
std::string FormatSize(int64_t bytes);

// Time since the start of a boot attempt: "+2.1s", "+3m05s", "+1h02m".
std::string FormatOffset(int64_t ms);

// A duration for people: "12.3s", "3m05s", "1h02m".
std::string FormatDuration(int64_t ms);

// A run's or a wait's time so far: "12.3s", "4m05s".
std::string FormatElapsed(int64_t ms);

}  // namespace prov::ctl
