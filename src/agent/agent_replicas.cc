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

void Agent::StartReplica(const Json& s) {
  const std::optional<std::string> job = JobOf(s);
  const std::optional<int64_t> index = ReplicaOf(s);
  if (!job || !index) {
    Log("warn", "start without a job or replica: skipped", {{"item", s}});
    return;
  }
  const std::optional<int64_t> attempt = AttemptOf(s);
  if (!attempt) {
    Log("warn", "start without an attempt number: skipped", {{"item", s}});
    return;
  }
  const std::string key = KeyOf(*job, *index);
  if (auto n = newest_attempt_.find(key); n != newest_attempt_.end() && *attempt < n->second) {
    Log("warn", "start of an attempt older than one seen here: refused",
        {{"job", *job}, {"replica", *index}, {"attempt", *attempt}, {"newest", n->second}});
    return;
  }
  if (auto it = replicas_.find(key); it != replicas_.end()) {
    // Idempotent for the same attempt; another attempt waits until the old one is forgotten.
    if (it->second.attempt != *attempt) {
      Log("warn", "start of a new attempt while the previous one is still here: waiting",
          {{"job", *job},
           {"replica", *index},
           {"attempt", *attempt},
           {"previous_attempt", it->second.attempt}});
    }
    return;
  }

  Replica rec;
  rec.job = *job;
  rec.index = *index;
  rec.attempt = *attempt;
  std::string error;
  LaunchSpec spec;
  spec.replica = key;
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> exports;
  if (!s.contains("command") || !s["command"].is_array() || s["command"].empty()) {
    error = "'command' must be a non-empty list of strings";
  } else {
    for (const Json& a : s["command"]) {
      if (!a.is_string()) {
        error = "'command' must be a list of strings";
        break;
      }
      argv.push_back(a.get<std::string>());
    }
  }
  if (error.empty() && s.contains("devices")) {
    if (!s["devices"].is_array()) error = "'devices' must be a list of UUIDs";
    for (const Json& d : s["devices"]) {
      if (!d.is_string()) {
        error = "'devices' must be a list of UUIDs";
        break;
      }
      spec.devices.push_back(d.get<std::string>());
    }
  }
  if (error.empty() && s.contains("env")) {
    if (!s["env"].is_object()) error = "'env' must be an object of strings";
    for (const auto& [k, v] : s["env"].items()) {
      if (!v.is_string()) {
        error = "environment variable " + k + " is not a string";
        break;
      }
      if (k == "GPUPOOL_REPLICA") {
        // The executor sets GPUPOOL_REPLICA to its key ("12-0"); the daemon's value wins.
        exports.emplace_back(k, v.get<std::string>());
      } else if (k == "CUDA_VISIBLE_DEVICES" || k.rfind("CUDA_MPS_", 0) == 0) {
        Log("warn", "ignoring an environment variable the agent sets itself",
            {{"job", *job}, {"replica", *index}, {"name", k}});
      } else {
        spec.env.emplace_back(k, v.get<std::string>());
      }
    }
  }
  std::string tenant = s.value("tenant", Json()).is_string() ? s["tenant"].get<std::string>() : "";
  if (tenant.empty() && s.contains("env") && s["env"].is_object() &&
      s["env"].value("GPUPOOL_TENANT", Json()).is_string()) {
    tenant = s["env"]["GPUPOOL_TENANT"].get<std::string>();
  }
  if (error.empty()) {
    Result<std::optional<RunAs>> user = UserFor(tenant);
    if (!user.ok()) {
      error = user.error().message;
    } else {
      spec.user = *user;
    }
  }
  if (const Json g = s.value("grace_s", Json()); g.is_number() && g.get<double>() >= 0) {
    spec.fence_grace = Duration::Millis(static_cast<int64_t>(g.get<double>() * 1000));
  }
  for (auto [field, out] : {std::pair{"cpu_milli", &spec.cpu_milli}, std::pair{"memory_mib", &spec.memory_mib}}) {
    if (const Json v = s.value(field, Json()); v.is_number_integer() && v.get<int64_t>() > 0) {
      *out = v.get<int64_t>();
    }
  }
  if (error.empty() && s.contains("mps_active_thread_percentage")) {
    const Json& v = s["mps_active_thread_percentage"];
    if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > 100) {
      error = "'mps_active_thread_percentage' must be 1..100";
    } else {
      spec.mps_active_thread_percentage = static_cast<uint32_t>(v.get<int64_t>());
    }
  }
  if (error.empty() && s.contains("mps_pinned_memory_mib")) {
    const Json& v = s["mps_pinned_memory_mib"];
    if (!v.is_number_integer() || v.get<int64_t>() < 1) {
      error = "'mps_pinned_memory_mib' must be a positive integer";
    } else {
      spec.mps_pinned_memory_mib = static_cast<uint64_t>(v.get<int64_t>());
    }
  }
  if (error.empty()) {
    // Not on a GPU being re-partitioned, nor on a device this node no longer has: the start
    // waits (not recorded, so the daemon sends it again) instead of failing as the job's fault.
    if (const std::string why = StartBlocked(spec.devices); !why.empty()) {
      if (start_held_[key] != why) {
        Log("warn", "start waits", {{"job", *job}, {"replica", *index}, {"reason", why}});
      }
      start_held_[key] = why;
      return;
    }
    start_held_.erase(key);
    // The device nodes of the GPUs it was not granted are hidden from it.
    for (const auto& [gpu_index, node] : options_.device_nodes) {
      const bool granted = std::any_of(spec.devices.begin(), spec.devices.end(), [&](const std::string& d) {
        const GpuInfo* g = GpuOfDevice(d);
        return g != nullptr && g->index == gpu_index;
      });
      if (!granted) spec.hide.push_back(node);
    }
    spec.meta = Dump({{"job", *job}, {"replica", *index}, {"attempt", *attempt},
                      {"devices", spec.devices}, {"tenant", tenant}});
    Result<std::string> cmd = ShellCommandFor(argv, exports);
    if (!cmd.ok()) {
      error = cmd.error().message;
    } else {
      spec.command = *cmd;
      if (Status st = executor_.Start(spec); !st.ok()) error = st.error().message;
    }
  }
  rec.devices = spec.devices;
  int64_t& newest = newest_attempt_[key];
  newest = std::max(newest, *attempt);
  if (newest_attempt_.size() > 100000) newest_attempt_.erase(newest_attempt_.begin());
  if (!error.empty()) {
    rec.exited = true;
    rec.exit = ExitInfo{false, 127};
    rec.start_error = error;
    Log("error", "cannot start the replica",
        {{"job", *job}, {"replica", *index}, {"error", error}});
  } else {
    Log("info", "replica started",
        {{"job", *job},
         {"replica", *index},
         {"attempt", *attempt},
         {"pid", executor_.pid(key)},
         {"devices", spec.devices}});
  }
  replicas_[key] = std::move(rec);
}

