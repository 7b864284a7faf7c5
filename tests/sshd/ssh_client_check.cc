// Drives prov::SshSession against real sshd targets started by
// sshd-targets.sh (tests/integration/ssh_client_test.sh runs it).
// Usage: ssh_client_check FIXTURE_DIR CONTROL_KEY OTHER_KEY FIXTURE_SCRIPT
//   FIXTURE_DIR/targets lists at least 3 targets (t1 t2 t3) that accept
//   CONTROL_KEY for root; OTHER_KEY is a key they do not accept.
// Prints "ok: ..." or "FAIL: ..." per check and exits 1 if any failed.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include "base/file_util.h"
#include "configure/ssh_client.h"

namespace {

using Clock = std::chrono::steady_clock;
using prov::Code;
using prov::RemoteResult;
using prov::SshEndpoint;
using prov::SshSession;

int failures = 0;

void Check(bool cond, const std::string& what, const std::string& detail = "") {
  if (cond) {
    std::cout << "ok: " << what << "\n";
  } else {
    std::cout << "FAIL: " << what << (detail.empty() ? "" : ": " + detail) << "\n";
    ++failures;
  }
  std::cout.flush();
}

double MsSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

struct Target {
  std::string name;
  int port = 0;
  std::string host_key;  // "type base64"
};

std::map<std::string, Target> ReadTargets(const std::string& path) {
  std::map<std::string, Target> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    Target t;
    std::string type, b64;
    if (words >> t.name >> t.port >> type >> b64) {
      t.host_key = type + " " + b64;
      out[t.name] = t;
    }
  }
  return out;
}

SshEndpoint Endpoint(const Target& t, const std::string& pinned) {
  SshEndpoint e;
  e.node = t.name;
  e.host = "127.0.0.1";
  e.port = t.port;
  e.user = "root";
  e.pinned_host_key = pinned;
  e.connect_timeout_ms = 5000;
  return e;
}

// A loopback port nothing listens on: bound by us, then released.
int ClosedPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

