// provisionctl's own config file, so an operator drives a control node from
// a laptop without flags: ~/.config/provisionctl/config ($XDG_CONFIG_HOME
// honoured; PROVISIONCTL_CONFIG names another), lines of `key: value`:
//
//   url: https://10.77.0.1:8443
//   token_file: ~/.config/provisionctl/token
//   fingerprint: F7:D2:48:...        (or ca_file: /path/ca.pem)
//
// A flag wins over the environment, which wins over the file. Relative paths
// are relative to the file's folder; `~/` is the home folder.
#pragma once

#include <string>

#include "base/result.h"

namespace prov::ctl {

struct Settings {
  std::string path;  // the file read; "" when there is none
  std::string url, token_file, ca_file, fingerprint;
};

// Where the file is looked for (it need not exist).
std::string SettingsPath();

// Parses the file's text; errors say FILE:LINE.
Result<Settings> ParseSettings(const std::string& text, const std::string& path);

// Reads SettingsPath(): empty settings when the file does not exist.
Result<Settings> LoadSettings();

}  // namespace prov::ctl
