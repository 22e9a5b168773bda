#include "agent/spawn.h"

#include "agent/shim.h"

#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

namespace gpupool::internal {
namespace {

const char* StepName(int step) {
  switch (step) {
    case kSetsid: return "setsid (shim)";
    case kFork: return "fork (shim)";
    case kSetpgid: return "setpgid";
    case kCgroup: return "joining the cgroup";
    case kNamespace: return "a mount namespace for the job";
    case kHide: return "hiding a device the job was not granted";
    case kDup: return "redirecting stdio";
    case kUser: return "switching to the job's user";
    case kDeathSignal: return "PR_SET_PDEATHSIG";
    case kNoNewPrivs: return "PR_SET_NO_NEW_PRIVS";
    case kChdir: return "chdir";
    case kExec: return "execve /bin/sh";
    default: return "starting the child";
  }
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

// Writes a file by rename, so a reader sees the old or the new text, never a part.
Status WriteAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Error{ErrorCode::kInternal, "open " + tmp + ": " + std::strerror(errno)};
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const int err = errno;
  close(fd);
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
    unlink(tmp.c_str());
    return Error{ErrorCode::kInternal, "write " + path + ": " + std::strerror(ok ? errno : err)};
  }
  return Ok();
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int PidfdOpen(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

bool AskShimToStop(int pidfd, int64_t grace_ms) {
  siginfo_t info;
  std::memset(&info, 0, sizeof info);
  info.si_signo = SIGUSR1;
  info.si_code = SI_QUEUE;
  info.si_pid = getpid();
  info.si_uid = getuid();
  const int64_t v = grace_ms < 0 ? 1 : (grace_ms > 0x7ffffff0 ? 0x7ffffff0 : grace_ms + 1);
  info.si_value.sival_int = static_cast<int>(v);
  return syscall(SYS_pidfd_send_signal, pidfd, SIGUSR1, &info, 0) == 0;
}

int64_t ProcessStartTime(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return -1;
  const size_t paren = line.rfind(')');
  if (paren == std::string::npos) return -1;
  std::istringstream rest(line.substr(paren + 1));
  std::string field;
  // Fields after the name start at 3 (state); the start time is field 22.
  for (int i = 3; i <= 22; ++i) {
    if (!(rest >> field)) return -1;
  }
  try {
    return std::stoll(field);
  } catch (...) {
    return -1;
  }
}

Result<Spawned> SpawnReplica(const SpawnRequest& r) {
  Fds fds;
  const int file_flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC;
  fds.in = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (fds.in < 0) return Internal("open /dev/null", errno);
  for (auto [name, fd] : {std::pair{"/stdout", &fds.out}, std::pair{"/stderr", &fds.err}}) {
    *fd = open((r.dir + name).c_str(), file_flags, 0600);
    if (*fd < 0) return Internal("open " + r.dir + name, errno);
    if (fchmod(*fd, 0600) != 0) return Internal("chmod " + r.dir + name, errno);
    if (r.switch_user && fchown(*fd, r.uid, r.gid) != 0) return Internal("chown " + r.dir + name, errno);
  }
  const std::string procs = r.cgroup.empty() ? "" : r.cgroup + "/cgroup.procs";
  const std::string kill_file = r.cgroup.empty() ? "" : r.cgroup + "/cgroup.kill";
  const std::string events = r.cgroup.empty() ? "" : r.cgroup + "/cgroup.events";
  if (!procs.empty()) {
    fds.cgroup = open(procs.c_str(), O_WRONLY | O_CLOEXEC);
    if (fds.cgroup < 0) return Internal("open " + procs, errno);
  }
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return Internal("pipe2", errno);
  fds.pipe_r = p[0];
  fds.pipe_w = p[1];

  std::vector<std::string> args = {"sh", "-c", r.command};
  std::vector<char*> argv, envp;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env = r.env;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<const char*> hide;
  for (const std::string& h : r.hide) hide.push_back(h.c_str());
  const std::string exit_tmp = r.exit_path + ".tmp";
  ChildArgs a{r.dir.c_str(),
              argv.data(),
              envp.data(),
              r.lease_path.empty() ? nullptr : r.lease_path.c_str(),
              r.exit_path.c_str(),
              exit_tmp.c_str(),
              kill_file.empty() ? nullptr : kill_file.c_str(),
              procs.empty() ? nullptr : procs.c_str(),
              events.empty() ? nullptr : events.c_str(),
              fds.cgroup >= 0,
              r.fence_grace_ms,
              r.switch_user,
              r.uid,
              r.gid,
              r.no_new_privs,
              hide.data(),
              hide.size(),
              r.hide_with.c_str()};

  const pid_t shim = fork();
  if (shim < 0) return Internal("fork", errno);
  if (shim == 0) RunShim(a, fds.pipe_w, fds.in, fds.out, fds.err, fds.cgroup);
  Spawned out;
  out.shim = shim;
  out.pidfd = PidfdOpen(shim);  // our unreaped child: it cannot be another process
  close(fds.pipe_w);
  fds.pipe_w = -1;
  std::optional<Message> failure;
  for (;;) {
    Message m{0, 0};
    const ssize_t n = read(fds.pipe_r, &m, sizeof m);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // closed: the shim runs and the shell exec'd (or failed, said below)
    if (n != static_cast<ssize_t>(sizeof m)) {
      failure = Message{0, EIO};
      break;
    }
    if (m.kind == kPid) {
      out.pgid = m.value;
    } else if (!failure) {
      failure = m;
    }
  }
  if (!failure && out.pgid <= 0) failure = Message{0, EIO};
  if (failure) {
    int status = 0;
    while (waitpid(shim, &status, 0) < 0 && errno == EINTR) {
    }
    if (out.pidfd >= 0) close(out.pidfd);
    unlink(r.exit_path.c_str());
    return Internal(StepName(failure->kind), failure->value);
  }
  return out;
}

}  // namespace gpupool::internal
