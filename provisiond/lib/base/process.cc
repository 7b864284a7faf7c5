#include "base/process.h"

#include <set>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <thread>

#include "base/unique_fd.h"

extern char** environ;

namespace prov {
namespace {

constexpr size_t kMaxOutput = 64 * 1024;

// Ours, with `extra` replacing what it names (an inherited ANSIBLE_CONFIG
// never shadows the one a run sets: getenv(3) returns the first).
std::vector<char*> MakeEnv(const std::vector<std::string>& extra, std::vector<std::string>& store) {
  auto name_of = [](const std::string& entry) { return entry.substr(0, entry.find('=')); };
  std::set<std::string> replaced;
  for (const auto& x : extra) replaced.insert(name_of(x));
  for (char** e = environ; e && *e; ++e)
    if (!replaced.count(name_of(*e))) store.emplace_back(*e);
  for (const auto& x : extra) store.push_back(x);
  std::vector<char*> out;
  for (auto& s : store) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// fork + exec for a child in a private mount namespace with its own /run.
// Everything is prepared before fork; the child only makes system calls.
Result<pid_t> SpawnPrivateRun(const ProcessSpec& spec, int out_fd) {
  std::vector<std::string> argv_store(spec.argv), env_store;
  std::vector<char*> argv;
  for (auto& a : argv_store) argv.push_back(a.data());
  argv.push_back(nullptr);
  auto envp = MakeEnv(spec.env, env_store);
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  pid_t pid = fork();
  if (pid < 0) {
    close(devnull);
    return Status::Internal("fork: " + std::string(strerror(errno)));
  }
  if (pid == 0) {
    dup2(devnull, 0);
    dup2(out_fd, 1);
    dup2(out_fd, 2);
    sigset_t empty;
    sigemptyset(&empty);
    sigprocmask(SIG_SETMASK, &empty, nullptr);
    for (int sig = 1; sig < NSIG; ++sig) signal(sig, SIG_DFL);
    if (unshare(CLONE_NEWNS) != 0 ||
        mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        mount("tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") != 0)
      _exit(126);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  close(devnull);
  return pid;
}

// Spawns with stdin from /dev/null and stdout+stderr to `out_fd`.
Result<pid_t> Spawn(const ProcessSpec& spec, int out_fd) {
  if (spec.argv.empty() || spec.argv[0].empty() || spec.argv[0][0] != '/')
    return Status::Invalid("a program must be given by its full path: '" +
                           (spec.argv.empty() ? "" : spec.argv[0]) + "'");
  if (spec.private_run) return SpawnPrivateRun(spec, out_fd);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
  posix_spawn_file_actions_adddup2(&actions, out_fd, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // The child starts with default signal dispositions and an empty mask,
  // whatever provisiond blocks for its own signal handling.
  sigset_t empty, all;
  sigemptyset(&empty);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<std::string> argv_store(spec.argv), env_store;
  std::vector<char*> argv;
  for (auto& a : argv_store) argv.push_back(a.data());
  argv.push_back(nullptr);
  auto envp = MakeEnv(spec.env, env_store);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0)
    return Status::Internal("cannot start " + DescribeCommand(spec) + ": " + std::strerror(rc));
  return pid;
}

}  // namespace

std::string DescribeCommand(const ProcessSpec& spec) {
  std::string out;
  for (size_t i = 0; i < spec.argv.size(); ++i) {
    bool secret = false;
    for (size_t s : spec.secret_args) secret |= s == i;
    if (i) out += ' ';
    out += secret ? "***" : spec.argv[i];
  }
  return out;
}

Result<ProcessResult> RunProcess(const ProcessSpec& spec, int timeout_ms,
                                 const std::function<void(const std::string&)>& on_line,
                                 const std::atomic<bool>* cancel) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0)
    return Status::Internal("pipe: " + std::string(strerror(errno)));
  UniqueFd read_end(pipe_fds[0]);
  UniqueFd write_end(pipe_fds[1]);
  auto pid = Spawn(spec, write_end.get());
  write_end.reset();  // only the child writes now: end of file when it is gone
  if (!pid.ok()) return pid.status();
  ProcessResult result;
  std::string line_buffer;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  bool open = true;
  int killed_stage = 0;
  while (open) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (cancel && *cancel && killed_stage == 0) left = 0;
    if (left <= 0) {
      result.timed_out = true;
      kill(*pid, killed_stage == 0 ? SIGTERM : SIGKILL);
      killed_stage++;
      deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(2000);
      if (killed_stage > 2) break;
      continue;
    }
    pollfd p{read_end.get(), POLLIN, 0};
    int n = poll(&p, 1, static_cast<int>(std::min<long>(left, 200)));
    if (n <= 0) continue;
    char buf[8192];
    ssize_t got = read(read_end.get(), buf, sizeof buf);
    if (got <= 0) {
      open = false;
      break;
    }
    result.output.append(buf, static_cast<size_t>(got));
    if (on_line) {
      line_buffer.append(buf, static_cast<size_t>(got));
      size_t nl;
      while ((nl = line_buffer.find_first_of("\r\n")) != std::string::npos) {
        if (nl > 0) on_line(line_buffer.substr(0, nl));
        line_buffer.erase(0, nl + 1);
      }
      if (line_buffer.size() > kMaxOutput) line_buffer.clear();
    }
    if (result.output.size() > 2 * kMaxOutput)
      result.output.erase(0, result.output.size() - kMaxOutput);
  }
  read_end.reset();
  if (on_line && !line_buffer.empty()) on_line(line_buffer);
  if (result.output.size() > kMaxOutput) result.output.erase(0, result.output.size() - kMaxOutput);
  int status = 0;
  waitpid(*pid, &status, 0);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  if (result.timed_out) result.exit_code = -1;
  return result;
}

