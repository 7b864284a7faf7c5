// The network console's listener: one UDP socket on the cluster interface
// (netconsole's port, 6666, by default) that receives what booting nodes
// print. A datagram is attributed to a node by its source address, the
// node's reserved (or leased) address; one from an address that is no node
// is dropped and counted. Lines are written to the ConsoleLog in batches by
// the listener's own thread (every 200 ms), never on a request's path.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "console/console_log.h"

namespace prov {

class Store;

struct ConsoleListenerSettings {
  std::string address;  // numeric IPv4 or IPv6
  uint16_t port = 6666;
};

// The node (not retired) that holds an address, from the store, remembered
// until the inventory's addresses change (an unknown address for 10 s).
class NodeByAddress {
 public:
  explicit NodeByAddress(Store& store) : store_(store) {}
  int64_t Find(const std::string& ip);  // 0: no node

 private:
  Store& store_;
  std::mutex mu_;
  int64_t version_ = -1;                                   // guarded by mu_
  std::map<std::string, std::pair<int64_t, int64_t>> ip_;  // ip -> node, when (ms): guarded
};

class ConsoleListener {
 public:
  // ip -> node id (0: no node).
  using Resolver = std::function<int64_t(const std::string& ip)>;
  static Result<std::unique_ptr<ConsoleListener>> Start(const ConsoleListenerSettings& settings,
                                                        ConsoleLog& log, Resolver resolve);
  ~ConsoleListener();  // stops the thread; writes what it received
  ConsoleListener(const ConsoleListener&) = delete;
  ConsoleListener& operator=(const ConsoleListener&) = delete;

  // A line provisiond adds for a node (a boot stage it served or saw);
  // written with the next batch.
  void AddLine(int64_t node_id, const std::string& source, const std::string& text,
               std::optional<BootStage> stage = std::nullopt);
  // "ADDR:PORT" as a kernel command line names it.
  std::string target() const;
  uint16_t port() const { return port_; }
  // Counters for /metrics: lines by source, dropped datagrams by reason.
  std::string MetricsText() const;

 private:
  ConsoleListener(ConsoleLog& log, Resolver resolve) : log_(log), resolve_(std::move(resolve)) {}
  void Run();
  void Receive(const std::string& ip, std::string_view datagram, int64_t now);
  void Flush();

  ConsoleLog& log_;
  Resolver resolve_;
  UniqueFd fd_;
  std::string address_;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mu_;
  std::vector<ConsoleLine> pending_;  // guarded by mu_
  std::atomic<uint64_t> lines_provisiond_{0}, lines_kernel_{0}, lines_initrd_{0}, lines_system_{0};
  std::atomic<uint64_t> dropped_unknown_{0}, dropped_full_{0}, write_errors_{0};
};

}  // namespace prov
