// provision-mount: mounts an NFS export with mount(2), for the provisiond initramfs.
//
//   provision-mount [-n] [-v] [-t SECONDS] [-o OPTIONS] SERVER:/PATH DIR
//
// busybox mount cannot pass the kernel's text options for NFSv4 (it speaks only the old binary
// NFSv2/v3 mount data), and the initramfs has no mount.nfs. This tool builds the option string
// the kernel expects and calls mount(2) once:
//
//   vers=    from OPTIONS (vers= or nfsvers=), default 4.1. 4.x mounts type "nfs4", 3 type "nfs".
//   addr=    the server's address (SERVER must be a numeric IPv4 address or [IPv6]: the
//            initramfs has no resolver).
//   clientaddr=  (NFSv4) the local address that routes to the server, found by connecting a UDP
//            socket to it. NFSv4.0 needs it for callbacks; 4.1+ ignores it but it is harmless.
//   proto=   tcp (tcp6 for an IPv6 server) unless given.
//   nolock   (NFSv3) unless lock/nolock is given: the initramfs runs no rpc.statd.
//
// Mount flags in OPTIONS (ro, rw, nosuid, nodev, noexec, noatime, ...) become MS_* flags; every
// other option is passed to the kernel as is (e.g. timeo=, retrans=, soft, nconnect=, port=).
//
//   -n          dry run: print the mount(2) call and exit 0 (no root needed)
//   -v          print the mount(2) call before making it
//   -t SECONDS  give up after SECONDS (the mount runs in a child, killed with SIGKILL, which NFS
//               waits honour): an unreachable server otherwise blocks mount(2) for minutes
//
// Exit status: 0 mounted, 1 usage, 32 mount failed (as mount(8)). Plain C++20 + POSIX, meant to
// be linked statically (no libraries in the initramfs).

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr int kExitUsage = 1;
constexpr int kExitFail = 32;

struct MountCall {
  std::string source;
  std::string target;
  std::string fstype;
  unsigned long flags = 0;
  std::string data;
  std::string flag_names;  // for printing
};

struct FlagOption {
  const char* name;
  unsigned long set;
  unsigned long clear;
};

constexpr FlagOption kFlagOptions[] = {
    {"ro", MS_RDONLY, 0},
    {"rw", 0, MS_RDONLY},
    {"nosuid", MS_NOSUID, 0},
    {"suid", 0, MS_NOSUID},
    {"nodev", MS_NODEV, 0},
    {"dev", 0, MS_NODEV},
    {"noexec", MS_NOEXEC, 0},
    {"exec", 0, MS_NOEXEC},
    {"sync", MS_SYNCHRONOUS, 0},
    {"async", 0, MS_SYNCHRONOUS},
    {"noatime", MS_NOATIME, 0},
    {"atime", 0, MS_NOATIME},
    {"nodiratime", MS_NODIRATIME, 0},
    {"diratime", 0, MS_NODIRATIME},
    {"relatime", MS_RELATIME, 0},
    {"norelatime", 0, MS_RELATIME},
    {"strictatime", MS_STRICTATIME, 0},
    {"defaults", 0, 0},
};

void Usage() {
  std::fputs(
      "usage: provision-mount [-n] [-v] [-t SECONDS] [-o OPTIONS] SERVER:/PATH DIR\n"
      "  SERVER is a numeric IPv4 address or [IPv6]; OPTIONS as for nfs(5), default vers=4.1\n",
      stderr);
}

std::vector<std::string> SplitOptions(std::string_view s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string_view::npos) comma = s.size();
    if (comma > start) out.emplace_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

std::string_view KeyOf(std::string_view opt) {
  size_t eq = opt.find('=');
  return eq == std::string_view::npos ? opt : opt.substr(0, eq);
}

bool HasKey(const std::vector<std::string>& opts, std::string_view key) {
  for (const auto& o : opts)
    if (KeyOf(o) == key) return true;
  return false;
}

// A server address: family and numeric text (without brackets).
struct ServerAddr {
  int family = AF_UNSPEC;
  std::string text;
  sockaddr_storage ss{};
  socklen_t len = 0;
};

