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
#include <vector>

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
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);

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

}  // namespace prov
