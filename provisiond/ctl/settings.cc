#include "settings.h"

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "base/file_util.h"
#include "base/strings.h"

namespace prov::ctl {
namespace {

std::string Home() {
  const char* home = getenv("HOME");
  return home && *home ? home : "/root";
}

std::string ResolvePath(const std::string& value, const std::string& file) {
  if (value.rfind("~/", 0) == 0) return Home() + value.substr(1);
  if (value.empty() || value[0] == '/') return value;
  return (std::filesystem::path(file).parent_path() / value).lexically_normal().string();
}

}  // namespace

std::string SettingsPath() {
  if (const char* p = getenv("PROVISIONCTL_CONFIG"); p && *p) return p;
  if (const char* x = getenv("XDG_CONFIG_HOME"); x && *x)
    return std::string(x) + "/provisionctl/config";
  return Home() + "/.config/provisionctl/config";
}

Result<Settings> ParseSettings(const std::string& text, const std::string& path) {
  Settings s;
  s.path = path;
  std::istringstream in(text);
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    const std::string where = path + ":" + std::to_string(n) + ": ";
    line = Trim(line);
    if (line.empty() || line[0] == '#') continue;
    size_t colon = line.find(':');
    if (colon == std::string::npos)
      return Status::Invalid(where + "expected 'key: value', found '" + line + "'");
    const std::string key = Trim(line.substr(0, colon));
    std::string value = Trim(line.substr(colon + 1));
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
        value.back() == value.front())
      value = value.substr(1, value.size() - 2);
    if (value.empty()) return Status::Invalid(where + key + " has no value");
    if (key == "url") {
      if (value.rfind("http://", 0) != 0 && value.rfind("https://", 0) != 0)
        return Status::Invalid(where + "url: expected http:// or https://, found '" + value + "'");
      s.url = value;
    } else if (key == "token_file") {
      s.token_file = ResolvePath(value, path);
    } else if (key == "ca_file") {
      s.ca_file = ResolvePath(value, path);
    } else if (key == "fingerprint") {
      s.fingerprint = value;
    } else {
      return Status::Invalid(where + "unknown key '" + key +
                             "' (known: url, token_file, ca_file, fingerprint)");
    }
  }
  return s;
}

Result<Settings> LoadSettings() {
  const std::string path = SettingsPath();
  if (!std::filesystem::exists(path)) return Settings{};
  auto text = ReadFile(path);
  if (!text.ok()) return text.status();
  return ParseSettings(*text, path);
}

}  // namespace prov::ctl
