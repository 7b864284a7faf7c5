#include "configure/ssh_client.h"

#include <libssh/libssh.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <sstream>
#include <vector>

#include "base/file_util.h"
#include "configure/libssh_ptr.h"

namespace prov {
namespace {

using SteadyTime = std::chrono::steady_clock;

// libssh's global state (its crypto backend) is set up once per process,
// whichever thread connects first.
void InitLibssh() {
  static std::once_flag once;
  std::call_once(once, [] { ssh_init(); });
}

// The worker: a POSIX shell loop on the node, one per become-user, reading
// requests from its stdin (the channel) and answering on its stdout.
//   hello:    "provision-worker 3 PID PGID TMPDIR\n"
//   request:  "NONCE b SCRIPT_BYTES INPUT_BYTES\n" SCRIPT INPUT
//         or  "NONCE l SCRIPT_LINES INPUT_BYTES\n" SCRIPT INPUT
//   reply:    OUT "\nNONCE\n" ERR "\nNONCE\n" META "\nNONCE RC\n"
// NONCE is 32 random hex digits per request, known only to the client and
// the worker's shell variables (not to the script), so the delimiters cannot
// occur in the outputs and the reply needs no sizes: one `cat` sends it.
// The script runs with stdin, stdout, stderr and fd 3 on files, so a daemon
// it starts cannot hold the channel open, and outputs are binary-safe. Each
// task writes new files (o1, o2, ...): a daemon left from an earlier task
// writes into a file nobody reads again. They are emptied at once and
// removed every 100 tasks.
// What a task costs on the node is its processes (each a fork and an exec,
// about a millisecond on a busy node): `sh` always; `head` for a script sent
// by bytes ("b") and for input; `cat` when the task printed anything. A short
// text script comes by lines ("l", see kLineScriptMax), read by the shell's
// own `read`, and a task that printed nothing is answered by `printf`, so
// `true` costs one process. The script is written to a file by the
// built-in printf, never put on a command line (other users on the node see
// command lines).
// `head -c` is GNU coreutils' (reads no more than asked from a pipe); `read`
// takes a line a byte at a time, as POSIX shells do on pipes.
// No single quote in here: the whole loop is passed as sh -c '...'.
constexpr const char* kWorkerLoop =
    R"(d=$(mktemp -d "${TMPDIR:-/tmp}/provision-worker.XXXXXXXX") || exit 111
trap "rm -rf $d" EXIT
trap "exit 129" HUP
trap "exit 143" TERM
cd "$HOME" 2>/dev/null || cd /
read -r _ _ _ _ g _ </proc/$$/stat
echo "provision-worker 3 $$ $g $d"
k=0
while read -r n m s i; do
  if [ "$m" = l ]; then
    t=
    while [ "$s" -gt 0 ]; do
      IFS= read -r l || exit 112
      t="$t$l
"
      s=$((s - 1))
    done
    printf %s "$t" >"$d/s"
  else
    head -c "$s" >"$d/s" || exit 112
  fi
  f=/dev/null
  if [ "$i" -gt 0 ]; then f="$d/i"; head -c "$i" >"$f" || exit 112; fi
  k=$((k + 1))
  sh "$d/s" <"$f" >"$d/o$k" 2>"$d/e$k" 3>"$d/m$k"
  r=$?
  if [ -s "$d/o$k" ] || [ -s "$d/e$k" ] || [ -s "$d/m$k" ]; then
    printf "\n%s\n" "$n" >"$d/x"
    printf "\n%s %s\n" "$n" "$r" >"$d/y"
    cat "$d/o$k" "$d/x" "$d/e$k" "$d/x" "$d/m$k" "$d/y"
    : >"$d/o$k"; : >"$d/e$k"; : >"$d/m$k"
  else
    printf "\n%s\n\n%s\n\n%s %s\n" "$n" "$n" "$n" "$r"
  fi
  [ "$i" -eq 0 ] || : >"$f"
  [ $((k % 100)) -ne 0 ] || rm -f "$d"/[oem][0-9]*
done
)";

// Scripts up to this size, without NUL bytes, go by lines: the shell's
// `read` takes a byte per system call, which for a short script costs less
// than starting `head`; a long one is cheaper through `head`.
constexpr size_t kLineScriptMax = 2048;

constexpr size_t kStderrKeep = 4096;  // of the worker's own stderr, for messages
// While a task runs quietly, a keepalive every kKeepaliveMs; data unacknowledged
// for kDeadPeerMs (TCP_USER_TIMEOUT) breaks the session.
constexpr int kKeepaliveMs = 10000;
constexpr unsigned kDeadPeerMs = 30000;

// The command that runs `inner` (no single quotes in it) with /bin/sh as
// `become` ("" = the login user).
std::string AsUser(const std::string& login_user, const std::string& become,
                   const std::string& inner) {
  const std::string sh = "sh -c '" + inner + "'";
  if (become.empty()) return "exec " + sh;
  if (login_user == "root") return "exec runuser -u " + become + " -- " + sh;
  return "exec sudo -n -u " + become + " -- " + sh;
}

std::vector<std::string> Words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

bool ParseU64(const std::string& s, uint64_t& out) {
  if (s.empty() || s.size() > 19 || !std::all_of(s.begin(), s.end(), ::isdigit)) return false;
  out = std::stoull(s);
  return true;
}

// "SHA256:..." of a key given as its type and base64 blob.
std::string Fingerprint(ssh_key key) {
  unsigned char* hash = nullptr;
  size_t len = 0;
  if (ssh_get_publickey_hash(key, SSH_PUBLICKEY_HASH_SHA256, &hash, &len) != 0)
    return "(no fingerprint)";
  char* fp = ssh_get_fingerprint_hash(SSH_PUBLICKEY_HASH_SHA256, hash, len);
  ssh_clean_pubkey_hash(&hash);
  std::string out = fp ? fp : "(no fingerprint)";
  ssh_string_free_char(fp);
  return out;
}

std::string FingerprintOf(const std::string& type, const std::string& b64) {
  ssh_key raw = nullptr;
  if (ssh_pki_import_pubkey_base64(b64.c_str(), ssh_key_type_from_name(type.c_str()), &raw) !=
      SSH_OK)
    return "(unreadable key)";
  KeyPtr key(raw);
  return Fingerprint(key.get());
}

// Host key algorithms with the pinned key's type first, so a node with
// several host keys shows the one we pinned.
std::string HostKeyAlgorithms(const std::string& pinned_type) {
  std::vector<std::string> order;
  if (pinned_type == "ssh-rsa") {
    order = {"rsa-sha2-512", "rsa-sha2-256"};
  } else if (!pinned_type.empty()) {
    order = {pinned_type};
  }
  for (const char* a : {"ssh-ed25519", "ecdsa-sha2-nistp521", "ecdsa-sha2-nistp384",
                        "ecdsa-sha2-nistp256", "rsa-sha2-512", "rsa-sha2-256"}) {
    if (std::find(order.begin(), order.end(), a) == order.end()) order.push_back(a);
  }
  std::string out;
  for (const auto& a : order) out += (out.empty() ? "" : ",") + a;
  return out;
}

Status Unavailable(std::string m) {
  return Status::Error(Code::kUnavailable, std::move(m));
}
Status Forbidden(std::string m) {
  return Status::Error(Code::kForbidden, std::move(m));
}

}  // namespace