std::optional<ServerAddr> ParseServer(std::string_view host) {
  ServerAddr a;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  a.text = std::string(host);
  auto* s4 = reinterpret_cast<sockaddr_in*>(&a.ss);
  auto* s6 = reinterpret_cast<sockaddr_in6*>(&a.ss);
  if (inet_pton(AF_INET, a.text.c_str(), &s4->sin_addr) == 1) {
    a.family = AF_INET;
    s4->sin_family = AF_INET;
    s4->sin_port = htons(2049);
    a.len = sizeof(sockaddr_in);
    return a;
  }
  a.ss = {};
  if (inet_pton(AF_INET6, a.text.c_str(), &s6->sin6_addr) == 1) {
    a.family = AF_INET6;
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(2049);
    a.len = sizeof(sockaddr_in6);
    return a;
  }
  return std::nullopt;
}

// The local address the kernel would use to reach the server (no packet is sent: connect(2) on a
// UDP socket only picks the route and the source address).
std::optional<std::string> LocalAddressFor(const ServerAddr& server, std::string* error) {
  int fd = socket(server.family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = std::string("socket: ") + std::strerror(errno);
    return std::nullopt;
  }
  if (connect(fd, reinterpret_cast<const sockaddr*>(&server.ss), server.len) != 0) {
    *error = std::string("no route to ") + server.text + ": " + std::strerror(errno);
    close(fd);
    return std::nullopt;
  }
  sockaddr_storage local{};
  socklen_t len = sizeof(local);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) {
    *error = std::string("getsockname: ") + std::strerror(errno);
    close(fd);
    return std::nullopt;
  }
  close(fd);
  char buf[INET6_ADDRSTRLEN] = {};
  const void* src =
      local.ss_family == AF_INET6
          ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr)
          : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&local)->sin_addr);
  if (!inet_ntop(local.ss_family, src, buf, sizeof(buf))) {
    *error = std::string("inet_ntop: ") + std::strerror(errno);
    return std::nullopt;
  }
  return std::string(buf);
}

// Builds the mount(2) call; on error returns nullopt with *error set.
std::optional<MountCall> BuildCall(const std::string& spec, const std::string& target,
                                   const std::string& options, bool dry_run, std::string* error) {
  size_t colon = spec.rfind(":/");
  if (colon == std::string::npos || colon == 0) {
    *error = "source must be SERVER:/PATH, not '" + spec + "'";
    return std::nullopt;
  }
  std::string host = spec.substr(0, colon);
  auto server = ParseServer(host);
  if (!server) {
    *error = "server '" + host + "' is not a numeric IPv4 address or [IPv6] address";
    return std::nullopt;
  }
  MountCall call;
  call.source = spec;
  call.target = target;

  std::vector<std::string> data;
  std::string vers = "4.1";
  for (const auto& opt : SplitOptions(options)) {
    bool is_flag = false;
    for (const auto& f : kFlagOptions) {
      if (opt == f.name) {
        call.flags = (call.flags | f.set) & ~f.clear;
        is_flag = true;
        break;
      }
    }
    if (is_flag) continue;
    std::string_view key = KeyOf(opt);
    if (key == "vers" || key == "nfsvers") {
      vers = opt.substr(key.size() + 1);
      continue;
    }
    if (key == "minorversion") {
      *error = "use vers=4.N rather than minorversion=";
      return std::nullopt;
    }
    data.push_back(opt);
  }
  bool v4 = vers == "4" || vers.starts_with("4.");
  if (!v4 && vers != "3") {
    *error = "unsupported NFS version '" + vers + "' (3, 4, 4.0, 4.1, 4.2)";
    return std::nullopt;
  }
  call.fstype = v4 ? "nfs4" : "nfs";

  std::vector<std::string> added;
  added.push_back("vers=" + vers);
  if (!HasKey(data, "proto"))
    added.push_back(server->family == AF_INET6 ? "proto=tcp6" : "proto=tcp");
  if (!HasKey(data, "addr")) added.push_back("addr=" + server->text);
  if (v4 && !HasKey(data, "clientaddr")) {
    std::string why;
    auto local = LocalAddressFor(*server, &why);
    if (local) {
      added.push_back("clientaddr=" + *local);
    } else if (dry_run) {
      added.push_back(server->family == AF_INET6 ? "clientaddr=::" : "clientaddr=0.0.0.0");
    } else {
      *error = "cannot find the local address for " + server->text + ": " + why;
      return std::nullopt;
    }
  }
  if (!v4 && !HasKey(data, "lock") && !HasKey(data, "nolock")) added.push_back("nolock");

  std::string text;
  for (const auto& part : added) text += (text.empty() ? "" : ",") + part;
  for (const auto& part : data) text += (text.empty() ? "" : ",") + part;
  call.data = text;

  for (const auto& f : kFlagOptions)
    if (f.set != 0 && (call.flags & f.set) == f.set)
      call.flag_names += std::string(call.flag_names.empty() ? "" : "|") + f.name;
  if (call.flag_names.empty()) call.flag_names = "0";
  return call;
}

