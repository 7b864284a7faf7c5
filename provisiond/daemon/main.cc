// provisiond: the provisioning daemon. Parses arguments, loads the config and
// hands over to prov::Daemon; SIGTERM/SIGINT stop it, SIGHUP reloads tokens.
#include <signal.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <iostream>

#include "config.h"
#include "daemon.h"

int main(int argc, char** argv) {
  CLI::App app{"provisiond: bare-metal provisioning daemon (netboot, inventory, profiles)"};
  std::string config_path = prov::kDefaultConfigPath;
  bool check = false, describe = false, version = false;
  app.add_option("-c,--config", config_path, "Config file (YAML)")->capture_default_str();
  app.add_flag("--check", check,
               "Validate the config, every profile and the playbooks they name; print every "
               "error and exit non-zero if there is one");
  app.add_flag("--describe-config", describe, "Print every config key with its type and default");
  app.add_flag("--version", version, "Print the version");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (version) {
    std::cout << "provisiond " << PROVISION_VERSION << "\n";
    return 0;
  }
  if (describe) {
    std::cout << prov::DescribeConfig();
    return 0;
  }

  auto config = prov::LoadConfig(config_path);
  if (!config.ok()) {
    std::cerr << config.status().message() << "\n";
    return 1;
  }
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
