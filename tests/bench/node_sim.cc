// bench_node_sim: many simulated nodes against one provisiond over HTTP, all
// at once, for the load benchmark (load_bench.sh) and the crash test
// (tests/integration/crash_test.sh). Each node does, in order, the steps asked
// for:
//
//   --enroll  POST /api/v1/nodes {hostname, mac}            (admin token; 201)
//   --boot    GET /boot/start.ipxe, GET /boot/<mac>.ipxe     (what iPXE fetches;
//             the script names the node's image version and issues its ticket)
//   --files   GET /boot/<mac>/vmlinuz?v=, initrd.img?v=, ticket.img (what the
//             kernel loader fetches), overlay.tar?ticket= (what the initrd does)
//   --hello   POST /api/v1/nodes/<mac>/hello with the node's token (from the
//             overlay's agent.conf) and its ticket, as the node's agent does
//             (implies the ticket and the overlay)
//
// What a node's root sends (overlay, hello) leaves from a privileged port, as
// provisiond requires: node i sends from its own loopback address
// 127.10.<i / 250>.<i % 250 + 1>, so nodes never compete for ports.
//
//   bench_node_sim --url URL [--token ADMIN_TOKEN] --nodes N [--first K]
//                  [--prefix sim] [--concurrency C] [--log FILE] [steps...]
//
// Node i (K <= i < K+N) is <prefix><i, 5 digits> with MAC 52:54:0a:HH:MM:LL.
// C threads (default N: every node at once) start together behind a barrier;
// each request is a new connection (Connection: close). --log writes one line
// per request as it is answered: "NODE STEP HTTP_CODE MS" (code 0: no answer,
// the connection failed). Prints a JSON summary on stdout (errors by step and
// by kind: reset, timeout, closed, connect, http N); exits 0 when every
// request got its expected 2xx, 1 otherwise, 2 on usage errors.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Options {
  std::string host = "127.0.0.1";
  int port = 0;
  std::string token;
  int nodes = 0;
  int first = 0;
  int concurrency = 0;
  std::string prefix = "sim";
  std::string log;
  bool enroll = false, boot = false, files = false, hello = false;
};

struct Answer {
  int code = 0;  // 0: no answer
  std::string body;
  std::string error;
};

// Where a request comes from: any port, or a privileged one on the node's
// own loopback address.
struct Source {
  std::string address;  // "": the kernel's choice, any port
};

// Binds `fd` to a free port below `below` (and at least 512) on `address`;
// the port, or 0 if none is free.
int BindPrivileged(int fd, const std::string& address, int below) {
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in local{};
  local.sin_family = AF_INET;
  inet_pton(AF_INET, address.c_str(), &local.sin_addr);
  for (int port = below - 1; port >= 512; --port) {
    local.sin_port = htons(static_cast<uint16_t>(port));
    if (::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) == 0) return port;
    if (errno != EADDRINUSE) return 0;
  }
  return 0;
}

