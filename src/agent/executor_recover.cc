// Executor: what outlives one agent (executor.h, points 3 and 4): finding the replicas an earlier
// agent started, reading the exits their shims wrote, and forgetting them.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "agent/executor.h"
#include "agent/spawn.h"

namespace gpupool {

std::vector<RecoveredReplica> Executor::Recover() {
  std::vector<RecoveredReplica> out;
  std::error_code ec;
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(options_.state_dir, ec)) {
    const std::string f = e.path().filename().string();
    if (f.size() > 5 && f.compare(f.size() - 5, 5, ".json") == 0) names.push_back(f.substr(0, f.size() - 5));
  }
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    if (!internal::ValidReplicaName(name) || procs_.count(name)) continue;
    const nlohmann::json j = nlohmann::json::parse(internal::ReadAll(StatePath(name)), nullptr, false);
    RecoveredReplica r;
    r.replica = name;
    Proc p;
    p.child = false;
    if (j.is_object()) {
      r.meta = j.value("meta", "");
      p.cgroup = j.value("cgroup", "");
      p.shim = j.value("shim", -1);
      p.pid = j.value("pgid", -1);
      const int64_t start = j.value("shim_start", int64_t{-1});
      if (p.shim > 0) {
        p.pidfd = internal::PidfdOpen(p.shim);
        // The pid names our shim only if it started when ours did (pids are reused).
        if (p.pidfd >= 0 && (start < 0 || internal::ProcessStartTime(p.shim) != start)) {
          close(p.pidfd);
          p.pidfd = -1;
        }
      }
    }
    if (p.pidfd >= 0) {
      struct pollfd pfd{p.pidfd, POLLIN, 0};
      if (poll(&pfd, 1, 0) == 0) {
        r.running = true;
        procs_.emplace(name, std::move(p));
        out.push_back(std::move(r));
        continue;
      }
      close(p.pidfd);
      p.pidfd = -1;
    }
    r.exit = ReadExit(name, p);
    if (!p.cgroup.empty()) stale_cgroups_.push_back(p.cgroup);
    out.push_back(std::move(r));
  }
  CleanupCgroups();
  return out;
}

void Executor::Release(const std::string& replica) {
  if (running(replica) || !internal::ValidReplicaName(replica)) return;
  unlink(StatePath(replica).c_str());
  unlink(ExitPath(replica).c_str());
}

ExitInfo Executor::ReadExit(const std::string& replica, const Proc& p) {
  std::istringstream in(internal::ReadAll(ExitPath(replica)));
  std::string kind;
  int code = 0, fenced = 0;
  if (in >> kind >> code >> fenced && (kind == "exit" || kind == "signal")) {
    return ExitInfo{kind == "signal", code, fenced != 0};
  }
  // The shim died without a word (kill -9): nothing may be left running.
  if (!p.cgroup.empty() && !internal::WriteSmallFile(p.cgroup + "/cgroup.kill", "1")) {
    std::ifstream procs(p.cgroup + "/cgroup.procs");
    for (pid_t member; procs >> member;) kill(member, SIGKILL);
  }
  if (p.pid > 0) kill(-p.pid, SIGKILL);
  return ExitInfo{true, SIGKILL, true};
}

}  // namespace gpupool
