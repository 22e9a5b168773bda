#include "agent/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gpupool::internal {
namespace {

// Child-side failure report, written to the CLOEXEC pipe: which step, and errno.
struct ChildError {
  int step;
  int err;
};
enum Step { kSetpgid = 1, kCgroup, kDup, kChdir, kExec };

const char* StepName(int step) {
  switch (step) {
    case kSetpgid: return "setpgid";
    case kCgroup: return "joining the cgroup";
    case kDup: return "redirecting stdio";
    case kChdir: return "chdir";
    case kExec: return "execve /bin/sh";
    default: return "starting the child";
  }
}

[[noreturn]] void ChildFail(int pipe_fd, int step) {
  const ChildError e{step, errno};
  ssize_t ignored = write(pipe_fd, &e, sizeof e);
  (void)ignored;
  _exit(127);
}

// Runs in the child after fork: async-signal-safe calls only.
[[noreturn]] void Child(int pipe_fd, int in_fd, int out_fd, int err_fd, int cgroup_fd,
                        const char* dir, char* const argv[], char* const envp[]) {
  if (setpgid(0, 0) != 0) ChildFail(pipe_fd, kSetpgid);
  if (cgroup_fd >= 0 && write(cgroup_fd, "0", 1) != 1) ChildFail(pipe_fd, kCgroup);
  if (dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0) {
    ChildFail(pipe_fd, kDup);
  }
  // The job starts with default signal handling and nothing blocked, whatever the agent set.
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) sigaction(sig, &dfl, nullptr);  // EINVAL: reserved
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  if (chdir(dir) != 0) ChildFail(pipe_fd, kChdir);
  execve("/bin/sh", argv, envp);
  ChildFail(pipe_fd, kExec);
}

Error Internal(const std::string& what, int err) {
  return {ErrorCode::kInternal, what + ": " + std::strerror(err)};
}

// Closes the fds it owns on every path.
struct Fds {
  int in = -1, out = -1, err = -1, cgroup = -1, pipe_r = -1, pipe_w = -1;
  ~Fds() {
    for (int fd : {in, out, err, cgroup, pipe_r, pipe_w}) {
      if (fd >= 0) close(fd);
    }
  }
};

}  // namespace

bool WriteSmallFile(const std::string& path, const std::string& text) {
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

Result<pid_t> SpawnShell(const SpawnRequest& r) {
  Fds fds;
  const int file_flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC;
  fds.in = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (fds.in < 0) return Internal("open /dev/null", errno);
  fds.out = open((r.dir + "/stdout").c_str(), file_flags, 0644);
  if (fds.out < 0) return Internal("open " + r.dir + "/stdout", errno);
  fds.err = open((r.dir + "/stderr").c_str(), file_flags, 0644);
  if (fds.err < 0) return Internal("open " + r.dir + "/stderr", errno);
  if (!r.cgroup_procs.empty()) {
    fds.cgroup = open(r.cgroup_procs.c_str(), O_WRONLY | O_CLOEXEC);
    if (fds.cgroup < 0) return Internal("open " + r.cgroup_procs, errno);
  }
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return Internal("pipe2", errno);
  fds.pipe_r = p[0];
  fds.pipe_w = p[1];

  // Everything the child needs is built before fork: it must not allocate.
  std::vector<std::string> args = {"sh", "-c", r.command};
  std::vector<char*> argv, envp;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env = r.env;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  const pid_t pid = fork();
  if (pid < 0) return Internal("fork", errno);
  if (pid == 0) {
    Child(fds.pipe_w, fds.in, fds.out, fds.err, fds.cgroup, r.dir.c_str(), argv.data(),
          envp.data());
  }
  setpgid(pid, pid);  // also in the parent, so the group exists when Start returns; a race
                      // with the child's own call or its exec is harmless (EACCES)
  close(fds.pipe_w);
  fds.pipe_w = -1;
  ChildError e{0, 0};
  ssize_t n;
  do {
    n = read(fds.pipe_r, &e, sizeof e);
  } while (n < 0 && errno == EINTR);
  if (n == 0) return pid;  // the pipe closed on exec: the shell runs
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (n != static_cast<ssize_t>(sizeof e)) return Internal("reading the child's status", EIO);
  return Internal(StepName(e.step), e.err);
}

}  // namespace gpupool::internal