// One request on a new connection; reads the answer to EOF.
Answer Request(const Options& o, const std::string& method, const std::string& target,
               const std::string& auth, const std::string& body, const Source& source = {},
               const std::string& extra_headers = "") {
  Answer a;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(o.port));
  inet_pton(AF_INET, o.host.c_str(), &addr.sin_addr);
  int fd = -1;
  bool connected = false;
  // A privileged source port whose connection to the server is still in
  // TIME_WAIT (an earlier storm) binds but does not connect: take the next.
  for (int below = 1024;;) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      a.error = std::string("socket: ") + std::strerror(errno);
      return a;
    }
    if (source.address.empty()) break;
    below = BindPrivileged(fd, source.address, below);
    if (below == 0) {
      a.error = "no privileged port on " + source.address + ": " + std::strerror(errno);
      ::close(fd);
      return a;
    }
    connected = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    if (connected || errno != EADDRNOTAVAIL) break;
    ::close(fd);
  }
  timeval tv{120, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (!connected && (!source.address.empty() ||
                     ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)) {
    a.error = std::string("connect: ") + std::strerror(errno);
    ::close(fd);
    return a;
  }
  std::string req = method + " " + target + " HTTP/1.1\r\nHost: " + o.host + ":" +
                    std::to_string(o.port) + "\r\nUser-Agent: iPXE/1.21.1 (bench_node_sim)\r\n" +
                    "Connection: close\r\n";
  if (!auth.empty()) req += "Authorization: Bearer " + auth + "\r\n";
  req += extra_headers;
  if (method == "POST")
    req +=
        "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  req += "\r\n" + body;
  size_t sent = 0;
  while (sent < req.size()) {
    ssize_t n = ::send(fd, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      a.error = std::string("send: ") + std::strerror(errno);
      ::close(fd);
      return a;
    }
    sent += static_cast<size_t>(n);
  }
  std::string in;
  char buf[65536];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      a.error = std::string("recv: ") + std::strerror(errno);
      ::close(fd);
      return a;
    }
    if (n == 0) break;
    in.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  // "HTTP/1.1 200 OK\r\n...\r\n\r\nbody"
  size_t head_end = in.find("\r\n\r\n");
  if (in.compare(0, 5, "HTTP/") != 0 || head_end == std::string::npos) {
    a.error = in.empty() ? "connection closed without an answer" : "not an HTTP answer";
    return a;
  }
  a.code = std::atoi(in.c_str() + in.find(' ') + 1);
  a.body = in.substr(head_end + 4);
  return a;
}

std::string Mac(int i, char sep) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "52%c54%c0a%c%02x%c%02x%c%02x", sep, sep, sep, (i >> 16) & 0xff,
                sep, (i >> 8) & 0xff, sep, i & 0xff);
  return buf;
}

std::string Name(const Options& o, int i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%05d", i);
  return o.prefix + buf;
}

// The value after `key` in `text`, up to whitespace.
std::string After(const std::string& text, const std::string& key) {
  size_t p = text.find(key);
  if (p == std::string::npos) return "";
  p += key.size();
  size_t e = text.find_first_of(" \t\r\n", p);
  return text.substr(p, e == std::string::npos ? std::string::npos : e - p);
}

// A failed request's kind, for the summary.
std::string ErrorKind(const Answer& a) {
  if (a.code) return "http " + std::to_string(a.code);
  if (a.error.find("reset") != std::string::npos) return "reset";
  if (a.error.find("temporarily unavailable") != std::string::npos) return "timeout";
  if (a.error.find("without an answer") != std::string::npos) return "closed";
  if (a.error.rfind("connect:", 0) == 0) return "connect";
  return "other";
}

struct Stats {
  std::mutex mu;
  std::ofstream log;
  std::map<std::string, int> ok, failed;
  std::map<std::string, int> kinds;  // what the failures were: "reset", "timeout", "http 503"...
  std::vector<double> ms;
  std::vector<std::string> first_errors;
  int64_t bytes = 0;

  void Record(const std::string& node, const std::string& step, const Answer& a, bool good,
              double millis) {
    std::lock_guard lock(mu);
    if (log.is_open()) log << node << ' ' << step << ' ' << a.code << ' ' << millis << std::endl;
    (good ? ok : failed)[step]++;
    ms.push_back(millis);
    bytes += static_cast<int64_t>(a.body.size());
    if (!good) kinds[ErrorKind(a)]++;
    if (!good && first_errors.size() < 10)
      first_errors.push_back(
          node + " " + step + ": " +
          (a.code ? std::to_string(a.code) + " " + a.body.substr(0, 200) : a.error));
  }
};

// Runs one step; false (and the node stops) unless the answer is `expect`.
bool Step(const Options& o, Stats& stats, const std::string& node, const std::string& step,
          const std::string& method, const std::string& target, const std::string& auth,
          const std::string& body, int expect, Answer* out = nullptr, const Source& source = {},
          const std::string& extra_headers = "") {
  auto t0 = std::chrono::steady_clock::now();
  Answer a = Request(o, method, target, auth, body, source, extra_headers);
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  bool good = a.code == expect;
  stats.Record(node, step, a, good, ms);
  if (out) *out = std::move(a);
  return good;
}