void Agent::StopReplica(const Json& s) {
  const std::optional<std::string> job = JobOf(s);
  const std::optional<int64_t> index = ReplicaOf(s);
  if (!job || !index) {
    Log("warn", "stop without a job or replica: skipped", {{"item", s}});
    return;
  }
  const std::string key = KeyOf(*job, *index);
  int64_t grace_s = 30;
  if (s.contains("grace_s") && s["grace_s"].is_number() && s["grace_s"].get<double>() >= 0) {
    grace_s = static_cast<int64_t>(s["grace_s"].get<double>());
  }
  if (auto it = replicas_.find(key);
      it != replicas_.end() && AttemptOf(s) && *AttemptOf(s) != it->second.attempt) {
    Log("warn", "stop for another attempt than the one here: ignored",
        {{"job", *job},
         {"replica", *index},
         {"attempt", *AttemptOf(s)},
         {"here", it->second.attempt}});
    return;
  }
  if (!executor_.running(key)) {
    if (!replicas_.count(key)) {
      Log("warn", "stop for a replica this agent does not run",
          {{"job", *job}, {"replica", *index}});
    }
    return;  // already exited: its exit is (or will be) reported
  }
  Replica* rec = replicas_.count(key) ? &replicas_[key] : nullptr;
  if (rec != nullptr && rec->stopping) return;  // the daemon repeats it until the exit is reported
  if (Status st = executor_.RequestTerminate(key, Duration::Seconds(grace_s)); !st.ok()) {
    Log("warn", "stop failed", {{"job", *job}, {"replica", *index}, {"error", st.error().message}});
    return;
  }
  if (rec != nullptr) rec->stopping = true;
  Log("info", "stopping replica", {{"job", *job}, {"replica", *index}, {"grace_s", grace_s}});
}

void Agent::ForgetReplica(const Json& s) {
  const std::optional<std::string> job = JobOf(s);
  const std::optional<int64_t> index = ReplicaOf(s);
  if (!job || !index) return;
  const std::string key = KeyOf(*job, *index);
  auto it = replicas_.find(key);
  if (it == replicas_.end()) return;
  if (AttemptOf(s) && *AttemptOf(s) != it->second.attempt) return;  // not this attempt's exit
  if (!it->second.exited) {
    Log("warn", "forget for a replica that still runs: kept", {{"job", *job}, {"replica", *index}});
    return;
  }
  replicas_.erase(it);
  executor_.Release(key);
  Log("info", "replica forgotten", {{"job", *job}, {"replica", *index}});
}

}  // namespace gpupool