bool ValidUserName(const std::string& u) {
  if (u.empty() || u.size() > 64 || u[0] == '-') return false;
  return std::all_of(u.begin(), u.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '-' || c == '.';
  });
}

// One shell worker: its channel and what it told us about itself.
struct Worker {
  ChannelPtr channel;
  std::string buffer;       // bytes read from its stdout, not consumed yet
  std::string stderr_tail;  // the last bytes of its own stderr
  std::string pgid;         // its process group on the node
  std::string dir;          // its temporary directory on the node
};

struct SshSession::Impl {
  SshEndpoint endpoint;
  std::string address;  // host:port, for messages
  SessionPtr session;   // declared before the workers: they are freed first
  std::string host_key;
  bool pinned_now = false;
  bool alive = true;
  std::string broken_reason;
  std::map<std::string, std::unique_ptr<Worker>> workers;  // by become-user, "" = login user

  std::string Where() const { return "node " + endpoint.node + " (" + address + ")"; }

  enum class Read { kOk, kTimeout, kEnded, kBroken };

  static int RemainingMs(SteadyTime::time_point deadline) {
    if (deadline == SteadyTime::time_point::max()) return -1;
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyTime::now());
    return static_cast<int>(std::max<int64_t>(0, ms.count()));
  }

  // sshd does not set TCP_NODELAY on sessions without a terminal, so a
  // reply that leaves it in several small segments waits, segment by
  // segment, for our ACK of the one before (Nagle); an ACK we delay (up to
  // 40 ms on Linux) would stall it. Quick ACKs while a reply is awaited.
  // Not sticky in the kernel, hence before each read.
  void QuickAck() {
#ifdef TCP_QUICKACK
    int fd = ssh_get_fd(session.get());
    int one = 1;
    if (fd >= 0) setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one);
