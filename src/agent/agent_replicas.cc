// The agent applying a reply's starts, stops and forgets (agent_loop.h; docs/design/agent.md,
// "Protocol between the agent and the daemon").
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <sstream>
#include <thread>

#include "agent/agent_internal.h"
#include "agent/agent_loop.h"
#include "agent/fake_probe.h"

namespace gpupool {
using namespace agent_internal;

bool Agent::StartWanted(const ReplicaStart& s, const std::string& key) {
  if (auto n = newest_attempt_.find(key); n != newest_attempt_.end() && s.attempt < n->second) {
    Log("warn", "start of an attempt older than one seen here: refused",
        {{"job", s.job}, {"replica", s.replica}, {"attempt", s.attempt}, {"newest", n->second}});
    return false;
  }
  auto it = replicas_.find(key);
  if (it == replicas_.end()) return true;
  // Idempotent for the same attempt; another attempt waits until the old one is forgotten.
  if (it->second.attempt != s.attempt) {
    Log("warn", "start of a new attempt while the previous one is still here: waiting",
        {{"job", s.job},
         {"replica", s.replica},
         {"attempt", s.attempt},
         {"previous_attempt", it->second.attempt}});
  }
  return false;
}

Result<LaunchSpec> Agent::LaunchSpecFor(const ReplicaStart& s, const std::string& key,
                                        std::string& tenant) {
  LaunchSpec spec;
  spec.replica = key;
  spec.devices = s.devices;
  tenant = s.tenant;
  if (tenant.empty()) {
    if (auto t = s.env.find("GPUPOOL_TENANT"); t != s.env.end()) tenant = t->second;
  }
  if (!s.error.empty()) return InvalidArgument(s.error);  // the decoder's reason
  for (const auto& [k, v] : s.env) {
    if (k == "GPUPOOL_REPLICA") continue;  // exported by the command (Launch): the daemon's wins
    if (k == "CUDA_VISIBLE_DEVICES" || k.rfind("CUDA_MPS_", 0) == 0) {
      Log("warn", "ignoring an environment variable the agent sets itself",
          {{"job", s.job}, {"replica", s.replica}, {"name", k}});
      continue;
    }
    spec.env.emplace_back(k, v);
  }
  Result<std::optional<RunAs>> user = UserFor(tenant);
  if (!user.ok()) return user.error();
  spec.user = *user;
  if (s.grace) spec.fence_grace = *s.grace;
  if (s.cpu_milli && *s.cpu_milli > 0) spec.cpu_milli = *s.cpu_milli;
  if (s.memory_mib && *s.memory_mib > 0) spec.memory_mib = *s.memory_mib;
  if (s.mps_active_thread_percentage) {
    spec.mps_active_thread_percentage = static_cast<uint32_t>(*s.mps_active_thread_percentage);
  }
  if (s.mps_pinned_memory_mib) {
    spec.mps_pinned_memory_mib = static_cast<uint64_t>(*s.mps_pinned_memory_mib);
  }
  return spec;
}

std::string Agent::Launch(const ReplicaStart& s, LaunchSpec& spec, const std::string& tenant) {
  // The device nodes of the GPUs it was not granted are hidden from it.
  for (const auto& [gpu_index, node] : options_.device_nodes) {
    const bool granted =
        std::any_of(spec.devices.begin(), spec.devices.end(), [&](const std::string& d) {
          const GpuInfo* g = GpuOfDevice(d);
          return g != nullptr && g->index == gpu_index;
        });
    if (!granted) spec.hide.push_back(node);
  }
  spec.meta = Dump({{"job", s.job},
                    {"replica", s.replica},
                    {"attempt", s.attempt},
                    {"devices", spec.devices},
                    {"tenant", tenant}});
  // The executor sets GPUPOOL_REPLICA to its key ("12-0"); the daemon's value wins.
  std::vector<std::pair<std::string, std::string>> exports;
  if (auto r = s.env.find("GPUPOOL_REPLICA"); r != s.env.end()) exports.emplace_back(*r);
  Result<std::string> cmd = ShellCommandFor(s.command, exports);
  if (!cmd.ok()) return cmd.error().message;
  spec.command = *cmd;
  if (Status st = executor_.Start(spec); !st.ok()) return st.error().message;
  return "";
}

void Agent::StartReplica(const ReplicaStart& s) {
  const std::string key = KeyOf(s.job, s.replica);
  if (!StartWanted(s, key)) return;
  std::string tenant;
  Result<LaunchSpec> spec = LaunchSpecFor(s, key, tenant);
  std::string error = spec.ok() ? "" : spec.error().message;
  if (spec.ok()) {
    // Not on a GPU being re-partitioned, nor on a device this node no longer has: the start
    // waits (not recorded, so the daemon sends it again) instead of failing as the job's fault.
    if (const std::string why = StartBlocked(spec->devices); !why.empty()) {
      if (start_held_[key] != why) {
        Log("warn", "start waits", {{"job", s.job}, {"replica", s.replica}, {"reason", why}});
      }
      start_held_[key] = why;
      return;
    }
    start_held_.erase(key);
    error = Launch(s, *spec, tenant);
  }
  Replica rec;
  rec.job = s.job;
  rec.index = s.replica;
  rec.attempt = s.attempt;
  rec.devices = s.devices;
  int64_t& newest = newest_attempt_[key];
  newest = std::max(newest, s.attempt);
  if (newest_attempt_.size() > 100000) newest_attempt_.erase(newest_attempt_.begin());
  if (!error.empty()) {
    rec.exited = true;
    rec.exit = ExitInfo{false, 127};
    rec.start_error = error;
    Log("error", "cannot start the replica",
        {{"job", s.job}, {"replica", s.replica}, {"error", error}});
  } else {
    Log("info", "replica started",
        {{"job", s.job},
         {"replica", s.replica},
         {"attempt", s.attempt},
         {"pid", executor_.pid(key)},
         {"devices", s.devices}});
  }
  replicas_[key] = std::move(rec);
}

void Agent::StopReplica(const ReplicaStop& s) {
  const std::string key = KeyOf(s.job, s.replica);
  const Duration grace = s.grace.value_or(Duration::Seconds(30));
  if (auto it = replicas_.find(key);
      it != replicas_.end() && s.attempt && *s.attempt != it->second.attempt) {
    Log("warn", "stop for another attempt than the one here: ignored",
        {{"job", s.job},
         {"replica", s.replica},
         {"attempt", *s.attempt},
         {"here", it->second.attempt}});
    return;
  }
  if (!executor_.running(key)) {
    if (!replicas_.count(key)) {
      Log("warn", "stop for a replica this agent does not run",
          {{"job", s.job}, {"replica", s.replica}});
    }
    return;  // already exited: its exit is (or will be) reported
  }
  Replica* rec = replicas_.count(key) ? &replicas_[key] : nullptr;
  if (rec != nullptr && rec->stopping) return;  // the daemon repeats it until the exit is reported
  if (Status st = executor_.RequestTerminate(key, grace); !st.ok()) {
    Log("warn", "stop failed",
        {{"job", s.job}, {"replica", s.replica}, {"error", st.error().message}});
    return;
  }
  if (rec != nullptr) rec->stopping = true;
  Log("info", "stopping replica",
      {{"job", s.job}, {"replica", s.replica}, {"grace_ms", grace.millis()}});
}

void Agent::ForgetReplica(const ReplicaForget& s) {
  const std::string key = KeyOf(s.job, s.replica);
  auto it = replicas_.find(key);
  if (it == replicas_.end()) return;
  if (s.attempt && *s.attempt != it->second.attempt) return;  // not this attempt's exit
  if (!it->second.exited) {
    Log("warn", "forget for a replica that still runs: kept",
        {{"job", s.job}, {"replica", s.replica}});
    return;
  }
  replicas_.erase(it);
  executor_.Release(key);
  Log("info", "replica forgotten", {{"job", s.job}, {"replica", s.replica}});
}

}  // namespace gpupool
