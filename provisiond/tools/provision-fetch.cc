// provision-fetch: one HTTP request from a privileged source port, for the provisiond initramfs.
//
//   provision-fetch [-t SECONDS] [-H 'Name: value']... [-d BODY] [-o FILE] URL
//
// GET, or POST with -d (Content-Type: application/json unless a -H names one). URL is
// http://ADDR[:PORT]/PATH with a numeric IPv4 address or [IPv6]: the initramfs has no resolver.
//
// The request leaves from a source port below 1024. provisiond hands out a node's overlay (with
// the node's credential in it) and takes its failure reports only from such ports: only root on
// the node can bind them, so the node's unprivileged users cannot ask in its name. busybox wget
// cannot choose its source port, hence this tool.
//
//   -t SECONDS  give up after SECONDS (default 60)
//   -H HEADER   an extra request header (repeatable)
//   -d BODY     POST this body
//   -o FILE     write the answer's body to FILE (default: standard output)
//
// Exit status: 0 on a 2xx answer, 1 usage, 2 no answer (network), 3 any other answer (its status
// line and the start of its body on standard error). Plain C++20 + POSIX, meant to be linked
// statically (no libraries in the initramfs).

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace {

constexpr int kExitUsage = 1;
constexpr int kExitNetwork = 2;
constexpr int kExitStatus = 3;

int Usage(const char* why) {
  std::fprintf(stderr,
               "provision-fetch: %s\nusage: provision-fetch [-t SECONDS] [-H HEADER]... [-d BODY] "
               "[-o FILE] http://ADDR[:PORT]/PATH\n",
               why);
  return kExitUsage;
}

struct Target {
  int family = AF_INET;
  sockaddr_storage addr{};
  socklen_t addr_len = 0;
  std::string host;  // as written, for the Host header
  std::string path;
};

bool ParseUrl(const std::string& url, Target& t) {
  const std::string scheme = "http://";
  if (url.compare(0, scheme.size(), scheme) != 0) return false;
  std::string rest = url.substr(scheme.size());
  size_t slash = rest.find('/');
  std::string hostport = rest.substr(0, slash);
  t.path = slash == std::string::npos ? "/" : rest.substr(slash);
  t.host = hostport;
  std::string host;
  int port = 80;
  if (!hostport.empty() && hostport[0] == '[') {
    size_t close = hostport.find(']');
    if (close == std::string::npos) return false;
    host = hostport.substr(1, close - 1);
    if (close + 1 < hostport.size()) {
      if (hostport[close + 1] != ':') return false;
      port = std::atoi(hostport.c_str() + close + 2);
    }
    t.family = AF_INET6;
  } else {
    size_t colon = hostport.find(':');
    host = hostport.substr(0, colon);
    if (colon != std::string::npos) port = std::atoi(hostport.c_str() + colon + 1);
  }
  if (port <= 0 || port > 65535) return false;
  if (t.family == AF_INET6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&t.addr);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(static_cast<uint16_t>(port));
    if (inet_pton(AF_INET6, host.c_str(), &a->sin6_addr) != 1) return false;
    t.addr_len = sizeof *a;
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&t.addr);
    a->sin_family = AF_INET;
    a->sin_port = htons(static_cast<uint16_t>(port));
    if (inet_pton(AF_INET, host.c_str(), &a->sin_addr) != 1) return false;
    t.addr_len = sizeof *a;
  }
  return true;
}

// A socket bound to a free source port below 1024 (tried from a random start), or -1.
int BindPrivileged(int family) {
  int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const int first = 512, count = 512;
  const int start = static_cast<int>(static_cast<unsigned>(std::time(nullptr) ^ getpid()) % count);
  for (int i = 0; i < count; ++i) {
    const uint16_t port = static_cast<uint16_t>(first + (start + i) % count);
    sockaddr_storage local{};
    socklen_t len;
    if (family == AF_INET6) {
      auto* a = reinterpret_cast<sockaddr_in6*>(&local);
      a->sin6_family = AF_INET6;
      a->sin6_addr = in6addr_any;
      a->sin6_port = htons(port);
      len = sizeof *a;
    } else {
      auto* a = reinterpret_cast<sockaddr_in*>(&local);
      a->sin_family = AF_INET;
      a->sin_addr.s_addr = htonl(INADDR_ANY);
      a->sin_port = htons(port);
      len = sizeof *a;
    }
    if (bind(fd, reinterpret_cast<sockaddr*>(&local), len) == 0) return fd;
    if (errno == EACCES || errno == EPERM) break;  // not root: no port below 1024 at all
  }
  close(fd);
  return -1;
}