#endif
  }

  // Keeps what the worker says on its stderr (sudo refusing, a shell error).
  void DrainStderr(Worker& w) {
    char buf[4096];
    for (;;) {
      int n = ssh_channel_read_nonblocking(w.channel.get(), buf, sizeof buf, 1);
      if (n <= 0) break;
      w.stderr_tail.append(buf, n);
    }
    if (w.stderr_tail.size() > kStderrKeep)
      w.stderr_tail.erase(0, w.stderr_tail.size() - kStderrKeep);
  }

  // Reads more of the worker's stdout into its buffer.
  Read Fill(Worker& w, SteadyTime::time_point deadline) {
    char buf[64 * 1024];
    for (;;) {
      QuickAck();
      const int remaining = RemainingMs(deadline);
      const int slice = remaining < 0 ? kKeepaliveMs : std::min(remaining, kKeepaliveMs);
      int n = ssh_channel_read_timeout(w.channel.get(), buf, sizeof buf, 0, slice);
      if (n > 0) {
        w.buffer.append(buf, n);
        DrainStderr(w);
        return Read::kOk;
      }
      if (n == SSH_ERROR || !ssh_is_connected(session.get())) return Read::kBroken;
      DrainStderr(w);
      if (ssh_channel_is_eof(w.channel.get()) || ssh_channel_is_closed(w.channel.get()))
        return Read::kEnded;
      if (remaining == 0 || RemainingMs(deadline) == 0) return Read::kTimeout;
      // A long quiet task: send the node something now and then, so
      // a node that vanished without a word (power loss) fails the socket
      // within kDeadPeerMs instead of never.
      if (slice == kKeepaliveMs) ssh_send_ignore(session.get(), "");
    }
  }

  // Reads up to and including the next "\n"; `line` gets it without.
  Read ReadLine(Worker& w, SteadyTime::time_point deadline, std::string& line) {
    size_t scanned = 0;
    for (;;) {
      size_t nl = w.buffer.find('\n', scanned);
      if (nl != std::string::npos) {
        line = w.buffer.substr(0, nl);
        w.buffer.erase(0, nl + 1);
        return Read::kOk;
      }
      scanned = w.buffer.size();
      if (scanned > 4096) return Read::kEnded;  // not our protocol
      Read r = Fill(w, deadline);
      if (r != Read::kOk) return r;
    }
  }

  // Reads until the buffer holds the reply's end, "\nNONCE RC\n"; `end` is
  // the offset of its "\n". Scans only what arrived since the last look.
  Read ReadReply(Worker& w, SteadyTime::time_point deadline, const std::string& nonce,
                 size_t& end) {
    const std::string marker = "\n" + nonce + " ";
    size_t from = 0;
    for (;;) {
      size_t at = w.buffer.find(marker, from);
      if (at != std::string::npos) {
        size_t nl = w.buffer.find('\n', at + marker.size());
        if (nl != std::string::npos) {
          end = at;
          return Read::kOk;
        }
        from = at;
      } else if (w.buffer.size() >= marker.size()) {
        from = w.buffer.size() - marker.size() + 1;
      }
      Read r = Fill(w, deadline);
      if (r != Read::kOk) return r;
    }
  }

  Status MarkBroken(const std::string& what) {
    const char* err = ssh_get_error(session.get());
    broken_reason = what + (err && *err ? std::string(": ") + err : "");
    alive = false;
    workers.clear();
    return Unavailable(Where() + ": " + broken_reason);
  }

  // What the worker said on stderr, and its exit status, for messages.
  std::string WorkerEndDetail(Worker& w) {
    DrainStderr(w);
    std::string out;
    int status = ssh_channel_get_exit_status(w.channel.get());
    if (status >= 0) out += " (exit status " + std::to_string(status) + ")";
    std::string err = w.stderr_tail;
    while (!err.empty() && (err.back() == '\n' || err.back() == '\r')) err.pop_back();
    if (!err.empty()) out += ": " + err;
    return out;
  }

  // Opens a channel that runs `command`; nullptr when the session failed.
  ChannelPtr Exec(const std::string& command) {
    ChannelPtr ch(ssh_channel_new(session.get()));
    if (!ch) return nullptr;
    if (ssh_channel_open_session(ch.get()) != SSH_OK) return nullptr;
    if (ssh_channel_request_exec(ch.get(), command.c_str()) != SSH_OK) return nullptr;
    return ch;
  }

  // Closes a worker whose task ran out of time and kills what it ran: its
  // process group, from a fresh channel (the worker's own stdin is busy with
  // nothing; it is waiting for the script). False when the session is gone.
  bool KillWorker(const std::string& who, std::unique_ptr<Worker> w) {
    std::string pgid = w->pgid, dir = w->dir;
    w.reset();  // closes its channel; the node sees EOF on the worker's stdin
    uint64_t g = 0;
    if (!ParseU64(pgid, g) || g <= 1) return ssh_is_connected(session.get());
    std::string inner = "kill -9 -" + pgid + " 2>/dev/null; rm -rf " + dir;
    ChannelPtr ch = Exec(AsUser(endpoint.user, who, inner));
    if (!ch) return false;
    // Wait (bounded) for it to finish, so the next task starts after the kill.
    const auto deadline =
        SteadyTime::now() + std::chrono::milliseconds(endpoint.connect_timeout_ms);
    char buf[256];
    while (!ssh_channel_is_eof(ch.get()) && SteadyTime::now() < deadline) {
      int n = ssh_channel_read_timeout(ch.get(), buf, sizeof buf, 0, RemainingMs(deadline));
      if (n == SSH_ERROR) return false;
    }
    return ssh_is_connected(session.get());
  }
};

