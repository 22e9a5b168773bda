// The fields of the agent protocol's JSON bodies as ControlPlane reads them (control_plane_agents.cc,
// control_plane_heartbeat.cc): typed reads with ranges and messages, no exceptions.
#pragma once

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/result.h"
#include "model/job.h"
#include "model/mig.h"

namespace gpupool::agent_fields {

using Json = nlohmann::json;

constexpr size_t kMaxTail = 64 * 1024;
constexpr int64_t kMaxAttempt = int64_t{1} << 53;  // exact in any JSON reader

// The replicas of `job` placed on `node`, by replica index.
inline std::vector<int> ReplicasOn(const Job& job, NodeId node) {
  std::vector<int> out;
  for (size_t r = 0; r < job.placement.size(); ++r) {
    if (job.placement[r].node == node) out.push_back(static_cast<int>(r));
  }
  return out;
}

inline Result<int64_t> IntField(const Json& j, const char* key, int64_t lo, int64_t hi) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return InvalidArgument(std::string("'") + key + "' must be an integer");
  const int64_t v = it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(hi) ? hi + 1 : it->get<int64_t>();
  if (v < lo || v > hi) return InvalidArgument(std::string("'") + key + "' out of range");
  return v;
}

// A non-negative integer field, or `def` when absent or of another type (health values are
// advisory: a malformed one is ignored, never thrown on).
inline uint64_t UintOr(const Json& j, const char* key, uint64_t def) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return def;
  return it->is_number_unsigned() ? it->get<uint64_t>() : static_cast<uint64_t>(std::max<int64_t>(0, it->get<int64_t>()));
}

inline std::string StrField(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

// The attempt number of a job's current placement: the job's counter, bumped by each admission
// (model/job.h). Admissions are journaled, so it survives a daemon restart, and each requeue
// followed by a new admission gives a higher one, whatever the clock does.
inline int64_t AttemptOf(const Job& job) { return job.attempt; }

// The MIG instances of one reported GPU (gpus[i].instances: start, profile, uuid) as a layout of
// `model`, and their MIG UUIDs by start slice.
struct ReportedMig {
  MigLayout layout;
  std::map<int, std::string> uuid;
};
inline Result<ReportedMig> ReadInstances(const GpuModel& model, const Json& g, size_t i) {
  const std::string where = "gpus[" + std::to_string(i) + "]";
  ReportedMig out;
  std::string layout;
  if (auto inst = g.find("instances"); inst != g.end() && inst->is_array()) {
    for (const Json& in : *inst) {
      if (!in.is_object()) return InvalidArgument(where + ".instances: objects expected");
      Result<int64_t> start = IntField(in, "start", 0, 7);
      if (!start.ok()) return InvalidArgument(where + ".instances: " + start.error().message);
      layout += (layout.empty() ? "" : ",") + StrField(in, "profile") + "@" + std::to_string(*start);
      if (const std::string mig = StrField(in, "uuid"); !mig.empty()) out.uuid[static_cast<int>(*start)] = mig;
    }
  }
  Result<MigLayout> l = ParseLayout(model, layout);
  if (!l.ok()) return InvalidArgument(where + ": " + l.error().message);
  out.layout = *l;
  return out;
}

inline Result<JobId> JobField(const Json& j) {
  const std::string s = StrField(j, "job");
  if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string::npos) {
    return InvalidArgument("'job' must be a job id such as \"12\"");
  }
  return JobId(std::stoull(s));
}


}  // namespace gpupool::agent_fields