std::string Show(const std::string& s) {
  std::string out;
  for (unsigned char c : s.substr(0, 200)) {
    if (c >= 32 && c < 127) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return "'" + out + (s.size() > 200 ? "...'" : "'");
}

std::string Describe(const prov::Result<RemoteResult>& r) {
  if (!r.ok()) return "error " + r.status().message();
  return "rc " + std::to_string(r->exit_code) + (r->timed_out ? " (timed out)" : "") + " out " +
         Show(r->out) + " err " + Show(r->err) + " meta " + Show(r->meta);
}

bool RunIs(const prov::Result<RemoteResult>& r, int rc, const std::string& out,
           const std::string& err = "", const std::string& meta = "") {
  return r.ok() && !r->timed_out && r->exit_code == rc && r->out == out && r->err == err &&
         r->meta == meta;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: ssh_client_check FIXTURE_DIR CONTROL_KEY OTHER_KEY FIXTURE_SCRIPT\n";
    return 2;
  }
  const std::string dir = argv[1], key = argv[2], other_key = argv[3], fixture = argv[4];
  auto targets = ReadTargets(dir + "/targets");
  if (targets.size() < 3 || !targets.count("t1") || !targets.count("t2") || !targets.count("t3")) {
    std::cerr << "ssh_client_check: " << dir << "/targets lists fewer than t1..t3\n";
    return 2;
  }
  const Target &t1 = targets["t1"], &t2 = targets["t2"], &t3 = targets["t3"];

  std::cout << "== connect with the pinned host key\n";
  auto t0 = Clock::now();
  auto connected = SshSession::Connect(Endpoint(t1, t1.host_key + " a-comment"), key);
  const double connect_ms = MsSince(t0);
  Check(connected.ok(), "connect to t1 with its pinned key",
        connected.ok() ? "" : connected.status().message());
  if (!connected.ok()) return 1;
  SshSession& s = **connected;
  Check(s.host_key() == t1.host_key, "host_key() is t1's key", s.host_key());
  Check(!s.pinned_now(), "pinned_now() is false when a key was pinned");
  Check(s.alive(), "alive() after connect");
  Check(s.node() == "t1", "node() is the endpoint's name");
  std::cout << "connect: " << connect_ms << " ms\n";

  std::cout << "== run: exit code, stdout, stderr, fd 3\n";
  t0 = Clock::now();
  auto r = s.Run("echo out; echo err >&2; echo changed=1 >&3; printf 'checksum=abc\\n' >&3; exit 7",
                 "", "", 10000);
  std::cout << "first run (starts the worker): " << MsSince(t0) << " ms\n";
  Check(RunIs(r, 7, "out\n", "err\n", "changed=1\nchecksum=abc\n"), "rc/out/err/meta exact",
        Describe(r));
  r = s.Run("echo hi", "", "", 10000);
  Check(RunIs(r, 0, "hi\n"), "a script that reads no stdin, empty input", Describe(r));
  r = s.Run("cat; echo end", "", "", 10000);
  Check(RunIs(r, 0, "end\n"), "a script that reads an empty stdin", Describe(r));
  r = s.Run("", "", "", 10000);
  Check(RunIs(r, 0, ""), "an empty script", Describe(r));
  r = s.Run("printf 'a\\000b\\377\\n'; printf '\\000' >&2", "", "", 10000);
  Check(RunIs(r, 0, std::string("a\0b\xff\n", 5), std::string("\0", 1)),
        "NUL and high bytes in stdout and stderr", Describe(r));
  r = s.Run("read -r line; echo \"got $line\"; cat", "first\nsecond\n", "", 10000);
  Check(RunIs(r, 0, "got first\nsecond\n"), "stdin input", Describe(r));
  r = s.Run("exit 255", "", "", 10000);
  Check(RunIs(r, 255, ""), "exit code 255", Describe(r));

  std::cout << "== the script arrives byte for byte (by lines up to 2 KiB, by bytes above)\n";
  {
    // The script prints itself (`cat "$0"`): tabs, spaces at both ends of a
    // line, a trailing backslash, CR, blank lines and high bytes survive.
    const std::string tricky = "cat \"$0\" # \t  \nx='a\\\\\n b' # \r\n\n#\xc3\xa9\xff \\\n\n";
    r = s.Run(tricky, "", "", 10000);
    Check(RunIs(r, 0, tricky), "a short script, by lines, exact", Describe(r));
    r = s.Run("cat \"$0\"", "", "", 10000);
    Check(RunIs(r, 0, "cat \"$0\"\n"), "a script without a last newline gets one", Describe(r));
    std::string longer = "cat \"$0\"\n";
    while (longer.size() <= 4096) longer += "# " + std::string(60, 'x') + " \\ \t\n";
    r = s.Run(longer, "", "", 10000);
    Check(RunIs(r, 0, longer), "a 4 KiB script, by bytes, exact", Describe(r).substr(0, 300));
    std::string with_nul = "tr -dc '\\000' <\"$0\" | wc -c\n#";
    with_nul += '\0';
    with_nul += "\n";
    r = s.Run(with_nul, "", "", 10000);
    Check(RunIs(r, 0, "1\n"), "a script with a NUL byte goes by bytes", Describe(r));
    r = s.Run("exit 3", "", "", 10000);
    Check(RunIs(r, 3, ""), "no output: the exit code still arrives", Describe(r));
  }
  r = s.Run("kill -9 $$", "", "", 10000);
  Check(r.ok() && r->exit_code == 137, "a script killed by a signal is 128+9", Describe(r));

  std::cout << "== 5 MB of binary data through stdin and stdout\n";
  {
    std::string big(5 * 1024 * 1024, '\0');
    std::mt19937 rng(42);
    for (auto& c : big) c = static_cast<char>(rng());
    t0 = Clock::now();
    r = s.Run("cat", big, "", 60000);
    const double ms = MsSince(t0);
    Check(r.ok() && r->exit_code == 0 && r->out == big, "5 MB echoed back byte for byte",
          r.ok() ? "rc " + std::to_string(r->exit_code) + ", " + std::to_string(r->out.size()) +
                       " bytes, equal " + std::to_string(r->out == big)
                 : r.status().message());
    std::cout << "5 MB in and out: " << ms << " ms\n";
    r = s.Run("sha256sum | cut -c1-64", big, "", 60000);
    Check(RunIs(r, 0, prov::Sha256Hex(big) + "\n"), "the node sees the same 5 MB (sha256)",
          Describe(r));
    t0 = Clock::now();
    r = s.Run("head -c 5242880 /dev/urandom | tee " + dir + "/big.out | sha256sum | cut -c1-64", "",
              "", 60000);
    if (r.ok() && r->exit_code == 0) {
      auto copy = s.Run("cat " + dir + "/big.out", "", "", 60000);
      Check(copy.ok() && copy->out.size() == 5242880 && prov::Sha256Hex(copy->out) + "\n" == r->out,
            "5 MB of random stdout arrives whole", Describe(copy).substr(0, 300));
      std::cout << "5 MB out: " << MsSince(t0) << " ms (two runs)\n";
    } else {
      Check(false, "5 MB of random stdout", Describe(r));
    }
    std::filesystem::remove(dir + "/big.out");
  }

  std::cout << "== background processes do not hold the task\n";
  t0 = Clock::now();
  r = s.Run("sleep 60 & echo $!", "", "", 20000);
  const double bg_ms = MsSince(t0);
  Check(r.ok() && r->exit_code == 0 && !r->out.empty() && bg_ms < 10000,
        "a task that leaves a process with its stdout open returns", Describe(r));
  if (r.ok() && !r->out.empty()) {
    std::string pid = r->out.substr(0, r->out.find('\n'));
    auto k = s.Run("kill " + pid + " && echo killed", "", "", 10000);
    Check(RunIs(k, 0, "killed\n"), "the next task runs while it lives (and stops it)", Describe(k));
  }

  std::cout << "== become_user\n";
  r = s.Run("id -un", "", "nobody", 10000);
  Check(RunIs(r, 0, "nobody\n"), "become nobody", Describe(r));
  r = s.Run("id -un; cat", "as nobody", "nobody", 10000);
  Check(RunIs(r, 0, "nobody\nas nobody"), "become nobody again, same worker, with input",
        Describe(r));
  r = s.Run("id -un", "", "", 10000);
  Check(RunIs(r, 0, "root\n"), "the login user's worker is still root", Describe(r));
  r = s.Run("id -un", "", "root", 10000);
  Check(RunIs(r, 0, "root\n"), "become the login user", Describe(r));
  r = s.Run("id -un", "", "no-such-user-xyz", 10000);
  Check(r.ok() && r->exit_code != 0 && r->err.find("no-such-user-xyz") != std::string::npos,
        "an unknown become_user fails the task and names the user", Describe(r));
  r = s.Run("id -un", "", "bad'user", 10000);
  Check(!r.ok() && r.status().code() == Code::kInvalid, "a user name with a quote is refused",
        Describe(r));
  Check(s.alive(), "the session survives a failed become");

  std::cout << "== timeout kills the task, the next run works\n";
  {
    const std::string pidfile = dir + "/timeout.pid";
    std::filesystem::remove(pidfile);
    t0 = Clock::now();
    r = s.Run("echo $$ >" + pidfile + "; exec sleep 60", "", "", 700);
    const double ms = MsSince(t0);
    Check(r.ok() && r->timed_out && r->exit_code == -1, "a task past its timeout is timed_out",
          Describe(r));
    Check(ms < 6000, "the timeout returns promptly", std::to_string(ms) + " ms");
    std::cout << "timeout 700 ms returned after " << ms << " ms\n";
    // The killed sleep may stay a zombie until its reaper runs: wait (bounded)
    // until /proc shows it gone or a zombie.
    auto gone = s.Run(
        "p=$(cat " + pidfile +
            ") || exit 2\n"
            "for i in $(seq 100); do st=$(cut -d' ' -f3 /proc/$p/stat 2>/dev/null) || break; "
            "[ \"$st\" = Z ] && break; sleep 0.05; done\n"
            "st=$(cut -d' ' -f3 /proc/$p/stat 2>/dev/null) && [ \"$st\" != Z ] && echo running "
            "|| echo gone",
        "", "", 15000);
    Check(RunIs(gone, 0, "gone\n"), "the timed-out task was killed, the next run works",
          Describe(gone));
    std::filesystem::remove(pidfile);
    r = s.Run("sleep 60", "", "nobody", 500);
    Check(r.ok() && r->timed_out, "a timeout as nobody", Describe(r));
    r = s.Run("id -un", "", "nobody", 10000);
    Check(RunIs(r, 0, "nobody\n"), "a new worker as nobody after the timeout", Describe(r));
  }

  std::cout << "== per-run latency over one session\n";
  {
    const int n = 100;
    bool all_ok = true;
    std::string bad;
    std::vector<double> each;
    t0 = Clock::now();
    for (int i = 0; i < n; ++i) {
      auto one = Clock::now();
      auto x = s.Run("echo " + std::to_string(i), "", "", 10000);
      each.push_back(MsSince(one));
      if (!RunIs(x, 0, std::to_string(i) + "\n")) {
        all_ok = false;
        bad = Describe(x);
      }
    }
    const double total = MsSince(t0);
    Check(all_ok, std::to_string(n) + " sequential runs", bad);
    std::sort(each.begin(), each.end());
    std::cout << "mean per-Run latency: " << total / n << " ms over " << n << " runs (min "
              << each.front() << ", median " << each[n / 2] << ", p90 " << each[n * 9 / 10]
              << ", max " << each.back() << " ms)\n";
  }

  std::cout << "== parallel sessions in threads\n";
  {
    std::vector<std::future<std::string>> jobs;
    for (const Target* t : {&t1, &t2, &t3}) {
      jobs.push_back(std::async(std::launch::async, [t, &key]() -> std::string {
        auto c = SshSession::Connect(Endpoint(*t, t->host_key), key);
        if (!c.ok()) return t->name + ": " + c.status().message();
        for (int i = 0; i < 30; ++i) {
          auto x = (*c)->Run("echo " + t->name + " " + std::to_string(i), "", "", 10000);
          if (!RunIs(x, 0, t->name + " " + std::to_string(i) + "\n"))
            return t->name + ": " + Describe(x);
        }
        return "";
      }));
    }
    std::string errors;
    for (auto& j : jobs) errors += j.get();
    Check(errors.empty(), "three sessions, 30 runs each, in three threads", errors);
  }

  std::cout << "== host key checks\n";
  {
    auto bad = SshSession::Connect(Endpoint(t1, t2.host_key), key);
    Check(!bad.ok() && bad.status().code() == Code::kForbidden,
          "a wrong pinned host key is kForbidden", bad.ok() ? "connected" : bad.status().message());
    if (!bad.ok()) {
      const std::string& m = bad.status().message();
      std::cout << "host key message: " << m << "\n";
      size_t first = m.find("SHA256:");
      Check(m.find("host key changed") != std::string::npos && first != std::string::npos &&
                m.find("SHA256:", first + 7) != std::string::npos &&
                m.find("t1") != std::string::npos &&
                m.find("--host-key '" + t1.host_key + "'") != std::string::npos,
            "the message names the node, both fingerprints and how to accept the key", m);
    }
    auto fresh = SshSession::Connect(Endpoint(t2, ""), key);
    Check(fresh.ok(), "connect to t2 with no pinned key",
          fresh.ok() ? "" : fresh.status().message());
    if (fresh.ok()) {
      Check((*fresh)->pinned_now(), "pinned_now() is true");
      auto file = prov::ReadFile(dir + "/t2/ssh_host_ed25519_key.pub");
      std::istringstream words(file.ok() ? *file : "");
      std::string type, b64;
      words >> type >> b64;
      Check((*fresh)->host_key() == type + " " + b64, "host_key() equals t2's host key file",
            (*fresh)->host_key() + " vs " + type + " " + b64);
    }
  }

  std::cout << "== authentication\n";
  {
    auto denied = SshSession::Connect(Endpoint(t1, t1.host_key), other_key);
    Check(!denied.ok() && denied.status().code() == Code::kForbidden &&
              denied.status().message().find("t1") != std::string::npos &&
              denied.status().message().find("root") != std::string::npos,
          "a key the node does not accept is kForbidden naming node and user",
          denied.ok() ? "connected" : denied.status().message());
    if (!denied.ok()) std::cout << "auth message: " << denied.status().message() << "\n";
  }

  std::cout << "== unreachable\n";
  {
    Target closed{"t-closed", ClosedPort(), t1.host_key};
    t0 = Clock::now();
    auto none = SshSession::Connect(Endpoint(closed, closed.host_key), key);
    const double ms = MsSince(t0);
    const std::string addr = "127.0.0.1:" + std::to_string(closed.port);
    Check(!none.ok() && none.status().code() == Code::kUnavailable &&
              none.status().message().find("t-closed") != std::string::npos &&
              none.status().message().find(addr) != std::string::npos,
          "a closed port is kUnavailable naming node and address",
          none.ok() ? "connected" : none.status().message());
    Check(ms < 3000, "and fails fast", std::to_string(ms) + " ms");
    if (!none.ok()) std::cout << "unreachable message: " << none.status().message() << "\n";
  }

  std::cout << "== sshd killed mid-task\n";
  {
    auto c3 = SshSession::Connect(Endpoint(t3, t3.host_key), key);
    Check(c3.ok(), "connect to t3", c3.ok() ? "" : c3.status().message());
    if (c3.ok()) {
      SshSession& s3 = **c3;
      Check(RunIs(s3.Run("echo up", "", "", 10000), 0, "up\n"), "t3 runs a task");
      const std::string marker = dir + "/t3.started";
      std::filesystem::remove(marker);
      auto task = std::async(std::launch::async, [&] {
        auto start = Clock::now();
        auto x = s3.Run("touch " + marker + "; sleep 60", "", "", 30000);
        return std::make_pair(std::move(x), MsSince(start));
      });
      // Bounded wait for the task to start on the node.
      auto until = Clock::now() + std::chrono::seconds(10);
      while (!std::filesystem::exists(marker) && Clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      Check(std::filesystem::exists(marker), "the long task started");
      const std::string crash = "bash '" + fixture + "' crash '" + dir + "' t3";
      Check(std::system(crash.c_str()) == 0, "crash t3 (sshd and its connections)");
      auto [x, ms] = task.get();
      Check(!x.ok() && x.status().code() == Code::kUnavailable &&
                x.status().message().find("t3") != std::string::npos,
            "the running task ends kUnavailable naming the node", Describe(x));
      Check(ms < 20000, "well before its timeout", std::to_string(ms) + " ms");
      Check(!s3.alive(), "alive() is false");
      auto again = s3.Run("echo", "", "", 1000);
      Check(!again.ok() && again.status().code() == Code::kUnavailable,
            "a later run is kUnavailable at once", Describe(again));
      if (!x.ok()) std::cout << "broken message: " << x.status().message() << "\n";
      std::filesystem::remove(marker);
    }
  }

  std::cout << (failures ? "FAILED: " + std::to_string(failures) + " checks\n" : "all passed\n");
  return failures ? 1 : 0;
}