SshSession::SshSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SshSession::~SshSession() = default;

const std::string& SshSession::node() const {
  return impl_->endpoint.node;
}
const std::string& SshSession::host_key() const {
  return impl_->host_key;
}
bool SshSession::pinned_now() const {
  return impl_->pinned_now;
}
bool SshSession::alive() const {
  return impl_->alive && ssh_is_connected(impl_->session.get());
}

Result<std::unique_ptr<SshSession>> SshSession::Connect(const SshEndpoint& endpoint,
                                                        const std::string& key_path) {
  InitLibssh();
  auto impl = std::make_unique<Impl>();
  impl->endpoint = endpoint;
  impl->address = endpoint.host + ":" + std::to_string(endpoint.port);
  const std::string where = impl->Where();
  impl->session.reset(ssh_new());
  ssh_session s = impl->session.get();
  if (!s) return Status::Internal(where + ": cannot create an SSH session");

  const auto pinned = Words(endpoint.pinned_host_key);
  if (!endpoint.pinned_host_key.empty() && pinned.size() < 2)
    return Status::Invalid(where + ": the pinned host key '" + endpoint.pinned_host_key +
                           "' is not 'TYPE BASE64'");

  // Our own known-hosts check below; nothing from ~/.ssh.
  const int port = endpoint.port;
  const long timeout_s = std::max(0, endpoint.connect_timeout_ms) / 1000;
  const long timeout_us = (std::max(0, endpoint.connect_timeout_ms) % 1000) * 1000;
  const int no = 0, yes = 1;
  const std::string host_algos = HostKeyAlgorithms(pinned.empty() ? "" : pinned[0]);
  bool ok = ssh_options_set(s, SSH_OPTIONS_PROCESS_CONFIG, &no) == SSH_OK &&
            ssh_options_set(s, SSH_OPTIONS_HOST, endpoint.host.c_str()) == SSH_OK &&
            ssh_options_set(s, SSH_OPTIONS_PORT, &port) == SSH_OK &&
            ssh_options_set(s, SSH_OPTIONS_USER, endpoint.user.c_str()) == SSH_OK &&
            ssh_options_set(s, SSH_OPTIONS_TIMEOUT, &timeout_s) == SSH_OK &&
            ssh_options_set(s, SSH_OPTIONS_TIMEOUT_USEC, &timeout_us) == SSH_OK &&
            ssh_options_set(s, SSH_OPTIONS_STRICTHOSTKEYCHECK, &no) == SSH_OK &&
            ssh_options_set(s, SSH_OPTIONS_KNOWNHOSTS, "/dev/null") == SSH_OK &&
            ssh_options_set(s, SSH_OPTIONS_GLOBAL_KNOWNHOSTS, "/dev/null") == SSH_OK &&
            ssh_options_set(s, SSH_OPTIONS_NODELAY, &yes) == SSH_OK &&
            ssh_options_set(s, SSH_OPTIONS_KEY_EXCHANGE,
                            "curve25519-sha256,curve25519-sha256@libssh.org") == SSH_OK &&
            ssh_options_set(s, SSH_OPTIONS_HOSTKEYS, host_algos.c_str()) == SSH_OK;
  if (!ok) return Status::Internal(where + ": cannot set SSH options: " + ssh_get_error(s));

  if (ssh_connect(s) != SSH_OK)
    return Unavailable(where + ": no SSH connection: " + ssh_get_error(s));

#ifdef TCP_USER_TIMEOUT
  if (int fd = ssh_get_fd(s); fd >= 0) {
    unsigned dead_ms = kDeadPeerMs;
    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &dead_ms, sizeof dead_ms);
  }