// The content of `name` in a newc cpio archive ("" if absent).
std::string CpioFile(const std::string& cpio, const std::string& name) {
  size_t pos = 0;
  while (pos + 110 <= cpio.size() && cpio.compare(pos, 6, "070701") == 0) {
    auto field = [&](int i) {
      return std::strtoul(cpio.substr(pos + 6 + 8 * static_cast<size_t>(i), 8).c_str(), nullptr,
                          16);
    };
    const size_t size = field(6), name_size = field(11);
    const std::string entry = cpio.substr(pos + 110, name_size ? name_size - 1 : 0);
    size_t data = (pos + 110 + name_size + 3) & ~size_t{3};
    if (entry == name) return cpio.substr(data, size);
    if (entry == "TRAILER!!!") break;
    pos = (data + size + 3) & ~size_t{3};
  }
  return "";
}

void RunNode(const Options& o, Stats& stats, int i) {
  const std::string name = Name(o, i), mac = Mac(i, ':'), hyphen = Mac(i, '-');
  if (o.enroll && !Step(o, stats, name, "enroll", "POST", "/api/v1/nodes", o.token,
                        "{\"hostname\":\"" + name + "\",\"mac\":\"" + mac + "\"}", 201))
    return;
  if (!o.boot) return;
  if (!Step(o, stats, name, "start.ipxe", "GET", "/boot/start.ipxe", "", "", 200)) return;
  Answer script;
  if (!Step(o, stats, name, "node.ipxe", "GET", "/boot/" + hyphen + ".ipxe", "", "", 200, &script))
    return;
  const std::string version = After(script.body, "vmlinuz?v=");
  auto fail = [&](const std::string& step, const std::string& why) {
    Answer bad;
    bad.code = 200;
    bad.body = why;
    stats.Record(name, step, bad, false, 0);
  };
  if (version.empty())
    return fail("node.ipxe-content", "the script names no image: " + script.body.substr(0, 300));
  if (script.body.find("token=") != std::string::npos)
    return fail("node.ipxe-content", "the script carries a token: " + script.body.substr(0, 300));
  const std::string base = "/boot/" + hyphen + "/";
  if (o.files) {
    if (!Step(o, stats, name, "vmlinuz", "GET", base + "vmlinuz?v=" + version, "", "", 200)) return;
    if (!Step(o, stats, name, "initrd", "GET", base + "initrd.img?v=" + version, "", "", 200))
      return;
  }
  if (!o.files && !o.hello) return;
  Answer ticket_img;
  if (!Step(o, stats, name, "ticket", "GET", base + "ticket.img", "", "", 200, &ticket_img)) return;
  std::string ticket = CpioFile(ticket_img.body, "provision/ticket");
  while (!ticket.empty() && ticket.back() == '\n') ticket.pop_back();
  if (ticket.empty()) return fail("ticket-content", "ticket.img holds no provision/ticket");
  const Source root{"127.10." + std::to_string(i / 250 % 256) + "." + std::to_string(i % 250 + 1)};
  Answer overlay;
  if (!Step(o, stats, name, "overlay", "GET", base + "overlay.tar?ticket=" + ticket, "", "", 200,
            &overlay, root))
    return;
  const std::string token = After(overlay.body, "PROVISION_TOKEN=");
  if (token.empty()) return fail("overlay-content", "the overlay's agent.conf has no token");
  if (o.hello)
    Step(o, stats, name, "hello", "POST", "/api/v1/nodes/" + mac + "/hello", token,
         "{\"hostname\":\"" + name + "\",\"ssh_host_key\":\"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" +
             Mac(i, '/') + " sim\",\"image\":\"sim\",\"cpus\":2}",
         200, nullptr, root, "X-Provision-Ticket: " + ticket + "\r\n");
}