const char* Hint(int err) {
  switch (err) {
    case ENODEV:
      return "the kernel does not know this filesystem type: load the nfs/nfsv4 modules";
    case EPROTONOSUPPORT:
      return "the server (or the client kernel) does not support this NFS version";
    case EACCES:
    case EPERM:
      return "the server refuses this client, or (NFSv3) the path is not exported";
    case ENOENT:
      return "the path is not exported (or the mount point is missing)";
    case ETIMEDOUT:
    case EHOSTUNREACH:
    case ENETUNREACH:
    case ECONNREFUSED:
      return "the server is not reachable on port 2049 (network, address, or server not running)";
    case EIO:
      return "RPC failed (server not running, or NFSv4 client identity clash: unique hostname?)";
    default:
      return nullptr;
  }
}

void PrintCall(const MountCall& c) {
  std::printf("mount(\"%s\", \"%s\", \"%s\", %s, \"%s\")\n", c.source.c_str(), c.target.c_str(),
              c.fstype.c_str(), c.flag_names.c_str(), c.data.c_str());
  std::fflush(stdout);
}

int DoMount(const MountCall& c) {
  if (mount(c.source.c_str(), c.target.c_str(), c.fstype.c_str(), c.flags, c.data.c_str()) == 0)
    return 0;
  int err = errno;
  const char* hint = Hint(err);
  std::fprintf(stderr, "provision-mount: mounting %s on %s (%s, %s) failed: %s%s%s\n",
               c.source.c_str(), c.target.c_str(), c.fstype.c_str(), c.data.c_str(),
               std::strerror(err), hint ? ": " : "", hint ? hint : "");
  return kExitFail;
}

// Runs DoMount in a child; kills it after timeout_s.
int MountWithTimeout(const MountCall& c, int timeout_s) {
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    std::fprintf(stderr, "provision-mount: fork: %s\n", std::strerror(errno));
    return kExitFail;
  }
  if (pid == 0) _exit(DoMount(c));
  timespec start{};
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    int status = 0;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      std::fprintf(stderr, "provision-mount: mount child died (signal %d)\n",
                   WIFSIGNALED(status) ? WTERMSIG(status) : 0);
      return kExitFail;
    }
    if (r < 0 && errno != EINTR) {
      std::fprintf(stderr, "provision-mount: waitpid: %s\n", std::strerror(errno));
      return kExitFail;
    }
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - start.tv_sec >= timeout_s) {
      kill(pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      // The kill may have lost the race against a mount that just succeeded.
      if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
      std::fprintf(
          stderr,
          "provision-mount: mounting %s on %s timed out after %d s (server not answering)\n",
          c.source.c_str(), c.target.c_str(), timeout_s);
      return kExitFail;
    }
    timespec pause{0, 100 * 1000 * 1000};
    nanosleep(&pause, nullptr);
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool dry_run = false;
  bool verbose = false;
  int timeout_s = 0;
  std::string options;
  int opt;
  while ((opt = getopt(argc, argv, "nvt:o:h")) != -1) {
    switch (opt) {
      case 'n':
        dry_run = true;
        break;
      case 'v':
        verbose = true;
        break;
      case 't': {
        char* end = nullptr;
        long v = std::strtol(optarg, &end, 10);
        if (!end || *end != '\0' || v < 0 || v > 86400) {
          std::fprintf(stderr, "provision-mount: bad -t '%s'\n", optarg);
          return kExitUsage;
        }
        timeout_s = static_cast<int>(v);
        break;
      }
      case 'o':
        options += (options.empty() ? "" : ",") + std::string(optarg);
        break;
      case 'h':
        Usage();
        return 0;
      default:
        Usage();
        return kExitUsage;
    }
  }
  if (argc - optind != 2) {
    Usage();
    return kExitUsage;
  }
  std::string error;
  auto call = BuildCall(argv[optind], argv[optind + 1], options, dry_run, &error);
  if (!call) {
    std::fprintf(stderr, "provision-mount: %s\n", error.c_str());
    return kExitUsage;
  }
  if (dry_run || verbose) PrintCall(*call);
  if (dry_run) return 0;
  return timeout_s > 0 ? MountWithTimeout(*call, timeout_s) : DoMount(*call);
}
