#include "format.h"

#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace prov::ctl {

using json = nlohmann::json;

std::string Table::Render() const {
  std::vector<size_t> widths(header_.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size() && i < widths.size(); ++i)
      widths[i] = std::max(widths[i], row[i].size());
  };
  measure(header_);
  for (const auto& r : rows_) measure(r);
  auto line = [&](const std::vector<std::string>& row) {
    std::string out;
    for (size_t i = 0; i < row.size(); ++i) {
      bool last = i + 1 == row.size();
      out += last || i >= widths.size() ? row[i] : Pad(row[i], widths[i]) + "  ";
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(header_);
  for (const auto& r : rows_) out += line(r);
  return out;
}

std::string KeyValues::Render(const std::string& indent) const {
  size_t width = 0;
  for (const auto& [k, v] : lines_) width = std::max(width, k.size() + 1);
  std::string out;
  for (const auto& [k, v] : lines_) {
    // A value of several lines (a profile's errors) continues under itself.
    std::string value = v;
    for (size_t nl = value.find('\n'); nl != std::string::npos; nl = value.find('\n', nl + 1))
      value.insert(nl + 1, indent + std::string(width + 1, ' '));
    out += indent + Pad(k + ":", width) + " " + value + "\n";
  }
  return out;
}

std::string Str(const json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  return it->dump();
}

int64_t Int(const json& j, const char* key) {
  if (!j.is_object()) return 0;
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<int64_t>() : 0;
}

bool Bool(const json& j, const char* key) {
  if (!j.is_object()) return false;
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

const json& Array(const json& j, const char* key) {
  static const json empty = json::array();
  if (!j.is_object()) return empty;
  auto it = j.find(key);
  return it != j.end() && it->is_array() ? *it : empty;
}

std::string Scalar(const json& j) {
  return j.is_string() ? j.get<std::string>() : j.dump();
}

std::vector<std::string> Strings(const json& array) {
  std::vector<std::string> out;
  for (const auto& v : array) out.push_back(Scalar(v));
  return out;
}

std::string Dash(const std::string& s) {
  return s.empty() ? "-" : s;
}

std::string Join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

std::string Pad(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

std::string PrefixLines(const std::string& text, const std::string& prefix) {
  std::string out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    out += prefix + text.substr(pos, nl - pos) + "\n";
    pos = nl + 1;
  }
  return out;
}

std::string FormatTime(int64_t ms) {
  if (ms <= 0) return "-";
  time_t seconds = static_cast<time_t>(ms / 1000);
  struct tm tm {};
  localtime_r(&seconds, &tm);
  char date[32];
  strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
  long offset = tm.tm_gmtoff / 60;  // minutes east of UTC
  char out[64];
  snprintf(out, sizeof out, "%s.%03d%c%02ld:%02ld", date, static_cast<int>(ms % 1000),
           offset < 0 ? '-' : '+', std::labs(offset) / 60, std::labs(offset) % 60);
  return out;
}

std::string FormatAge(int64_t ms, int64_t now_ms) {
  if (ms <= 0) return "never";
  int64_t s = std::max<int64_t>(0, (now_ms - ms) / 1000);
  if (s < 120) return std::to_string(s) + "s ago";
  if (s < 120 * 60) return std::to_string(s / 60) + "m ago";
  if (s < 48 * 3600) return std::to_string(s / 3600) + "h ago";
  return std::to_string(s / 86400) + "d ago";
}

std::string ShortSha(const std::string& sha256) {
  return sha256.substr(0, 12);
}

std::string VersionAndSha(const std::string& version, const std::string& sha) {
  return version + " (sha256 " + ShortSha(sha) + ")";
}

std::string FormatSize(int64_t bytes) {
  if (bytes < 1024) return std::to_string(std::max<int64_t>(bytes, 0)) + " B";
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes) / 1024;
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(units)) {
    value /= 1024;
    ++unit;
  }
  char out[32];
  snprintf(out, sizeof out, "%.1f %s", value, units[unit]);
  return out;
}

std::string FormatOffset(int64_t ms) {
  ms = std::max<int64_t>(ms, 0);
  char out[32];
  if (int64_t tenths = (ms + 50) / 100; tenths < 600) {
    snprintf(out, sizeof out, "+%lld.%llds", static_cast<long long>(tenths / 10),
             static_cast<long long>(tenths % 10));
  } else if (int64_t s = (ms + 500) / 1000; s < 3600) {
    snprintf(out, sizeof out, "+%lldm%02llds", static_cast<long long>(s / 60),
             static_cast<long long>(s % 60));
  } else {
    int64_t m = s / 60;
    snprintf(out, sizeof out, "+%lldh%02lldm", static_cast<long long>(m / 60),
             static_cast<long long>(m % 60));
  }
  return out;
}

std::string FormatDuration(int64_t ms) {
  return FormatOffset(ms).substr(1);
}

std::string FormatElapsed(int64_t ms) {
  char buf[32];
  if (ms < 60000)
    snprintf(buf, sizeof buf, "%.1fs", static_cast<double>(ms) / 1000.0);
  else
    snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(ms / 60000),
             static_cast<long long>((ms / 1000) % 60));
  return buf;
}

}  // namespace prov::ctl