bool SendAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

void OnAlarm(int) {
  static const char msg[] = "provision-fetch: timed out\n";
  (void)!write(2, msg, sizeof msg - 1);
  _exit(kExitNetwork);
}

}  // namespace

int main(int argc, char** argv) {
  int timeout_s = 60;
  std::vector<std::string> headers;
  std::string body, out_path;
  bool post = false;
  int opt;
  while ((opt = getopt(argc, argv, "t:H:d:o:")) != -1) {
    switch (opt) {
      case 't':
        timeout_s = std::atoi(optarg);
        break;
      case 'H':
        headers.emplace_back(optarg);
        break;
      case 'd':
        body = optarg;
        post = true;
        break;
      case 'o':
        out_path = optarg;
        break;
      default:
        return Usage("unknown option");
    }
  }
  if (optind + 1 != argc) return Usage("one URL expected");
  if (timeout_s <= 0) return Usage("-t needs a positive number of seconds");
  Target target;
  if (!ParseUrl(argv[optind], target))
    return Usage("the URL must be http://ADDR[:PORT]/PATH with a numeric address");

  std::signal(SIGALRM, OnAlarm);
  alarm(static_cast<unsigned>(timeout_s));
  int fd = BindPrivileged(target.family);
  if (fd < 0) {
    std::fprintf(stderr, "provision-fetch: no source port below 1024 to bind (%s)\n",
                 std::strerror(errno));
    return kExitNetwork;
  }
  if (connect(fd, reinterpret_cast<sockaddr*>(&target.addr), target.addr_len) != 0) {
    std::fprintf(stderr, "provision-fetch: cannot connect to %s: %s\n", target.host.c_str(),
                 std::strerror(errno));
    return kExitNetwork;
  }
  bool has_type = false;
  for (const auto& h : headers)
    if (strncasecmp(h.c_str(), "content-type:", 13) == 0) has_type = true;
  std::string request = std::string(post ? "POST " : "GET ") + target.path +
                        " HTTP/1.0\r\nHost: " + target.host +
                        "\r\nUser-Agent: provision-fetch\r\nConnection: close\r\n";
  for (const auto& h : headers) request += h + "\r\n";
  if (post) {
    if (!has_type) request += "Content-Type: application/json\r\n";
    request += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  }
  request += "\r\n" + body;
  if (!SendAll(fd, request)) {
    std::fprintf(stderr, "provision-fetch: send failed: %s\n", std::strerror(errno));
    return kExitNetwork;
  }
  std::string answer;
  char buf[65536];
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      std::fprintf(stderr, "provision-fetch: receive failed: %s\n", std::strerror(errno));
      return kExitNetwork;
    }
    if (n == 0) break;
    answer.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  size_t head_end = answer.find("\r\n\r\n");
  if (answer.compare(0, 5, "HTTP/") != 0 || head_end == std::string::npos) {
    std::fprintf(stderr, "provision-fetch: %s did not answer in HTTP\n", target.host.c_str());
    return kExitNetwork;
  }
  const size_t space = answer.find(' ');
  const int status = space < head_end ? std::atoi(answer.c_str() + space + 1) : 0;
  const std::string content = answer.substr(head_end + 4);
  if (status < 200 || status > 299) {
    std::fprintf(stderr, "provision-fetch: %s: %.200s\n",
                 answer.substr(0, answer.find("\r\n")).c_str(), content.c_str());
    return kExitStatus;
  }
  FILE* out = out_path.empty() ? stdout : std::fopen(out_path.c_str(), "wb");
  if (!out) {
    std::fprintf(stderr, "provision-fetch: cannot write %s: %s\n", out_path.c_str(),
                 std::strerror(errno));
    return kExitUsage;
  }
  bool ok = std::fwrite(content.data(), 1, content.size(), out) == content.size();
  ok = (out == stdout ? std::fflush(out) : std::fclose(out)) == 0 && ok;
  return ok ? 0 : kExitNetwork;
}
