#include "agent/shim.h"

#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <initializer_list>

namespace gpupool::internal {
namespace {

// The shim's stop request: grace + 1 in ms (0: none), set by its signal handlers.
volatile sig_atomic_t g_stop = 0;
volatile sig_atomic_t g_fence_grace_plus1 = 1;

void OnStopValue(int, siginfo_t* info, void*) {
  const int v = info != nullptr ? info->si_value.sival_int : 0;
  const int want = v >= 1 ? v : 1;
  if (g_stop == 0 || want < g_stop) g_stop = want;
}
void OnStopSignal(int) {
  const int want = g_fence_grace_plus1;
  if (g_stop == 0 || want < g_stop) g_stop = want;
}

void Send(int32_t kind, int32_t value) {
  const Message m{kind, value};
  ssize_t ignored = write(kPipeFd, &m, sizeof m);
  (void)ignored;
}

[[noreturn]] void Fail(int32_t step) {
  Send(step, errno);
  _exit(127);
}

int64_t MonoMs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

void SleepMs(int64_t ms) {
  struct timespec ts{static_cast<time_t>(ms / 1000), static_cast<long>((ms % 1000) * 1000000)};
  nanosleep(&ts, nullptr);  // a signal cuts it short: the loop looks at it sooner
}

void ResetSignals() {
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) sigaction(sig, &dfl, nullptr);  // EINVAL: reserved
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

// Reads the whole of a small file into buf (NUL-terminated); -1 if it cannot be opened.
ssize_t ReadSmall(const char* path, char* buf, size_t size) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t got = 0;
  while (got + 1 < size) {
    const ssize_t n = read(fd, buf + got, size - 1 - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  buf[got] = '\0';
  return static_cast<ssize_t>(got);
}

// Signals every member of a cgroup (cgroup.procs: one pid a line).
void SignalMembers(const char* procs, int sig) {
  const int fd = open(procs, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char buf[4096];
  long pid = 0;
  bool digits = false;
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      if (buf[i] >= '0' && buf[i] <= '9') {
        pid = pid * 10 + (buf[i] - '0');
        digits = true;
      } else {
        if (digits && pid > 0) kill(static_cast<pid_t>(pid), sig);
        pid = 0;
        digits = false;
      }
    }
  }
  if (digits && pid > 0) kill(static_cast<pid_t>(pid), sig);
  close(fd);
}

void SignalAll(const ChildArgs& a, pid_t pgid, int sig) {
  kill(-pgid, sig);
  if (a.cg_procs == nullptr) return;
  if (sig == SIGKILL && a.cg_kill != nullptr) {
    const int fd = open(a.cg_kill, O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
      const bool ok = write(fd, "1", 1) == 1;  // Linux 5.14+
      close(fd);
      if (ok) return;
    }
  }
  SignalMembers(a.cg_procs, sig);
}

bool CgroupEmpty(const ChildArgs& a) {
  char buf[512];
  if (ReadSmall(a.cg_events, buf, sizeof buf) < 0) return true;  // gone
  return std::strstr(buf, "populated 0") != nullptr;
}

// The lease deadline (CLOCK_MONOTONIC ms); false if the file is missing. An unreadable number
// keeps `deadline` as it was.
bool ReadLease(const char* path, int64_t& deadline) {
  char buf[32];
  if (ReadSmall(path, buf, sizeof buf) < 0) return false;
  int64_t v = 0;
  size_t i = 0;
  for (; buf[i] >= '0' && buf[i] <= '9'; ++i) v = v * 10 + (buf[i] - '0');
  if (i > 0) deadline = v;
  return true;
}

// Appends the decimal digits of v (v >= 0).
char* PutNumber(char* out, int64_t v) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v > 0);
  while (n > 0) *out++ = digits[--n];
  return out;
}

void WriteExit(const ChildArgs& a, int status, bool fenced) {
  char text[64];
  char* p = text;
  const bool signaled = WIFSIGNALED(status);
  const char* word = signaled ? "signal " : "exit ";
  for (const char* w = word; *w; ++w) *p++ = *w;
  p = PutNumber(p, signaled ? WTERMSIG(status) : WEXITSTATUS(status));
  *p++ = ' ';
  *p++ = fenced ? '1' : '0';
  *p++ = '\n';
  const int fd = open(a.exit_tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return;
  ssize_t ignored = write(fd, text, static_cast<size_t>(p - text));
  (void)ignored;
  close(fd);
  rename(a.exit_tmp, a.exit_path);
}

// The replica's child: becomes /bin/sh -c COMMAND. Async-signal-safe calls only.
[[noreturn]] void Replica(const ChildArgs& a, pid_t shim) {
  ResetSignals();
  if (setpgid(0, 0) != 0) Fail(kSetpgid);
  if (a.has_cgroup_fd && write(kCgroupFd, "0", 1) != 1) Fail(kCgroup);
  if (a.hide_count > 0) {
    if (unshare(CLONE_NEWNS) != 0) Fail(kNamespace);
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) Fail(kNamespace);
    for (size_t i = 0; i < a.hide_count; ++i) {
      if (mount(a.hide_with, a.hide[i], nullptr, MS_BIND, nullptr) != 0) Fail(kHide);
    }
  }
  if (dup2(kInFd, 0) < 0 || dup2(kOutFd, 1) < 0 || dup2(kErrFd, 2) < 0) Fail(kDup);
  syscall(SYS_close_range, static_cast<unsigned>(kPipeFd + 1), ~0U, 0);  // kPipeFd is CLOEXEC
  if (a.switch_user) {
    if (setgroups(0, nullptr) != 0 || setgid(a.gid) != 0 || setuid(a.uid) != 0) Fail(kUser);
    if (getuid() != a.uid || geteuid() != a.uid || (a.uid != 0 && setuid(0) == 0)) {
      errno = EPERM;
      Fail(kUser);
    }
  }
  // After the user switch, which clears it. The shim may have died meanwhile: then go now.
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) Fail(kDeathSignal);
  if (getppid() != shim) _exit(127);
  if (a.no_new_privs && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) Fail(kNoNewPrivs);
  if (chdir(a.dir) != 0) Fail(kChdir);
  execve("/bin/sh", a.argv, a.envp);
  Fail(kExec);
}

