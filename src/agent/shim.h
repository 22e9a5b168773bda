// The children of SpawnReplica (internal to src/agent): the shim and the replica's shell, both
// running async-signal-safe code only between fork and execve (spawn.h says what the shim does).
// What the parent and the children share: the pipe's messages, the fixed fd numbers and the
// arguments built before fork.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace gpupool::internal {

// Messages on the CLOEXEC pipe from the shim and the replica's child to the agent. Each is
// written with one write() of 8 bytes (< PIPE_BUF: atomic).
struct Message {
  int32_t kind;   // kPid, or the Step that failed
  int32_t value;  // the replica's pid, or errno
};
constexpr int32_t kPid = 100;
enum Step : int32_t {
  kSetsid = 1, kFork, kSetpgid, kCgroup, kNamespace, kHide, kDup, kUser, kDeathSignal,
  kNoNewPrivs, kChdir, kExec
};

// The fds the shim keeps, at fixed numbers (everything else is closed).
constexpr int kPipeFd = 3, kInFd = 4, kOutFd = 5, kErrFd = 6, kCgroupFd = 7;

// Everything the children use, built before fork (they must not allocate).
struct ChildArgs {
  const char* dir;
  char* const* argv;
  char* const* envp;
  const char* lease;      // or null
  const char* exit_path;
  const char* exit_tmp;
  const char* cg_kill;    // or null
  const char* cg_procs;   // or null
  const char* cg_events;  // or null
  bool has_cgroup_fd;
  int64_t fence_grace_ms;
  bool switch_user;
  uid_t uid;
  gid_t gid;
  bool no_new_privs;
  const char* const* hide;
  size_t hide_count;
  const char* hide_with;
};

// The shim: never returns. `pipe_w`, `in`, `out`, `err` and `cgroup` (-1: none) are the agent's
// fds for the pipe, stdin, stdout, stderr and the cgroup's cgroup.procs.
[[noreturn]] void RunShim(const ChildArgs& a, int pipe_w, int in, int out, int err, int cgroup);

}  // namespace gpupool::internal
