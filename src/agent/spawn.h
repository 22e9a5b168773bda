// Low-level process start for the Executor (internal to src/agent): fork, then in the children
// only async-signal-safe calls (and never an allocation) until execve, so it stays correct when
// the agent has threads.
//
// Every replica runs under its own shim, a process forked from the agent that never execs (it
// shows as "gpupool-shim" in ps): agent -> shim -> /bin/sh -c COMMAND. The shim is what keeps a
// replica owned and fenced when the agent is not there (docs/design/agent.md, "Owning and
// fencing replicas"):
//  - it starts a session of its own and is a child subreaper, so what the job daemonizes stays
//    below it; the shell leads a new process group, joins its cgroup (when given) and dies with
//    the shim (PR_SET_PDEATHSIG);
//  - it reads the node's lease file every 50 ms; once the deadline in it has passed (or the file
//    has gone after being seen), it sends SIGTERM to the replica's group and, after the fence
//    grace, SIGKILL to the group and the cgroup; it never un-fences;
//  - SIGUSR1 with a value v (sigqueue) asks it to stop the replica: SIGTERM now and SIGKILL after
//    v - 1 ms (an earlier deadline wins); SIGTERM, SIGINT and SIGHUP to the shim are a stop with
//    the fence grace;
//  - when the shell exits it kills what is left of the group (and of the cgroup), waits until
//    the cgroup is empty (or, without one, until no descendant is left; 10 s at most) and only
//    then writes the exit file ("exit N F" or "signal N F", F = 1 when the lease stopped it)
//    by rename and exits 0. An exit file therefore means the replica's processes are gone.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"

namespace gpupool::internal {

struct SpawnRequest {
  std::string dir;               // working directory; stdout and stderr files go here
  std::string command;           // for /bin/sh -c
  std::vector<std::string> env;  // "KEY=value", the whole environment
  std::string cgroup;            // cgroup directory to join (and to kill and wait out), or ""
  std::string lease_path;        // the node's lease file ("" : no fencing)
  std::string exit_path;         // where the shim writes the exit
  int64_t fence_grace_ms = 30000;
  bool switch_user = false;      // run as uid:gid (the agent is root)
  uid_t uid = 0;
  gid_t gid = 0;
  bool no_new_privs = true;
  // Device nodes the job must not open: `hide_with` (a file of mode 0) is bind-mounted over each
  // in a mount namespace of the job's own. Root only.
  std::vector<std::string> hide;
  std::string hide_with;
};

struct Spawned {
  pid_t shim = -1;   // our child
  int pidfd = -1;    // of the shim (pidfd_open); the caller owns it
  pid_t pgid = -1;   // the shell's pid = its process group
};

// Starts the shim and, under it, the replica. Errors (kInternal) carry the step and errno that
// failed, in the agent or in a child before exec; the shim is then reaped.
Result<Spawned> SpawnReplica(const SpawnRequest& request);

// Writes `text` to a file that exists (cgroup control files). Returns false on any error.
bool WriteSmallFile(const std::string& path, const std::string& text);

// Writes a file by rename (readers see the old text or the new, never a part), mode 0600.
Status WriteAtomically(const std::string& path, const std::string& text);
// The whole of a file; "" if it cannot be read.
std::string ReadAll(const std::string& path);
// A replica's key and directory name: [A-Za-z0-9_-][A-Za-z0-9._-]{0,127} (no leading '.': the
// state directory is <work_dir>/.gpupool).
bool ValidReplicaName(const std::string& n);

// pidfd_open(pid), or -1.
int PidfdOpen(pid_t pid);
// Asks the shim behind `pidfd` to stop its replica, SIGKILL after grace_ms (0: now). False if it
// is gone.
bool AskShimToStop(int pidfd, int64_t grace_ms);
// The process's start time (field 22 of /proc/PID/stat, in clock ticks since boot), or -1: with
// the pid it names one process for ever.
int64_t ProcessStartTime(pid_t pid);

}  // namespace gpupool::internal
