// provisiond: the provisioning daemon. Parses arguments, loads the config and
// hands over to prov::Daemon; SIGTERM/SIGINT stop it, SIGHUP reloads tokens.
// Its subcommands set a control node up and keep its state safe: init (the
// first config), backup and restore.
#include <signal.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <filesystem>
#include <iostream>

#include "api/routes.h"
#include "base/file_util.h"
#include "config.h"
#include "daemon.h"
#include "dhcp/init.h"
#include "playbook/modules/modules.h"
#include "store/backup.h"

namespace {

std::string Bytes(uint64_t n) {
  char buf[32];
  if (n >= (1u << 20))
    snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(n) / (1 << 20));
  else
    snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(n) / 1024);
  return buf;
}

int RunInit(prov::InitOptions options) {
  options.default_config = prov::InstallLayout().data_dir + "/provisiond.yaml.default";
  options.probe = [](const std::string& iface, int ms) {
    return prov::ProbeDhcpServers(iface, ms, "");
  };
  if (options.dhcp_mode == "auto")
    std::cout << "probing for DHCP servers on " << options.interface << " ("
              << options.probe_ms / 1000 << " s)...\n";
  auto r = prov::InitControlNode(options);
  if (!r.ok()) {
    std::cerr << "provisiond init: " << r.status().message() << "\n";
    return 1;
  }
  std::cout << "DHCP: " << r->reason << "\n";
  if (!r->backup_of_old.empty()) std::cout << "kept the old config as " << r->backup_of_old << "\n";
  std::cout << "wrote " << options.config_path << "\n";
  std::cout << (r->token_created ? "made the first admin token in " : "kept the tokens in ")
            << r->tokens_file << " (mode 0600)\n";
  for (const auto& n : r->notes) std::cout << "note: " << n << "\n";
  std::cout << "\nNext:\n";
  for (const auto& n : r->next) std::cout << "  " << n << "\n";
  return 0;
}

int RunBackup(const prov::Config& config, const std::string& file) {
  auto info = prov::WriteBackup(config.data_dir, config.database_path(), file, PROVISION_VERSION);
  if (!info.ok()) {
    std::cerr << "provisiond backup: " << info.status().message() << "\n";
    return 1;
  }
  std::cout << "backed up " << config.data_dir << " to " << file << " (" << Bytes(info->bytes)
            << "): inventory of " << info->nodes << " node(s), schema " << info->schema << ", "
            << info->files << " file(s) of keys, tokens, secrets and snapshots\n";
  return 0;
}

int RunRestore(const prov::Config& config, const std::string& file, bool verify_only) {
  auto checked = prov::VerifyBackup(file);
  if (!checked.ok()) {
    std::cerr << "provisiond restore: " << checked.status().message() << "\n";
    return 1;
  }
  std::cout << file << ": a backup by provisiond " << checked->provisiond_version << ", "
            << checked->nodes << " node(s), schema " << checked->schema << ", " << checked->files
            << " file(s); every file matches its SHA-256\n";
  if (verify_only) return 0;
  if (auto made = prov::MakeDirs(config.data_dir, 0711); !made.ok()) {
    std::cerr << "provisiond restore: " << made.message() << "\n";
    return 1;
  }
  auto lock = prov::LockDataDir(config.data_dir);
  if (!lock.ok()) {
    std::cerr << "provisiond restore: " << lock.status().message() << "\n";
    return 1;
  }
  std::string moved;
  auto info = prov::RestoreBackup(file, config.data_dir, config.database_path(), &moved);
  if (!info.ok()) {
    std::cerr << "provisiond restore: " << info.status().message() << "\n";
    if (!moved.empty()) std::cerr << "what was there before is in " << moved << "\n";
    return 1;
  }
  std::cout << "restored " << info->nodes << " node(s) and " << info->files << " file(s) into "
            << config.data_dir << " (schema now " << info->schema << ")\n";
  if (!moved.empty()) std::cout << "what was there before is in " << moved << "\n";
  return 0;
}

// --describe-routes: the API's route table, one route a line: method, path
// pattern, who may call it (docs/reference/api.md is made from it).
std::string DescribeRoutes() {
  std::string out;
  for (const auto& r : prov::ApiRoutes()) {
    using enum prov::Router::Access;
    const char* who = r.access == kOpen ? "open" : r.access == kRead ? "read" : "admin";
    out += std::string(r.method) + " " + r.pattern + " " + who + "\n";
  }
  return out;
}