#endif

  ssh_key raw_server = nullptr;
  if (ssh_get_server_publickey(s, &raw_server) != SSH_OK)
    return Unavailable(where + ": no host key: " + ssh_get_error(s));
  KeyPtr server_key(raw_server);
  char* b64 = nullptr;
  if (ssh_pki_export_pubkey_base64(server_key.get(), &b64) != SSH_OK)
    return Status::Internal(where + ": cannot export the host key");
  const std::string offered_type = ssh_key_type_to_char(ssh_key_type(server_key.get()));
  const std::string offered_b64 = b64;
  ssh_string_free_char(b64);
  impl->host_key = offered_type + " " + offered_b64;

  if (pinned.empty()) {
    impl->pinned_now = true;
  } else if (pinned[0] != offered_type || pinned[1] != offered_b64) {
    return Forbidden("node " + endpoint.node + ": host key changed: pinned " +
                     FingerprintOf(pinned[0], pinned[1]) + ", offered " +
                     Fingerprint(server_key.get()) + " (provisionctl node set " + endpoint.node +
                     " --host-key '" + impl->host_key + "' to accept)");
  }

  if (!endpoint.authenticate) {
    impl->alive = false;
    impl->broken_reason = "connected only to see the host key";
    return std::unique_ptr<SshSession>(new SshSession(std::move(impl)));
  }
  if (!endpoint.password.empty()) {
    switch (ssh_userauth_password(s, nullptr, endpoint.password.c_str())) {
      case SSH_AUTH_SUCCESS:
        return std::unique_ptr<SshSession>(new SshSession(std::move(impl)));
      case SSH_AUTH_ERROR:
        return Unavailable(where + ": authentication failed: " + ssh_get_error(s));
      default:
        return Forbidden("node " + endpoint.node + ": " + endpoint.user + "@" + impl->address +
                         " refused the password (or does not take passwords over SSH)");
    }
  }
  ssh_key raw_private = nullptr;
  if (ssh_pki_import_privkey_file(key_path.c_str(), nullptr, nullptr, nullptr, &raw_private) !=
      SSH_OK)
    return Status::Internal("cannot read the control key " + key_path);
  KeyPtr private_key(raw_private);
  switch (ssh_userauth_publickey(s, nullptr, private_key.get())) {
    case SSH_AUTH_SUCCESS:
      break;
    case SSH_AUTH_ERROR:
      return Unavailable(where + ": authentication failed: " + ssh_get_error(s));
    default:
      return Forbidden("node " + endpoint.node + ": " + endpoint.user + "@" + impl->address +
                       " refused the control key " + key_path);
  }
  return std::unique_ptr<SshSession>(new SshSession(std::move(impl)));
}

