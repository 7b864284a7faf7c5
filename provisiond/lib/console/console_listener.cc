#include "console/console_listener.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "base/thread.h"
#include "store/store.h"

namespace prov {
namespace {

// Lines waiting for their batch: beyond this a flood is dropped, counted.
constexpr size_t kMaxPending = 100000;
constexpr int kFlushMs = 200;

// A numeric IPv4 or IPv6 address and a port as a socket address.
bool ConsoleSockaddr(const std::string& address, uint16_t port, sockaddr_storage& ss,
                     socklen_t& len) {
  if (address.find(':') != std::string::npos) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(port);
    len = sizeof *a;
    return inet_pton(AF_INET6, address.c_str(), &a->sin6_addr) == 1;
  }
  auto* a = reinterpret_cast<sockaddr_in*>(&ss);
  a->sin_family = AF_INET;
  a->sin_port = htons(port);
  len = sizeof *a;
  return inet_pton(AF_INET, address.c_str(), &a->sin_addr) == 1;
}

}  // namespace

int64_t NodeByAddress::Find(const std::string& ip) {
  constexpr int64_t kUnknownMs = 10000;
  const int64_t now = NowMs();
  const int64_t version = store_.AddressesVersion();
  {
    std::lock_guard lock(mu_);
    if (version != version_) {
      ip_.clear();
      version_ = version;
    }
    auto it = ip_.find(ip);
    if (it != ip_.end() && (it->second.first != 0 || now - it->second.second < kUnknownMs))
      return it->second.first;
  }
  auto node = store_.FindNodeByIp(ip);
  int64_t id = node.ok() ? node->id : 0;
  std::lock_guard lock(mu_);
  if (ip_.size() > 100000) ip_.clear();  // bounded: a flood of made-up sources
  ip_[ip] = {id, now};
  return id;
}

