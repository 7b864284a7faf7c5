// The node's half of a profile's `storage:` (profiles/storage.h): at every
// boot, before the services that use them, each volume's disks are found
// among this machine's, then assembled and mounted when they carry the
// volume already, made (md array, filesystem labelled pv-NAME) when they are
// blank, and left alone when they hold anything else, unless the operator
// allowed a wipe. The outcome, a JSON object written for the phone-home,
// says per volume what was done, and why not.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

namespace prov::agent {

struct CommandOutput {
  int exit_code = 0;  // 127: not found
  std::string output;
};
// Runs argv[0] (looked up in PATH) with its arguments; stdout and stderr
// together.
using CommandRunner = std::function<CommandOutput(const std::vector<std::string>& argv)>;
CommandRunner SystemRunner();

struct StorageContext {
  std::string root = "/";  // where /sys, /dev, /proc and /etc are read (tests: a fake tree)
  CommandRunner run;       // every change goes through it
};

// `spec`: {"volumes": [StorageVolume JSON...], "wipe": [by-id names, or
// "*" for every disk the volumes take]}. Returns {"state": "ready" |
// "failed", "reason": the first failure, "volumes": [{"name", "state":
// "created" | "mounted" | "failed", "device", "uuid", "mount", "disks",
// "wiped", "reason"}]}.
nlohmann::json SetUpStorage(const nlohmann::json& spec, const StorageContext& ctx);

}  // namespace prov::agent