Result<RemoteResult> SshSession::Run(const std::string& script, const std::string& input,
                                     const std::string& become_user, int timeout_ms) {
  Impl& m = *impl_;
  if (!m.alive) return Unavailable(m.Where() + ": session closed earlier: " + m.broken_reason);
  const std::string who =
      (become_user.empty() || become_user == m.endpoint.user) ? "" : become_user;
  if (!who.empty() && !ValidUserName(who))
    return Status::Invalid(m.Where() + ": '" + become_user + "' is not a user name");
  const auto deadline = timeout_ms > 0 ? SteadyTime::now() + std::chrono::milliseconds(timeout_ms)
                                       : SteadyTime::time_point::max();
  const std::string as = who.empty() ? m.endpoint.user : who;

  auto timed_out = [&](std::unique_ptr<Worker> w) -> Result<RemoteResult> {
    if (!m.KillWorker(who, std::move(w)))
      return m.MarkBroken("timed out after " + std::to_string(timeout_ms) +
                          " ms and the session broke");
    RemoteResult r;
    r.timed_out = true;
    r.exit_code = -1;
    r.err = "timed out after " + std::to_string(timeout_ms) + " ms on node " + m.endpoint.node;
    return r;
  };

  // The worker for this user, started on first use.
  auto it = m.workers.find(who);
  if (it == m.workers.end()) {
    auto w = std::make_unique<Worker>();
    w->channel = m.Exec(AsUser(m.endpoint.user, who, kWorkerLoop));
    if (!w->channel) return m.MarkBroken("cannot open a channel");
    std::string hello;
    switch (m.ReadLine(*w, deadline, hello)) {
      case Impl::Read::kOk:
        break;
      case Impl::Read::kTimeout:
        return timed_out(std::move(w));
      case Impl::Read::kBroken:
        return m.MarkBroken("session broke");
      case Impl::Read::kEnded: {
        // The node is there but will not run a shell as that user (sudo
        // asks for a password, no such user): the task fails, the node
        // stays reachable.
        RemoteResult r;
        r.exit_code = 1;
        int status = ssh_channel_get_exit_status(w->channel.get());
        if (status > 0) r.exit_code = status;
        r.err = "node " + m.endpoint.node + ": cannot run a shell as " + as +
                m.WorkerEndDetail(*w) + "\n";
        return r;
      }
    }
    auto words = Words(hello);
    if (words.size() != 5 || words[0] != "provision-worker" || words[1] != "3")
      return m.MarkBroken("the shell worker said '" + hello.substr(0, 200) +
                          "' instead of its greeting");
    w->pgid = words[3];
    w->dir = words[4];
    it = m.workers.emplace(who, std::move(w)).first;
  }
  Worker& w = *it->second;

  const std::string nonce = RandomHex(16);
  std::string request = nonce;
  request.reserve(64 + script.size() + input.size());
  const std::string input_bytes = std::to_string(input.size());
  if (script.size() <= kLineScriptMax && script.find('\0') == std::string::npos) {
    // By lines: a last line without its newline gets one (the same to sh).
    const size_t lines = std::count(script.begin(), script.end(), '\n') +
                         (script.empty() || script.back() == '\n' ? 0 : 1);
    request += " l " + std::to_string(lines) + " " + input_bytes + "\n";
    request += script;
    if (!script.empty() && script.back() != '\n') request += '\n';
  } else {
    request += " b " + std::to_string(script.size()) + " " + input_bytes + "\n";
    request += script;
  }
  request += input;
  int written = ssh_channel_write(w.channel.get(), request.data(), request.size());
  if (written == SSH_ERROR || !ssh_is_connected(m.session.get()))
    return m.MarkBroken("session broke while sending the task");
  if (static_cast<size_t>(written) != request.size()) {
    auto owned = std::move(it->second);
    m.workers.erase(it);
    return timed_out(std::move(owned));
  }

  auto fail = [&](Impl::Read r) -> Result<RemoteResult> {
    auto owned = std::move(it->second);
    m.workers.erase(it);
    if (r == Impl::Read::kTimeout) return timed_out(std::move(owned));
    if (r == Impl::Read::kBroken) return m.MarkBroken("session broke");
    // The worker ended mid-task: killed on the node (shutdown, OOM). Treat
    // the node as gone; the caller reconnects.
    return m.MarkBroken("the shell worker for " + as + " ended mid-task" +
                        m.WorkerEndDetail(*owned));
  };

  size_t end = 0;
  Impl::Read r = m.ReadReply(w, deadline, nonce, end);
  if (r != Impl::Read::kOk) return fail(r);
  // OUT "\nNONCE\n" ERR "\nNONCE\n" META "\nNONCE RC\n"
  const std::string sep = "\n" + nonce + "\n";
  const size_t out_end = w.buffer.find(sep);
  const size_t err_end = out_end == std::string::npos ? out_end : w.buffer.find(sep, out_end + 1);
  const size_t rc_at = end + 2 + nonce.size();
  const size_t rc_end = w.buffer.find('\n', rc_at);
  uint64_t rc = 0;
  if (err_end == std::string::npos || err_end > end ||
      !ParseU64(w.buffer.substr(rc_at, rc_end - rc_at), rc) || rc > 255) {
    const std::string tail = w.buffer.substr(0, 200);
    m.workers.erase(it);
    return m.MarkBroken("the shell worker for " + as + " answered '" + tail + "' (protocol error)");
  }
  RemoteResult result;
  result.exit_code = static_cast<int>(rc);
  result.out = w.buffer.substr(0, out_end);
  result.err = w.buffer.substr(out_end + sep.size(), err_end - out_end - sep.size());
  result.meta = w.buffer.substr(err_end + sep.size(), end - err_end - sep.size());
  w.buffer.erase(0, rc_end + 1);
  if (w.buffer.capacity() > (1 << 20)) w.buffer.shrink_to_fit();
  return result;
}

}  // namespace prov