Result<std::unique_ptr<ConsoleListener>> ConsoleListener::Start(
    const ConsoleListenerSettings& settings, ConsoleLog& log, Resolver resolve) {
  std::unique_ptr<ConsoleListener> l(new ConsoleListener(log, std::move(resolve)));
  const bool v6 = settings.address.find(':') != std::string::npos;
  l->fd_.reset(socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!l->fd_.valid())
    return Status::Error(Code::kUnavailable,
                         std::string("network console: socket: ") + strerror(errno));
  int size = 4 << 20;  // a boot storm's kernel logs arrive at once
  setsockopt(l->fd_.get(), SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (!ConsoleSockaddr(settings.address, settings.port, ss, len))
    return Status::Invalid("network console: '" + settings.address + "' is not an address");
  if (bind(l->fd_.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0)
    return Status::Error(Code::kUnavailable,
                         "network console: cannot listen on UDP " + settings.address + ":" +
                             std::to_string(settings.port) + ": " + strerror(errno));
  getsockname(l->fd_.get(), reinterpret_cast<sockaddr*>(&ss), &len);
  l->port_ = ntohs(v6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                      : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  l->address_ = settings.address;
  l->thread_ =
      std::thread([raw = l.get()] { RunGuarded("console listener", [raw] { raw->Run(); }); });
  spdlog::info("network console on UDP {}:{}", settings.address, l->port_);
  return l;
}

ConsoleListener::~ConsoleListener() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  Flush();
}

std::string ConsoleListener::target() const {
  return (address_.find(':') != std::string::npos ? "[" + address_ + "]" : address_) + ":" +
         std::to_string(port_);
}

void ConsoleListener::AddLine(int64_t node_id, const std::string& source, const std::string& text,
                              std::optional<BootStage> stage) {
  if (node_id == 0) return;
  std::lock_guard lock(mu_);
  if (pending_.size() >= kMaxPending) {
    ++dropped_full_;
    return;
  }
  pending_.push_back(ConsoleLine{0, node_id, 0, NowMs(), source, text, stage});
  ++lines_provisiond_;
}

void ConsoleListener::Receive(const std::string& ip, std::string_view datagram, int64_t now) {
  int64_t node = resolve_(ip);
  if (node == 0) {
    ++dropped_unknown_;
    return;
  }
  std::lock_guard lock(mu_);
  for (auto& text : ConsoleTextLines(datagram)) {
    if (pending_.size() >= kMaxPending) {
      ++dropped_full_;
      return;
    }
    std::string source = ConsoleSource(text);
    (source == "initrd" ? lines_initrd_ : source == "system" ? lines_system_ : lines_kernel_)++;
    pending_.push_back(ConsoleLine{0, node, 0, now, std::move(source), std::move(text)});
  }
}

void ConsoleListener::Flush() {
  std::vector<ConsoleLine> batch;
  {
    std::lock_guard lock(mu_);
    batch.swap(pending_);
  }
  if (batch.empty()) return;
  Status s = log_.Append(batch);
  if (!s.ok()) {
    ++write_errors_;
    spdlog::warn("network console: {} line(s) not kept: {}", batch.size(), s.message());
  }
}

void ConsoleListener::Run() {
  std::vector<char> buf(65536);
  int64_t last_flush = NowMs();
  while (!stop_) {
    pollfd p{fd_.get(), POLLIN, 0};
    int r = poll(&p, 1, kFlushMs);
    int64_t now = NowMs();
    if (r > 0) {
      // What is queued now, without blocking (bounded per round).
      for (int i = 0; i < 4096; ++i) {
        sockaddr_storage from{};
        socklen_t len = sizeof from;
        ssize_t n = recvfrom(fd_.get(), buf.data(), buf.size(), MSG_DONTWAIT,
                             reinterpret_cast<sockaddr*>(&from), &len);
        if (n < 0) break;
        char text[INET6_ADDRSTRLEN] = {};
        if (from.ss_family == AF_INET) {
          inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&from)->sin_addr, text, sizeof text);
        } else if (from.ss_family == AF_INET6) {
          auto* a6 = reinterpret_cast<sockaddr_in6*>(&from);
          if (IN6_IS_ADDR_V4MAPPED(&a6->sin6_addr))
            inet_ntop(AF_INET, &a6->sin6_addr.s6_addr[12], text, sizeof text);
          else
            inet_ntop(AF_INET6, &a6->sin6_addr, text, sizeof text);
        }
        Receive(text, std::string_view(buf.data(), static_cast<size_t>(n)), now);
      }
    }
    if (now - last_flush >= kFlushMs) {
      Flush();
      last_flush = now;
    }
  }
}

std::string ConsoleListener::MetricsText() const {
  std::string out =
      "# HELP provisiond_console_lines_total Network console lines kept, by where they came "
      "from.\n# TYPE provisiond_console_lines_total counter\n";
  for (const auto& [source, n] : {std::pair<const char*, uint64_t>{"provisiond", lines_provisiond_},
                                  {"kernel", lines_kernel_},
                                  {"initrd", lines_initrd_},
                                  {"system", lines_system_}})
    out += std::string("provisiond_console_lines_total{source=\"") + source + "\"} " +
           std::to_string(n) + "\n";
  out +=
      "# HELP provisiond_console_dropped_total Network console datagrams or lines dropped: "
      "from an address that is no node, or beyond what waits to be written.\n"
      "# TYPE provisiond_console_dropped_total counter\n";
  out += "provisiond_console_dropped_total{reason=\"unknown_address\"} " +
         std::to_string(dropped_unknown_.load()) + "\n";
  out += "provisiond_console_dropped_total{reason=\"queue_full\"} " +
         std::to_string(dropped_full_.load()) + "\n";
  out += "provisiond_console_dropped_total{reason=\"write_error\"} " +
         std::to_string(write_errors_.load()) + "\n";
  return out;
}

}  // namespace prov