Result<ChildProcess> ChildProcess::Start(const ProcessSpec& spec) {
  UniqueFd out(open(spec.output_file.empty() ? "/dev/null" : spec.output_file.c_str(),
                    O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640));
  if (!out.valid())
    return Status::Internal("cannot open " + spec.output_file + ": " + strerror(errno));
  auto pid = Spawn(spec, out.get());
  out.reset();
  if (!pid.ok()) return pid.status();
  ChildProcess child;
  child.pid_ = *pid;
  return child;
}

Result<ChildProcess> ChildProcess::Adopt(pid_t pid) {
  int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0)
    return Status::Error(Code::kUnavailable,
                         "cannot adopt pid " + std::to_string(pid) + ": " + strerror(errno));
  fcntl(fd, F_SETFD, FD_CLOEXEC);
  ChildProcess child;
  child.pid_ = pid;
  child.pidfd_ = fd;
  return child;
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept : pid_(other.pid_), pidfd_(other.pidfd_) {
  other.pid_ = -1;
  other.pidfd_ = -1;
}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    Stop();
    pid_ = other.pid_;
    pidfd_ = other.pidfd_;
    other.pid_ = -1;
    other.pidfd_ = -1;
  }
  return *this;
}

ChildProcess::~ChildProcess() {
  Stop();
}

void ChildProcess::Clear() {
  if (pidfd_ >= 0) close(pidfd_);
  pid_ = -1;
  pidfd_ = -1;
}

namespace {
// A pidfd is readable once its process has exited.
bool PidfdExited(int pidfd, int timeout_ms) {
  pollfd p{pidfd, POLLIN, 0};
  return poll(&p, 1, timeout_ms) > 0;
}
}  // namespace

bool ChildProcess::Reap(int& status) {
  if (pid_ <= 0) return false;
  if (adopted()) {
    if (!PidfdExited(pidfd_, 0)) return false;
    status = 0;
    Clear();
    return true;
  }
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    pid_ = -1;
    return true;
  }
  return false;
}

Status ChildProcess::Signal(int sig) const {
  if (pid_ <= 0) return Status::Error(Code::kUnavailable, "the process is not running");
  int r = adopted() ? static_cast<int>(syscall(SYS_pidfd_send_signal, pidfd_, sig, nullptr, 0))
                    : kill(pid_, sig);
  if (r != 0) return Status::Internal("kill: " + std::string(strerror(errno)));
  return Status::Ok();
}

void ChildProcess::Stop(int grace_ms) {
  if (pid_ <= 0) return;
  if (adopted()) {
    (void)Signal(SIGTERM);
    if (!PidfdExited(pidfd_, grace_ms)) {
      (void)Signal(SIGKILL);
      PidfdExited(pidfd_, 5000);
    }
    Clear();
    return;
  }
  kill(pid_, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

namespace {

// A /proc file's text, "" when it cannot be read: with read(2), because a
// process that exits while its file is read makes read fail (ESRCH), which
// std::filebuf turns into an exception.
std::string ReadProcText(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  std::string text;
  if (!fd.valid()) return text;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd.get(), buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      return "";
    }
    text.append(buf, static_cast<size_t>(n));
  }
  return text;
}

}  // namespace

std::vector<pid_t> FindProcessesWithArg(const std::string& arg) {
  std::vector<pid_t> out;
  const pid_t self = getpid();
  // readdir, not std::filesystem::directory_iterator: processes come and go
  // while /proc is read, and the iterator stops at the first that vanished.
  UniqueDir proc(opendir("/proc"));
  if (!proc) return out;
  while (const dirent* entry = readdir(proc.get())) {
    const std::string name = entry->d_name;
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    if (pid == self) continue;
    const std::string cmdline = ReadProcText("/proc/" + name + "/cmdline");
    size_t start = 0;
    while (start < cmdline.size()) {
      size_t end = cmdline.find('\0', start);
      if (end == std::string::npos) end = cmdline.size();
      if (start > 0 && cmdline.compare(start, end - start, arg) == 0) {  // not argv[0]
        out.push_back(pid);
        break;
      }
      start = end + 1;
    }
  }
  return out;
}

std::vector<pid_t> StopProcessesWithArg(const std::string& arg, int grace_ms) {
  std::vector<pid_t> pids = FindProcessesWithArg(arg);
  for (pid_t p : pids) kill(p, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  for (pid_t p : pids) {
    // Not our children (their parent died): they are gone when kill(p, 0)
    // fails, or a zombie until init reaps them.
    auto gone = [p] {
      if (kill(p, 0) != 0) return true;
      const std::string text = ReadProcText("/proc/" + std::to_string(p) + "/stat");
      size_t paren = text.rfind(')');
      return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'Z';
    };
    while (!gone() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (!gone()) kill(p, SIGKILL);
  }
  return pids;
}

}  // namespace prov
