// Helpers shared by the agent loop's files (agent_loop.cc, agent_own.cc, agent_replicas.cc,
// agent_faults.cc); internal to src/agent.
#pragma once

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

#include "agent/executor.h"
#include "agent/gpu_probe.h"
#include "agent/health.h"
#include "api/agent_protocol.h"
#include "core/time.h"

namespace gpupool::agent_internal {

using Json = nlohmann::json;


inline constexpr size_t kLogTailBytes = kAgentLogTailBytes;
inline constexpr size_t kAcceptanceTailBytes = kAgentAcceptanceBytes;
inline constexpr size_t kMaxPendingHealth = 1024;
inline constexpr const char* kAcceptanceReplica = "acceptance";  // never "JOB-REPLICA": no '-'


// Process output may be binary or cut inside a UTF-8 sequence: never let dump() throw.
inline std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

inline Time SteadyNow() {
  return Time::FromMillis(std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::steady_clock::now().time_since_epoch())
                              .count());
}

inline bool ValidNodeName(const std::string& s) {
  if (s.empty() || s.size() > 128) return false;
  return std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '.' || c == '_' || c == '-';
  });
}

inline bool ValidEnvName(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

inline std::optional<uint64_t> ParseU64(const std::string& s) {
  uint64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// (size, mtime in ns) of a file; (-1, -1) when it does not exist.
inline std::pair<int64_t, int64_t> FileSignature(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return {-1, -1};
  return {static_cast<int64_t>(st.st_size),
          static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
}

inline std::string TailOrEmpty(const std::string& path, size_t n) {
  Result<std::string> r = ReadTail(path, n);
  return r.ok() ? *r : std::string();
}

// The job id a replica's state file names (executor meta; the agent's own JSON).
inline std::optional<std::string> JobOf(const Json& j) {
  if (!j.is_object() || !j.contains("job")) return std::nullopt;
  const Json& v = j["job"];
  if (v.is_string() && !v.get<std::string>().empty()) return v.get<std::string>();
  if (v.is_number_unsigned() || v.is_number_integer()) return std::to_string(v.get<int64_t>());
  return std::nullopt;
}

inline std::optional<int64_t> ReplicaOf(const Json& j) {
  if (!j.is_object() || !j.contains("replica") || !j["replica"].is_number_integer()) {
    return std::nullopt;
  }
  const int64_t r = j["replica"].get<int64_t>();
  return r >= 0 ? std::optional<int64_t>(r) : std::nullopt;
}

inline std::optional<int64_t> AttemptOf(const Json& j) {
  if (!j.is_object() || !j.contains("attempt") || !j["attempt"].is_number_integer()) {
    return std::nullopt;
  }
  const int64_t a = j["attempt"].get<int64_t>();
  return a >= 0 ? std::optional<int64_t>(a) : std::nullopt;
}

// A GPU as registration and heartbeats describe it; the instances only for MIG GPUs.
inline GpuReport GpuReportOf(const GpuInfo& g) {
  GpuReport out;
  out.index = g.index;
  out.uuid = g.uuid;
  out.mig = g.mig_current == MigMode::kEnabled;
  if (!out.mig) return out;
  for (const GpuInstanceInfo& gi : g.gpu_instances) {
    out.instances.push_back({.start = gi.start,
                             .size = gi.size,
                             .profile = gi.profile,
                             .uuid = gi.mig_uuids.empty() ? "" : gi.mig_uuids.front()});
  }
  return out;
}

inline std::string KeyOf(const std::string& job, int64_t replica) {
  return job + "-" + std::to_string(replica);
}

inline std::string HealthKind(HealthEventKind k) {
  switch (k) {
    case HealthEventKind::kXid:
      return "xid";
    case HealthEventKind::kEccUncorrectable:
      return "ecc";
    case HealthEventKind::kRowRemapFailure:
      return "row_remap_failure";
    case HealthEventKind::kRowRemapPending:
      return "row_remap_pending";
    case HealthEventKind::kTemperature:
      return "temperature";
    case HealthEventKind::kGpuLost:
      return "gpu_lost";
    case HealthEventKind::kDeviceLost:
      return "device_lost";
  }
  return "unknown";
}

inline HealthReport HealthReportOf(const HealthEvent& e) {
  HealthReport r{.gpu = e.gpu, .kind = HealthKind(e.kind)};
  switch (e.kind) {
    case HealthEventKind::kXid:
      r.code = e.value;
      if (e.gpu_instance_id != kUnknownU32) r.gpu_instance_id = e.gpu_instance_id;
      break;
    case HealthEventKind::kEccUncorrectable:
      r.count = e.value;
      break;
    case HealthEventKind::kTemperature:
      r.celsius = e.value;
      break;
    default:
      break;
  }
  return r;
}

}  // namespace gpupool::agent_internal