// The shim (see spawn.h). Async-signal-safe calls only; never returns.
}  // namespace

void RunShim(const ChildArgs& a, int pipe_w, int in, int out, int err, int cgroup) {
  ResetSignals();
  // The fds it keeps go to fixed numbers; the agent's others (sockets, files) are closed.
  int keep[5] = {pipe_w, in, out, err, cgroup};
  for (int& fd : keep) {
    if (fd >= 0) fd = fcntl(fd, F_DUPFD_CLOEXEC, 100);
  }
  for (int i = 0; i < 5; ++i) {
    if (keep[i] >= 0) dup2(keep[i], kPipeFd + i);
  }
  if (cgroup < 0) close(kCgroupFd);
  syscall(SYS_close_range, static_cast<unsigned>(kCgroupFd + 1), ~0U, 0);
  fcntl(kPipeFd, F_SETFD, FD_CLOEXEC);
  if (setsid() < 0) Fail(kSetsid);
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  prctl(PR_SET_NAME, "gpupool-shim");
  g_fence_grace_plus1 = static_cast<sig_atomic_t>(a.fence_grace_ms + 1);
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = OnStopValue;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, nullptr);
  struct sigaction st;
  std::memset(&st, 0, sizeof st);
  st.sa_handler = OnStopSignal;
  sigemptyset(&st.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaction(sig, &st, nullptr);
  struct sigaction ign;
  std::memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ign, nullptr);

  const pid_t self = getpid();
  const pid_t child = fork();
  if (child < 0) Fail(kFork);
  if (child == 0) Replica(a, self);
  setpgid(child, child);  // also here, so the group exists before anyone signals it
  Send(kPid, child);
  for (int fd = kPipeFd; fd <= kCgroupFd; ++fd) close(fd);

  int64_t kill_at = -1, lease_deadline = 0;
  bool termed = false, killed = false, fenced = false, lease_seen = false;
  auto request = [&](int64_t at) {
    if (!termed) {
      SignalAll(a, child, SIGTERM);
      termed = true;
    }
    if (kill_at < 0 || at < kill_at) kill_at = at;
  };
  for (;;) {
    siginfo_t si;
    std::memset(&si, 0, sizeof si);
    if (waitid(P_PID, static_cast<id_t>(child), &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        si.si_pid == child) {
      break;  // the shell is a zombie: its pid, the group id, stays reserved
    }
    for (;;) {  // orphans of the job, reparented to us, that have exited
      siginfo_t o;
      std::memset(&o, 0, sizeof o);
      if (waitid(P_ALL, 0, &o, WEXITED | WNOHANG | WNOWAIT) != 0 || o.si_pid == 0 ||
          o.si_pid == child) {
        break;
      }
      waitpid(o.si_pid, nullptr, WNOHANG);
    }
    const int64_t now = MonoMs();
    if (a.lease != nullptr && !fenced) {
      if (ReadLease(a.lease, lease_deadline)) {
        lease_seen = true;
        fenced = now >= lease_deadline;
      } else {
        fenced = lease_seen;  // removed after it was seen: no lease
      }
      if (fenced) request(now + a.fence_grace_ms);
    }
    const int stop = __atomic_exchange_n(&g_stop, 0, __ATOMIC_SEQ_CST);
    if (stop > 0) request(now + stop - 1);
    if (kill_at >= 0 && now >= kill_at && !killed) {
      SignalAll(a, child, SIGKILL);
      killed = true;
    }
    SleepMs(termed ? 10 : 50);
  }

  SignalAll(a, child, SIGKILL);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  // Nothing of the replica may be left when the exit is written.
  const int64_t give_up = MonoMs() + 10000;
  for (;;) {
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    const bool empty = a.cg_events != nullptr ? CgroupEmpty(a)
                                              : (waitpid(-1, nullptr, WNOHANG) < 0 && errno == ECHILD);
    if (empty || MonoMs() >= give_up) break;
    SignalAll(a, child, SIGKILL);
    // What left the group (setsid) and lost its parent is ours now, as the subreaper.
    SignalMembers("/proc/thread-self/children", SIGKILL);
    SleepMs(10);
  }
  WriteExit(a, status, fenced);
  _exit(0);
}

}  // namespace gpupool::internal
