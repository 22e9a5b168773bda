// The Slurm executor's subprocesses: scontrol and sacct, with the configured SLURM_CONF, their
// output read through pipes and a deadline (slurm.h).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "executor/slurm.h"
#include "executor/slurm_internal.h"

extern char** environ;

namespace gpupool::executor {

using slurm_internal::NowMs;
using slurm_internal::Trim;
using slurm_internal::Unavailable;

Status SlurmExecutor::Scontrol(const std::vector<std::string>& args) {
  return Tool(config_.scontrol, args, {}, nullptr);
}

Status SlurmExecutor::Tool(const std::string& program, const std::vector<std::string>& args,
                           const std::vector<std::string>& extra_env, std::string* out) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    if (std::string(*e).rfind("SLURM_CONF=", 0) != 0) env.push_back(*e);
  }
  if (!config_.slurm_conf.empty()) env.push_back("SLURM_CONF=" + config_.slurm_conf);
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  std::vector<char*> argv{const_cast<char*>(program.c_str())};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  // Its standard output and error come through pipes, read together so that neither fills.
  int po[2], pe[2];
  if (pipe2(po, O_CLOEXEC) != 0) return Unavailable("cannot run " + program + ": no pipe");
  if (pipe2(pe, O_CLOEXEC) != 0) {
    close(po[0]);
    close(po[1]);
    return Unavailable("cannot run " + program + ": no pipe");
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, po[1], 1);
  posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
  // In a process group of its own, so that a kill reaches whatever it started (a wrapper script's
  // children) too.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, program.c_str(), &fa, &attr, argv.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  close(po[1]);
  close(pe[1]);
  std::string so, se;
  if (spawned == 0) {
    // A Slurm command that hangs (slurmdbd unreachable, a stopped process) is killed at the
    // deadline: the worker's rounds must go on.
    const int64_t timeout_ms = config_.command_timeout.millis();
    const int64_t deadline = NowMs() + timeout_ms;
    pollfd fds[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
    int open_fds = 2;
    while (open_fds > 0) {
      const int64_t left = deadline - NowMs();
      if (left <= 0 || poll(fds, 2, static_cast<int>(left)) < 0) {
        if (errno == EINTR && left > 0) continue;
        kill(-pid, SIGKILL);
        se += " (killed after " + (timeout_ms % 1000 == 0 ? std::to_string(timeout_ms / 1000) + " s"
                                                           : std::to_string(timeout_ms) + " ms") + ")";
        break;
      }
      for (int i = 0; i < 2; ++i) {
        if (fds[i].fd < 0 || fds[i].revents == 0) continue;
        char buf[65536];
        const ssize_t k = read(fds[i].fd, buf, sizeof buf);
        if (k > 0) {
          (i == 0 ? so : se).append(buf, static_cast<size_t>(k));
        } else if (k == 0 || errno != EINTR) {
          fds[i].fd = -1;
          --open_fds;
        }
      }
    }
  }
  close(po[0]);
  close(pe[0]);
  if (spawned != 0) return Unavailable("cannot run " + program);
  int status = 0;
  const bool exited = waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!exited) {
    std::string why = Trim(se);
    if (why.size() > 300) why.replace(300, std::string::npos, "...");
    return Unavailable(program + " " + (args.empty() ? "" : args.front()) + " failed" + (why.empty() ? "" : ": " + why));
  }
  if (out) *out = std::move(so);
  return Ok();
}

}  // namespace gpupool::executor
