// provisiond as a whole: config -> data directory, tokens, store, routes,
// HTTP server. `main` only parses arguments and calls into this.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "config.h"

namespace prov {

// Everything `provisiond --check` validates: the config, every profile (and
// the playbooks they name) and the tokens file when it exists. Returns every
// error found, empty when all is well.
std::vector<std::string> CheckAll(const Config& config);

class Daemon {
 public:
  static Result<std::unique_ptr<Daemon>> Start(const Config& config);
  ~Daemon();

  // The URL the HTTP server answers on (with the real port when 0 was asked).
  const std::string& url() const;
  // Re-reads the tokens file (SIGHUP).
  Status ReloadTokens();

 private:
  struct Impl;
  explicit Daemon(std::unique_ptr<Impl> impl);
  // Start's phases, in order (daemon.cc says what each makes).
  static Status OpenDataDir(const Config& config, Impl& impl);
  static Status AwaitLease(const Config& config, Impl& impl);
  static Status OpenInventory(const Config& config, Impl& impl);
  static Status MakeServices(const Config& config, Impl& impl);
  static Status RunStartPreflight(const Config& config, Impl& impl);
  static Status StartListeners(const Config& config, Impl& impl);
  static Status StartBootNetwork(const Config& config, Impl& impl);
  // The HTTPS listener (api_listen); nothing when it is off.
  static Status StartApiListener(const Config& config, Impl& impl);
  // The network console's listener (console.listen); nothing when it is off.
  static Status StartConsole(const Config& config, Impl& impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace prov
