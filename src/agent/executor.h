// Executor: runs job replicas as real processes on the node.
//
// Process model (docs/design/agent.md, "Executor"):
//  1. Start runs `/bin/sh -c COMMAND` in a new process group (setpgid(0, 0) in the child), with
//     its working directory, stdout and stderr in <work_dir>/<replica>/ (files "stdout" and
//     "stderr", truncated on start), stdin from /dev/null, all signal dispositions reset and
//     no signal blocked. The environment is built, not inherited: LaunchSpec::env over
//     ExecutorOptions::base_env, then GPUPOOL_REPLICA, CUDA_VISIBLE_DEVICES (the UUIDs,
//     comma-separated; "" hides every GPU) and the MPS variables when set.
//  2. If <cgroup_parent> is on a writable cgroup v2 mount, the child joins its own cgroup
//     <cgroup_parent>/<replica> before exec; otherwise this is skipped and cgroup() says why.
//  3. Poll() never blocks: it reaps replicas whose shell has exited (waitid WNOHANG), kills
//     what is left of their process group (and cgroup) with SIGKILL, and sends SIGKILL to
//     groups whose termination grace has run out.
//  4. RequestTerminate sends SIGTERM to the whole group and arms the grace deadline;
//     Terminate does that and then waits (sleeping in small steps) until the replica is reaped.
//
// Invariants: (1) a replica is in the table from a successful Start until Poll or Terminate
// reports its exit, exactly once; (2) while in the table its shell is our unreaped child, so its
// pid, which is also the group id, cannot be reused.
//
// Thread-safety: not thread-safe; one thread (the agent loop) calls it. The destructor kills
// (SIGKILL) and reaps every replica still running.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "core/time.h"

namespace gpupool {

struct LaunchSpec {
  std::string replica;               // key and directory name: [A-Za-z0-9._-]{1,128}
  std::string command;               // run as /bin/sh -c COMMAND
  std::vector<std::string> devices;  // GPU-... or MIG-... UUIDs for CUDA_VISIBLE_DEVICES
  // Shared (MPS) fractions; only for whole GPUs (MPS is not supported on MIG devices).
  std::optional<uint32_t> mps_active_thread_percentage;  // 1..100
  std::optional<uint64_t> mps_pinned_memory_mib;         // per visible device, > 0
  std::vector<std::pair<std::string, std::string>> env;  // extra variables
};

struct ExitInfo {
  bool signaled = false;
  int code = 0;  // exit status, or the signal number when signaled
  friend bool operator==(const ExitInfo&, const ExitInfo&) = default;
};
std::string ToString(const ExitInfo& e);  // "exit 3", "signal 9 (Killed)"

struct ReplicaExit {
  std::string replica;
  ExitInfo exit;
};

struct CgroupSupport {
  bool enabled = false;
  std::string reason;  // "cgroup v2 at ..." or why it is skipped
};

struct ExecutorOptions {
  std::string work_dir;  // created (with parents) if missing; one directory per replica
  std::string cgroup_parent = "/sys/fs/cgroup/gpupool";  // "": never use cgroups
  std::vector<std::pair<std::string, std::string>> base_env = {
      {"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}};
  std::function<Time()> now;  // monotonic; empty: the steady clock
};

class Executor {
 public:
  // Fails if work_dir cannot be created.
  static Result<std::unique_ptr<Executor>> Create(ExecutorOptions options);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  const CgroupSupport& cgroup() const { return cgroup_; }

  // Starts a replica. InvalidArgument for a bad spec, AlreadyExists if it is running, kInternal
  // if the process could not be started (the exec failure's errno included).
  Status Start(const LaunchSpec& spec);

  // Non-blocking; the exits since the last call, in replica-name order.
  std::vector<ReplicaExit> Poll();

  // SIGTERM to the replica's process group now; SIGKILL once `grace` has passed (done by Poll).
  // NotFound if it is not running. A second request keeps the earlier deadline.
  Status RequestTerminate(const std::string& replica, Duration grace);
  // RequestTerminate, then waits until the replica is reaped; returns its exit (which Poll
  // will not report again).
  Result<ExitInfo> Terminate(const std::string& replica, Duration grace);

  bool running(const std::string& replica) const { return procs_.count(replica) != 0; }
  // The shell's pid (= its process group id), or -1.
  pid_t pid(const std::string& replica) const;
  std::string ReplicaDir(const std::string& replica) const;
  std::string StdoutPath(const std::string& replica) const {
    return ReplicaDir(replica) + "/stdout";
  }
  std::string StderrPath(const std::string& replica) const {
    return ReplicaDir(replica) + "/stderr";
  }

 private:
  struct Proc {
    pid_t pid = -1;
    std::optional<Time> kill_at;  // grace deadline after SIGTERM
    bool killed = false;          // SIGKILL sent
    std::string cgroup;           // "" when not in a cgroup
  };

  explicit Executor(ExecutorOptions options);
  Time Now() const;
  // Reaps p if its shell has exited (killing what is left of its group); returns its exit.
  std::optional<ExitInfo> TryReap(Proc& p);
  void KillGroup(const Proc& p, int sig);
  void CleanupCgroups();

  ExecutorOptions options_;
  CgroupSupport cgroup_;
  std::map<std::string, Proc> procs_;
  std::vector<std::string> stale_cgroups_;  // rmdir failed (still busy); retried by Poll
};

// The last `max_bytes` bytes of a file (all of it if shorter). NotFound if it does not exist.
Result<std::string> ReadTail(const std::string& path, size_t max_bytes);

// Probes `cgroup_parent` (created if missing) for cgroup v2 use.
CgroupSupport DetectCgroupV2(const std::string& cgroup_parent);

}  // namespace gpupool
