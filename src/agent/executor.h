// Executor: runs job replicas as real processes on the node, each under its own shim (spawn.h).
//
// Process model (docs/design/agent.md, "Executor" and "Owning and fencing replicas"):
//  1. Start runs `/bin/sh -c COMMAND` under a shim, in a new process group, with its working
//     directory, stdout and stderr in <work_dir>/<replica>/ (a 0700 directory and 0600 files
//     "stdout" and "stderr", owned by the job's user, truncated on start), stdin from /dev/null,
//     all signal dispositions reset, no signal blocked and no fd of the agent's open. The
//     environment is built, not inherited: LaunchSpec::env over ExecutorOptions::base_env, then
//     GPUPOOL_REPLICA, CUDA_VISIBLE_DEVICES (the UUIDs, comma-separated; "" hides every GPU) and
//     the MPS variables when set. With LaunchSpec::user it runs as that user (the agent must be
//     root), always with PR_SET_NO_NEW_PRIVS, and the device nodes in LaunchSpec::hide are
//     covered in a mount namespace of its own.
//  2. If <cgroup_parent> is on a writable cgroup v2 mount, the replica joins its own cgroup
//     <cgroup_parent>/<replica> before exec, with memory.max and cpu.max from the spec where
//     those controllers are enabled; otherwise this is skipped and cgroup() says why.
//  3. A state file <state_dir>/<replica>.json (the shim's pid and start time, the group, the
//     cgroup and the caller's `meta`) lives from Start until Release; the shim writes
//     <state_dir>/<replica>.exit once nothing of the replica is left. Recover, in a new agent,
//     finds them: a shim still alive is adopted (it is watched through a pidfd), an exit file is
//     an exit, and a state file with neither is a replica lost with its shim (what is left of
//     its cgroup or group is killed).
//  4. Poll() never blocks: it reports the replicas whose shim has exited, with the exit the shim
//     wrote. Stopping goes through the shim (RequestTerminate): SIGTERM to the group now,
//     SIGKILL after the grace; the lease (ExecutorOptions::lease_path) makes every shim do the
//     same by itself once the agent stops renewing it.
//
// Invariants: (1) a replica is in the table from a successful Start (or Recover) until Poll or
// Terminate reports its exit, exactly once; (2) an exit is reported only when the shim has
// seen the replica's cgroup (or group) empty, so its GPUs are free.
//
// Thread-safety: not thread-safe; one thread (the agent loop) calls it. The destructor asks
// every shim to kill its replica now and waits for them (at most 10 s).
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

struct RunAs {
  uid_t uid = 0;
  gid_t gid = 0;
};

struct LaunchSpec {
  std::string replica;               // key and directory name: [A-Za-z0-9_-][A-Za-z0-9._-]{0,127}
  std::string command;               // run as /bin/sh -c COMMAND
  std::vector<std::string> devices;  // GPU-... or MIG-... UUIDs for CUDA_VISIBLE_DEVICES
  // Shared (MPS) fractions; only for whole GPUs (MPS is not supported on MIG devices).
  std::optional<uint32_t> mps_active_thread_percentage;  // 1..100
  std::optional<uint64_t> mps_pinned_memory_mib;         // per visible device, > 0
  std::vector<std::pair<std::string, std::string>> env;  // extra variables
  std::optional<RunAs> user;          // empty: the agent's own user
  Duration fence_grace = Duration::Seconds(30);  // SIGTERM to SIGKILL when the lease expires
  int64_t cpu_milli = 0;              // cgroup cpu.max (0: no limit)
  int64_t memory_mib = 0;             // cgroup memory.max (0: no limit)
  std::vector<std::string> hide;      // device nodes the job may not open
  std::string meta;                   // kept in the state file for Recover (the agent's JSON)
};