int Usage(const char* why) {
  std::cerr << "bench_node_sim: " << why
            << "\nusage: bench_node_sim --url http://HOST:PORT [--token T] --nodes N [--first K] "
               "[--prefix P] [--concurrency C] [--log FILE] [--enroll] [--boot] [--files] "
               "[--hello]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::string url;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "bench_node_sim: " << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--url")
      url = value();
    else if (a == "--token")
      o.token = value();
    else if (a == "--nodes")
      o.nodes = std::atoi(value().c_str());
    else if (a == "--first")
      o.first = std::atoi(value().c_str());
    else if (a == "--prefix")
      o.prefix = value();
    else if (a == "--concurrency")
      o.concurrency = std::atoi(value().c_str());
    else if (a == "--log")
      o.log = value();
    else if (a == "--enroll")
      o.enroll = true;
    else if (a == "--boot")
      o.boot = true;
    else if (a == "--files")
      o.files = o.boot = true;
    else if (a == "--hello")
      o.hello = o.boot = true;
    else
      return Usage(("unknown argument " + a).c_str());
  }
  if (url.rfind("http://", 0) != 0) return Usage("--url http://HOST:PORT is required");
  std::string hostport = url.substr(7);
  hostport = hostport.substr(0, hostport.find('/'));
  size_t colon = hostport.rfind(':');
  if (colon == std::string::npos) return Usage("--url needs a port");
  o.host = hostport.substr(0, colon);
  o.port = std::atoi(hostport.c_str() + colon + 1);
  if (o.nodes <= 0 || o.nodes > 1000000) return Usage("--nodes must be 1..1000000");
  if (!o.enroll && !o.boot) return Usage("no steps: --enroll, --boot, --files, --hello");
  if (o.enroll && o.token.empty()) return Usage("--enroll needs --token");
  if (o.concurrency <= 0 || o.concurrency > o.nodes) o.concurrency = o.nodes;

  Stats stats;
  if (!o.log.empty()) {
    stats.log.open(o.log);
    if (!stats.log) return Usage(("cannot write " + o.log).c_str());
  }
  std::mutex mu;
  std::condition_variable cv;
  bool go = false;
  int ready = 0;
  std::atomic<int> next{0};
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(o.concurrency));
  for (int t = 0; t < o.concurrency; ++t)
    threads.emplace_back([&] {
      {
        std::unique_lock lock(mu);
        ++ready;
        cv.notify_all();
        cv.wait(lock, [&] { return go; });
      }
      for (int k; (k = next++) < o.nodes;) RunNode(o, stats, o.first + k);
    });
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return ready == o.concurrency; });
  }
  auto t0 = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(mu);
    go = true;
  }
  cv.notify_all();
  for (auto& t : threads) t.join();
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (stats.log.is_open()) stats.log.close();

  int ok = 0, failed = 0;
  std::string steps;
  for (const auto& [k, v] : stats.ok) ok += v;
  for (const auto& [k, v] : stats.failed) failed += v;
  for (const auto& [k, v] : stats.ok)
    steps += (steps.empty() ? "" : ",") + ("\"" + k + "\":" + std::to_string(v));
  std::string bad, kinds;
  for (const auto& [k, v] : stats.failed)
    bad += (bad.empty() ? "" : ",") + ("\"" + k + "\":" + std::to_string(v));
  for (const auto& [k, v] : stats.kinds)
    kinds += (kinds.empty() ? "" : ",") + ("\"" + k + "\":" + std::to_string(v));
  std::sort(stats.ms.begin(), stats.ms.end());
  auto pct = [&](double p) {
    if (stats.ms.empty()) return 0.0;
    size_t idx = static_cast<size_t>(p * static_cast<double>(stats.ms.size() - 1) + 0.5);
    return stats.ms[idx];
  };
  std::printf(
      "{\"nodes\":%d,\"concurrency\":%d,\"requests\":%d,\"ok\":%d,\"errors\":%d,\"ok_by_step\":{%s}"
      ","
      "\"errors_by_step\":{%s},\"errors_by_kind\":{%s},\"wall_s\":%.3f,\"requests_per_s\":%.1f,"
      "\"latency_ms\":{\"p50\":%."
      "2f,"
      "\"p90\":%.2f,\"p99\":%.2f,\"max\":%.2f},\"bytes\":%lld}\n",
      o.nodes, o.concurrency, ok + failed, ok, failed, steps.c_str(), bad.c_str(), kinds.c_str(),
      wall, wall > 0 ? (ok + failed) / wall : 0.0, pct(0.5), pct(0.9), pct(0.99), pct(1.0),
      static_cast<long long>(stats.bytes));
  for (const auto& e : stats.first_errors) std::fprintf(stderr, "error: %s\n", e.c_str());
  return failed == 0 ? 0 : 1;
}
