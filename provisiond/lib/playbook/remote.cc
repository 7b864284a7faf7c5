#include "playbook/remote.h"

#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
#include <vector>

#include "base/file_util.h"
#include "base/unique_fd.h"

namespace prov {
namespace {

std::string Errno(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

// A file descriptor closed on scope exit.
// An anonymous in-memory file: stdin and fd 3 are files rather than pipes,
// so a script that never reads its stdin cannot block us and the meta
// channel needs no reader while the script runs.
Result<int> MemFile(const char* name) {
  int fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) return Status::Internal(Errno("memfd_create"));
  return fd;
}

Status WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::Internal(Errno("write"));
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

std::string ReadFrom(int fd) {
  std::string out;
  char buf[65536];
  off_t off = 0;
  for (;;) {
    ssize_t n = pread(fd, buf, sizeof buf, off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    off += n;
  }
  return out;
}

std::string CurrentUser() {
  struct passwd pw, *res = nullptr;
  char buf[4096];
  if (getpwuid_r(geteuid(), &pw, buf, sizeof buf, &res) == 0 && res) return res->pw_name;
  return std::to_string(geteuid());
}

// Runs argv[0] (a path) with `input` on stdin, fd 3 collected, in its own
// process group, all of which is killed at the timeout. `env`: the whole
// environment ("NAME=value" entries); none, ours.
Result<RemoteResult> SpawnScript(std::vector<std::string> argv, const std::string& input,
                                 int timeout_ms,
                                 std::optional<std::vector<std::string>> env = std::nullopt) {
  // Built before fork: the child only execs.
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  std::vector<char*> cenv;
  if (env) {
    for (auto& e : *env) cenv.push_back(e.data());
    cenv.push_back(nullptr);
  }

  auto in = MemFile("remote-stdin");
  if (!in.ok()) return in.status();
  UniqueFd in_fd(*in);
  if (Status st = WriteAll(in_fd.get(), input); !st.ok()) return st;
  if (lseek(in_fd.get(), 0, SEEK_SET) < 0) return Status::Internal(Errno("lseek"));
  auto meta = MemFile("remote-meta");
  if (!meta.ok()) return meta.status();
  UniqueFd meta_fd(*meta);

  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return Status::Internal(Errno("pipe"));
  UniqueFd out_r(out_pipe[0]), out_w(out_pipe[1]);
  if (pipe2(err_pipe, O_CLOEXEC) != 0) return Status::Internal(Errno("pipe"));
  UniqueFd err_r(err_pipe[0]), err_w(err_pipe[1]);

  pid_t pid = fork();
  if (pid < 0) return Status::Internal(Errno("fork"));
  if (pid == 0) {
    setpgid(0, 0);
    // dup2 clears close-on-exec on the targets; everything else we opened
    // is close-on-exec.
    if (dup2(in_fd.get(), 0) < 0 || dup2(out_w.get(), 1) < 0 || dup2(err_w.get(), 2) < 0 ||
        dup2(meta_fd.get(), 3) < 0)
      _exit(126);
    sigset_t empty;
    sigemptyset(&empty);
    sigprocmask(SIG_SETMASK, &empty, nullptr);
    for (int sig = 1; sig < NSIG; ++sig) signal(sig, SIG_DFL);
    if (env)
      execve(cargv[0], cargv.data(), cenv.data());
    else
      execv(cargv[0], cargv.data());
    _exit(127);
  }
  setpgid(pid, pid);  // also here: no race with the kill below
  out_w.reset();
  err_w.reset();

  RemoteResult result;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  bool out_open = true, err_open = true, exited = false;
  int wstatus = 0;
  char buf[65536];
  while (out_open || err_open || !exited) {
    if (!exited) {
      pid_t w = waitpid(pid, &wstatus, WNOHANG);
      if (w == pid) exited = true;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) {
      if (!exited) {
        result.timed_out = true;
        kill(-pid, SIGTERM);
        kill(pid, SIGTERM);
        // A short grace, then the whole group goes.
        for (int i = 0; i < 50 && waitpid(pid, &wstatus, WNOHANG) == 0; ++i) usleep(10000);
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        waitpid(pid, &wstatus, 0);
        exited = true;
      }
      // Exited but something it started still holds the output open: stop
      // reading; that process keeps running.
      break;
    }
    if (!out_open && !err_open) {
      // Output closed, the shell still running: wait for it in short steps.
      usleep(2000);
      continue;
    }
    pollfd fds[2];
    int n = 0;
    if (out_open) fds[n++] = {out_r.get(), POLLIN, 0};
    if (err_open) fds[n++] = {err_r.get(), POLLIN, 0};
    int wait_ms = static_cast<int>(std::min<long long>(left, exited ? left : 50));
    int rc = poll(fds, n, wait_ms);
    if (rc < 0 && errno != EINTR) return Status::Internal(Errno("poll"));
    for (int i = 0; i < n && rc > 0; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      bool is_out = fds[i].fd == out_r.get();
      if (got <= 0) {
        (is_out ? out_open : err_open) = false;
      } else {
        (is_out ? result.out : result.err).append(buf, static_cast<size_t>(got));
      }
    }
  }
  if (result.timed_out)
    result.exit_code = -1;
  else if (WIFEXITED(wstatus))
    result.exit_code = WEXITSTATUS(wstatus);
  else if (WIFSIGNALED(wstatus))
    result.exit_code = 128 + WTERMSIG(wstatus);
  result.meta = ReadFrom(meta_fd.get());
  return result;
}

// ChrootRemote's setup, run by this machine's /bin/sh in the new mount
// namespace (which unshare made private: no mount here propagates back):
// $1 the tree, $2 the user, $3 the script. The mounts are made by this
// machine's mount and the tree entered by its chroot, so the tree needs
// nothing but /bin/sh (and runuser for another user). A mount point that is
// a symbolic link is refused: mount would follow it out of the tree, and
// the tree's own path would stay unmounted.
constexpr const char* kImageStageSetup = R"SH(
root=$1 user=$2 script=$3
fail() { echo "provisiond: image root $root: $*" >&2; exit 125; }
case $root in /*) ;; *) fail "not an absolute path" ;; esac
[ -d "$root" ] || fail "not a directory"
[ "$root" -ef / ] && fail "is this machine's root"
[ -e "$root/bin/sh" ] || [ -L "$root/bin/sh" ] || fail "has no /bin/sh (not a root file system)"
for d in proc:0555 sys:0555 dev:0755 tmp:1777 run:0755; do
  p=$root/${d%:*}
  [ -L "$p" ] && fail "/${d%:*} is a symbolic link"
  [ -d "$p" ] || mkdir -m "${d#*:}" "$p" || fail "cannot create /${d%:*}"
done
mount -t proc proc "$root/proc" || fail "cannot mount proc on /proc"
for d in sys dev; do
  { mount --rbind "/$d" "$root/$d" && mount --make-rslave "$root/$d"; } || fail "cannot bind /$d"
done
# Fresh and empty: nothing a task writes there ends in the image. An empty
# /run also keeps the image's daemons from starting: with no
# /run/systemd/system, invoke-rc.d and deb-systemd-invoke (apt's
# maintainer scripts) leave services alone, and systemctl reaches no
# systemd of this machine.
mount -t tmpfs -o nosuid,nodev,mode=1777 tmpfs "$root/tmp" || fail "cannot mount a tmpfs on /tmp"
mount -t tmpfs -o nosuid,nodev,mode=0755 tmpfs "$root/run" || fail "cannot mount a tmpfs on /run"
if [ -d "$root/dev/shm" ] && ! [ -L "$root/dev/shm" ]; then
  mount -t tmpfs -o nosuid,nodev,mode=1777 tmpfs "$root/dev/shm" || fail "cannot mount a tmpfs on /dev/shm"
fi
# Name resolution for apt: our resolv.conf, read-only (a task writing it
# must not write this machine's), over the tree's own file; where the
# tree's is a link into /run (systemd-resolved), a copy in the fresh /run.
rc=$root/etc/resolv.conf
if [ -f /etc/resolv.conf ]; then
  if [ -L "$rc" ]; then
    t=$(readlink "$rc")
    case $t in ../run/*) t=${t#..} ;; esac
    case $t in
      *..*) ;;
      /run/?*) { mkdir -p "$root${t%/*}" && cat /etc/resolv.conf >"$root$t"; } || fail "cannot write $t" ;;
    esac
  elif [ -f "$rc" ]; then
    { mount --bind /etc/resolv.conf "$rc" && mount -o remount,bind,ro "$rc"; } || fail "cannot bind /etc/resolv.conf"
  fi
fi
# A command of this machine's (ansible-playbook, with its chroot
# connection) runs in these mounts instead of a script in the tree.
if [ "$user" = "--exec" ]; then shift 3; exec "$@"; fi
if [ -z "$user" ] || [ "$user" = root ]; then exec chroot "$root" /bin/sh -c "$script"; fi
exec chroot "$root" runuser -u "$user" -- /bin/sh -c "$script"
)SH";

// The daemon's environment for a script in the tree: PATH of the tree's
// usual places, root's HOME, messages untranslated, apt without questions.
// TMPDIR names a folder of this machine the tree lacks.
std::vector<std::string> ImageStageEnv() {
  static const std::vector<std::string> kSet = {
      "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "LC_ALL=C",
      "DEBIAN_FRONTEND=noninteractive"};
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    bool replaced = name == "TMPDIR";
    for (const auto& s : kSet)
      replaced = replaced || s.compare(0, name.size() + 1, name + "=") == 0;
    if (!replaced) env.push_back(std::move(entry));
  }
  env.insert(env.end(), kSet.begin(), kSet.end());
  return env;
}

}  // namespace

Result<RemoteResult> LocalRemote::Run(const std::string& script, const std::string& input,
                                      const std::string& become_user, int timeout_ms) {
  // The program: /bin/sh itself, or through runuser (we are root) or sudo.
  std::vector<std::string> argv;
  if (!become_user.empty() && become_user != CurrentUser()) {
    if (geteuid() == 0)
      argv = {"/usr/sbin/runuser", "-u", become_user, "--"};
    else
      // sudo closes descriptors above 2 unless told; -C 4 keeps fd 3, which
      // needs "closefrom_override" in sudoers for the login user.
      argv = {"/usr/bin/sudo", "-n", "-C", "4", "-u", become_user, "--"};
  }
  argv.insert(argv.end(), {"/bin/sh", "-c", script});
  return SpawnScript(std::move(argv), input, timeout_ms);
}

std::vector<std::string> ImageStageCommand(const std::string& root) {
  return {"/usr/bin/unshare",
          "--mount",
          "--uts",
          "--propagation",
          "private",
          "--",
          "/bin/sh",
          "-c",
          kImageStageSetup,
          "provisiond-image-stage",
          root,
          "--exec",
          ""};
}

Result<RemoteResult> ChrootRemote::Run(const std::string& script, const std::string& input,
                                       const std::string& become_user, int timeout_ms) {
  // --uts too: a task that sets the host name (the hostname module) sets
  // the namespace's, never this machine's.
  std::vector<std::string> argv = {"/usr/bin/unshare", "--mount", "--uts",
                                   "--propagation",    "private", "--"};
  // $0 names the setup in the shell's own messages.
  argv.insert(argv.end(), {"/bin/sh", "-c", kImageStageSetup, "provisiond-image-stage", root_,
                           become_user, script});
  return SpawnScript(std::move(argv), input, timeout_ms, ImageStageEnv());
}

namespace {

// Debian's maintainer scripts ask this before they start a daemon: 101 is
// "not allowed".
constexpr const char* kPolicyRcD =
    "#!/bin/sh\n"
    "# provisiond image stage: no daemon of the image starts on the control node.\n"
    "exit 101\n";
constexpr const char* kDpkgUnsafeIo =
    "# provisiond image stage: the tree is thrown away if the build fails.\n"
    "force-unsafe-io\n";
constexpr const char* kDpkgUnsafeIoPath = "/etc/dpkg/dpkg.cfg.d/provisiond-image-stage";

}  // namespace

Status BeginImageStage(const std::string& root) {
  Status s = WriteFileAtomic(root + "/usr/sbin/policy-rc.d", kPolicyRcD, 0755);
  if (s.ok() && std::filesystem::is_directory(root + "/etc/dpkg/dpkg.cfg.d"))
    s = WriteFileAtomic(root + kDpkgUnsafeIoPath, kDpkgUnsafeIo, 0644);
  return s;
}

void EndImageStage(const std::string& root) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::remove(root + "/usr/sbin/policy-rc.d", ec);
  fs::remove(root + kDpkgUnsafeIoPath, ec);
  for (const char* dir : {"/var/cache/apt/archives", "/var/cache/apt/archives/partial"})
    for (const auto& e : fs::directory_iterator(root + dir, ec))
      if (e.is_regular_file() && e.path().extension() == ".deb") fs::remove(e.path(), ec);
  for (const char* f : {"/var/cache/apt/pkgcache.bin", "/var/cache/apt/srcpkgcache.bin"})
    fs::remove(root + f, ec);
}

}  // namespace prov