struct ExitInfo {
  bool signaled = false;
  int code = 0;  // exit status, or the signal number when signaled
  // Stopped by its shim because the lease expired, or lost with its shim (not the job's doing).
  bool fenced = false;
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

// A replica found by Recover.
struct RecoveredReplica {
  std::string replica;
  std::string meta;
  bool running = false;  // its shim lives and is adopted; else `exit` is how it ended
  ExitInfo exit;
};

struct ExecutorOptions {
  std::string work_dir;   // created (with parents) if missing; one directory per replica
  std::string state_dir;  // "": <work_dir>/.gpupool; created 0700
  std::string cgroup_parent = "/sys/fs/cgroup/gpupool";  // "": never use cgroups
  std::string lease_path;  // the lease every shim watches ("": none, no fencing)
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

  // Starts a replica. InvalidArgument for a bad spec, AlreadyExists if it is running (or its
  // state is not released yet), kInternal if the process could not be started (the exec
  // failure's errno included).
  Status Start(const LaunchSpec& spec);

  // Finds the replicas an earlier executor on this state directory started (see the file
  // comment); call once, before any Start. The running ones are in the table afterwards.
  std::vector<RecoveredReplica> Recover();
  // Forgets a replica that has exited: removes its state and exit files.
  void Release(const std::string& replica);
  const std::string& state_dir() const { return options_.state_dir; }
  const std::string& lease_path() const { return options_.lease_path; }

  // Non-blocking; the exits since the last call, in replica-name order.
  std::vector<ReplicaExit> Poll();

  // SIGTERM to the replica's process group now; SIGKILL once `grace` has passed (by its shim).
  // NotFound if it is not running. A second request keeps the earlier deadline.
  Status RequestTerminate(const std::string& replica, Duration grace);
  // RequestTerminate, then waits until the replica is reaped; returns its exit (which Poll
  // will not report again).
  Result<ExitInfo> Terminate(const std::string& replica, Duration grace);

  bool running(const std::string& replica) const { return procs_.count(replica) != 0; }
  // The shell's pid (= its process group id), or -1.
  pid_t pid(const std::string& replica) const;
  pid_t shim_pid(const std::string& replica) const;
  std::string ReplicaDir(const std::string& replica) const;
  std::string StdoutPath(const std::string& replica) const {
    return ReplicaDir(replica) + "/stdout";
  }
  std::string StderrPath(const std::string& replica) const {
    return ReplicaDir(replica) + "/stderr";
  }

 private:
  struct Proc {
    pid_t shim = -1;
    int pidfd = -1;
    bool child = true;  // our child (false: adopted by Recover)
    pid_t pid = -1;     // the shell = its group
    std::string cgroup;  // "" when not in a cgroup
  };

  explicit Executor(ExecutorOptions options);
  Time Now() const;
  std::string StatePath(const std::string& replica) const;
  std::string ExitPath(const std::string& replica) const;
  // The exit of `p` if its shim has exited (reaping it when it is our child).
  std::optional<ExitInfo> TryReap(const std::string& replica, Proc& p);
  // The exit the shim wrote; a lost one (fenced, SIGKILL) if there is none, after killing what
  // is left of the cgroup or group.
  ExitInfo ReadExit(const std::string& replica, const Proc& p);
  void CleanupCgroups();

  ExecutorOptions options_;
  CgroupSupport cgroup_;
  std::map<std::string, Proc> procs_;
  std::string hide_with_;  // a 0000 file bound over hidden device nodes
  std::vector<std::string> stale_cgroups_;  // rmdir failed (still busy); retried by Poll
};

// The last `max_bytes` bytes of a file (all of it if shorter). NotFound if it does not exist.
Result<std::string> ReadTail(const std::string& path, size_t max_bytes);

// Probes `cgroup_parent` (created if missing) for cgroup v2 use, and enables the memory and cpu
// controllers for its children where the hierarchy offers them.
CgroupSupport DetectCgroupV2(const std::string& cgroup_parent);
// Where an agent for `node` keeps its replicas' cgroups when not told:
// <mount>/gpupool-<node>-<8 hex digits of a hash of the state directory's absolute path>, where
// <mount> is /sys/fs/cgroup if that is cgroup v2, else /sys/fs/cgroup/unified (a hybrid host's v2
// tree); "" if neither is. The hash keeps two agents of one name on one host (tests, a second
// cluster) out of each other's cgroups; it is the same at every start on that state directory.
std::string DefaultCgroupParent(const std::string& node, const std::string& state_dir);

}  // namespace gpupool
