// Low-level process start for the Executor (internal to src/agent): fork, then in the child only
// async-signal-safe calls until execve, so it stays correct when the agent has threads.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "core/result.h"

namespace gpupool::internal {

struct SpawnRequest {
  std::string dir;               // working directory; stdout and stderr files go here
  std::string command;           // for /bin/sh -c
  std::vector<std::string> env;  // "KEY=value", the whole environment
  std::string cgroup_procs;      // "<cgroup>/cgroup.procs" to join before exec, or ""
};

// Starts /bin/sh -c command as the leader of a new process group. Errors (kInternal) carry the
// step and errno that failed, in the parent or in the child before exec.
Result<pid_t> SpawnShell(const SpawnRequest& request);

// Writes `text` to a file that exists (cgroup control files). Returns false on any error.
bool WriteSmallFile(const std::string& path, const std::string& text);

}  // namespace gpupool::internal