// --describe-modules: the playbook modules the native runner runs, one a
// line: its name, then each argument (`*` required, `=a|b` its choices,
// `/alias` its other names).
std::string DescribeModules() {
  std::string out;
  for (const auto& m : prov::AllModules()) {
    out += m.name + (m.free_form ? " (free form)" : "") + (m.any_args ? " (any argument)" : "");
    for (const auto& a : m.args) {
      out += " " + a.name + (a.required ? "*" : "");
      for (size_t i = 0; i < a.choices.size(); ++i) out += (i ? "|" : "=") + a.choices[i];
      for (const auto& alias : a.aliases) out += "/" + alias;
    }
    out += "\n";
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"provisiond: bare-metal provisioning daemon (netboot, inventory, profiles)"};
  std::string config_path = prov::kDefaultConfigPath;
  bool check = false, describe = false, version = false;
  app.add_option("-c,--config", config_path, "Config file (YAML)")->capture_default_str();
  app.add_flag("--check", check,
               "Validate the config, every profile and the playbooks they name; print every "
               "error and exit non-zero if there is one");
  bool describe_routes = false, describe_modules = false;
  app.add_flag("--describe-config", describe, "Print every config key with its type and default");
  app.add_flag("--describe-routes", describe_routes,
               "Print every API route: method, path and the role it needs (open, read, admin)");
  app.add_flag("--describe-modules", describe_modules,
               "Print every playbook module the native runner runs, with its arguments");
  app.add_flag("--version", version, "Print the version and where its data is");
  app.require_subcommand(0, 1);
  app.fallthrough();

  prov::InitOptions init;
  init.data_dir = PROVISION_STATEDIR;
  auto* init_cmd = app.add_subcommand(
      "init",
      "Write the first config for the cluster interface (its address and subnet; probes for "
      "another DHCP server to choose full or proxy mode) and make the first admin token");
  init_cmd->add_option("-i,--interface", init.interface, "The cluster interface")->required();
  init_cmd
      ->add_option("--dhcp-mode", init.dhcp_mode,
                   "auto (probe the network), full (provisiond leases addresses) or proxy")
      ->capture_default_str();
  init_cmd->add_option("--range", init.range, "Full mode's lease range, FIRST-LAST");
  init_cmd->add_option("--data-dir", init.data_dir, "provisiond's state")->capture_default_str();
  init_cmd->add_option("--port", init.port, "The boot and API port (HTTP)")
      ->capture_default_str()
      ->check(CLI::Range(1, 65535));
  init_cmd->add_flag("--force", init.force, "Replace a config that is not the package's default");

  std::string file;
  bool verify_only = false;
  auto* backup_cmd = app.add_subcommand(
      "backup",
      "Write the inventory (SQLite's online backup: consistent while provisiond runs), tokens, "
      "keys, secrets and profile snapshots to FILE (mode 0600)");
  backup_cmd->add_option("FILE", file, "The backup archive to write")->required();
  auto* restore_cmd = app.add_subcommand(
      "restore",
      "Restore a backup into the config's data folder (provisiond stopped); what it replaces "
      "moves to <data_dir>/before-restore-<time>");
  restore_cmd->add_option("FILE", file, "The backup archive")->required();
  restore_cmd->add_flag("--verify", verify_only, "Only check the archive against its manifest");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (version) {
    const auto& layout = prov::InstallLayout();
    std::cout << "provisiond " << PROVISION_VERSION << "\n"
              << (layout.build_tree ? "run from its build folder: " : "") << "data "
              << layout.data_dir << ", node tools " << layout.tools_dir << "\n";
    return 0;
  }
  if (describe) {
    std::cout << prov::DescribeConfig();
    return 0;
  }
  if (describe_routes || describe_modules) {
    std::cout << (describe_routes ? DescribeRoutes() : DescribeModules());
    return 0;
  }
  if (init_cmd->parsed()) {
    init.config_path = config_path;
    return RunInit(init);
  }

  auto config = prov::LoadConfig(config_path);
  if (!config.ok()) {
    std::cerr << config.status().message() << "\n";
    return 1;
  }
  if (backup_cmd->parsed()) return RunBackup(*config, file);
  if (restore_cmd->parsed()) return RunRestore(*config, file, verify_only);
  if (check) {
    auto errors = prov::CheckAll(*config);
    for (const auto& e : errors) std::cerr << e << "\n";
    if (!errors.empty()) {
      std::cerr << errors.size() << " error(s)\n";
      return 1;
    }
    std::cout << config_path << ": config, profiles and playbooks are valid\n";
    return 0;
  }

  spdlog::set_level(spdlog::level::from_str(config->log_level));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  // Block the signals in every thread; the main thread waits for them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  try {
    auto daemon = prov::Daemon::Start(*config);
    if (!daemon.ok()) {
      spdlog::error("cannot start: {}", daemon.status().message());
      return 1;
    }
    for (;;) {
      int sig = 0;
      sigwait(&signals, &sig);
      if (sig == SIGHUP) {
        auto s = (*daemon)->ReloadTokens();
        if (!s.ok()) spdlog::error("tokens not reloaded: {}", s.message());
        continue;
      }
      spdlog::info("received {}, stopping", sig == SIGTERM ? "SIGTERM" : "SIGINT");
      break;
    }
  } catch (const std::exception& e) {
    spdlog::critical("fatal: {}", e.what());
    return 1;
  }
  return 0;
}
