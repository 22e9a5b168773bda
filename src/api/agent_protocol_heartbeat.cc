// The heartbeat request's codec (agent_protocol.h): replica reports and GPUs strictly, log tails,
// health events and MIG refusals as advisory entries (acceptance 2).
#include "api/agent_protocol.h"
#include "api/agent_protocol_fields.h"

namespace gpupool {

using namespace decode_internal;

namespace {

constexpr const char* kHeartbeatNeeds =
    "a heartbeat sends {'replicas', 'logs', 'health', 'gpus', 'mig_errors'}, each a list (all may be empty)";

// A job id as the daemon writes it: 1..19 decimal digits.
Result<std::string> JobDigits(const Json& j, const std::string& where) {
  auto it = j.find("job");
  const std::string s = it != j.end() && it->is_string() ? it->get<std::string>() : "";
  if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string::npos) {
    return InvalidArgument("'" + where + "job' must be a job id such as \"12\"");
  }
  return s;
}

// The (job, replica, attempt) every replica entry starts with.
Status ReplicaKey(const Json& j, const std::string& where, std::string& job, int64_t& replica, int64_t& attempt) {
  GP_RETURN_IF_ERROR(IsObject(j, where));
  Result<std::string> jid = JobDigits(j, where);
  if (!jid.ok()) return jid.error();
  job = *jid;
  Result<int64_t> r = Int(j, "replica", 0, 65535, where);
  if (!r.ok()) return r.error();
  replica = *r;
  Result<int64_t> a = Int(j, "attempt", 0, kMaxAgentAttempt, where);
  if (!a.ok()) return a.error();
  attempt = *a;
  return Ok();
}

Result<ReplicaReport> ReplicaFromJson(const Json& j, size_t i) {
  const std::string where = At("replicas", i);
  ReplicaReport out;
  GP_RETURN_IF_ERROR(ReplicaKey(j, where, out.job, out.replica, out.attempt));
  Result<std::optional<std::string>> state = OptStr(j, "state", where);
  if (!state.ok()) return state.error();
  if (*state == "running") {
    out.state = ReplicaRunState::kRunning;
  } else if (*state == "exited") {
    out.state = ReplicaRunState::kExited;
  } else {
    return InvalidArgument("'" + where + "state' must be running or exited");
  }
  for (auto [key, field] : {std::pair{"exit_code", &out.exit_code}, std::pair{"signal", &out.signal}}) {
    Result<std::optional<int64_t>> v = OptInt(j, key, INT64_MIN, INT64_MAX, where);
    if (!v.ok()) return v.error();
    *field = *v;
  }
  Result<std::optional<bool>> fenced = OptBool(j, "fenced", where);
  if (!fenced.ok()) return fenced.error();
  out.fenced = fenced->value_or(false);
  return out;
}

Result<LogTailReport> LogFromJson(const Json& j, size_t i) {
  const std::string where = At("logs", i);
  LogTailReport out;
  GP_RETURN_IF_ERROR(ReplicaKey(j, where, out.job, out.replica, out.attempt));
  for (auto [key, field] : {std::pair{"stdout", &out.out}, std::pair{"stderr", &out.err}}) {
    Result<std::optional<std::string>> v = OptStr(j, key, where);
    if (!v.ok()) return v.error();
    *field = std::move(*v);
  }
  return out;
}

Result<HealthReport> HealthFromJson(const Json& j, size_t i) {
  const std::string where = At("health", i);
  GP_RETURN_IF_ERROR(IsObject(j, where));
  HealthReport out;
  Result<int64_t> gpu = Int(j, "gpu", 0, 15, where);
  if (!gpu.ok()) return gpu.error();
  out.gpu = *gpu;
  Result<std::string> kind = Str(j, "kind", where, 64);
  if (!kind.ok()) return kind.error();
  out.kind = *kind;
  for (auto [key, field] : {std::pair{"code", &out.code}, std::pair{"gpu_instance_id", &out.gpu_instance_id},
                            std::pair{"count", &out.count}, std::pair{"celsius", &out.celsius}}) {
    Result<std::optional<uint64_t>> v = OptUint(j, key, where);
    if (!v.ok()) return v.error();
    *field = *v;
  }
  return out;
}

Result<MigRefusalReport> RefusalFromJson(const Json& j, size_t i) {
  const std::string where = At("mig_errors", i);
  GP_RETURN_IF_ERROR(IsObject(j, where));
  MigRefusalReport out;
  Result<int64_t> gpu = Int(j, "gpu", 0, 15, where);
  if (!gpu.ok()) return gpu.error();
  out.gpu = *gpu;
  for (auto [key, field] : {std::pair{"layout", &out.layout}, std::pair{"error", &out.error}}) {
    Result<std::optional<std::string>> v = OptStr(j, key, where);
    if (!v.ok()) return v.error();
    *field = v->value_or("");
  }
  return out;
}

Json ReplicaToJson(const ReplicaReport& r) {
  Json e = {{"job", r.job}, {"replica", r.replica}, {"attempt", r.attempt},
            {"state", r.state == ReplicaRunState::kExited ? "exited" : "running"}};
  if (r.exit_code) e["exit_code"] = *r.exit_code;
  if (r.signal) e["signal"] = *r.signal;
  if (r.fenced) e["fenced"] = true;
  return e;
}

Json LogToJson(const LogTailReport& l) {
  Json e = {{"job", l.job}, {"replica", l.replica}, {"attempt", l.attempt}};
  if (l.out) e["stdout"] = *l.out;
  if (l.err) e["stderr"] = *l.err;
  return e;
}

Json HealthToJson(const HealthReport& h) {
  Json e = {{"gpu", h.gpu}, {"kind", h.kind}};
  if (h.code) e["code"] = *h.code;
  if (h.gpu_instance_id) e["gpu_instance_id"] = *h.gpu_instance_id;
  if (h.count) e["count"] = *h.count;
  if (h.celsius) e["celsius"] = *h.celsius;
  return e;
}

}  // namespace

std::string Encode(const HeartbeatRequest& r) {
  Json body = {{"replicas", Json::array()}, {"logs", Json::array()}, {"health", Json::array()},
               {"gpus", Json::array()}, {"mig_errors", Json::array()}};
  for (const ReplicaReport& e : r.replicas) body["replicas"].push_back(ReplicaToJson(e));
  for (const LogTailReport& e : r.logs) body["logs"].push_back(LogToJson(e));
  for (const HealthReport& e : r.health) body["health"].push_back(HealthToJson(e));
  for (const GpuReport& e : r.gpus) body["gpus"].push_back(GpuToJson(e));
  for (const MigRefusalReport& e : r.mig_errors) {
    body["mig_errors"].push_back({{"gpu", e.gpu}, {"layout", e.layout}, {"error", e.error}});
  }
  return DumpAny(body);
}

Result<HeartbeatRequest> DecodeHeartbeatRequest(std::string_view body) {
  Result<Json> parsed = ParseObject(body, kHeartbeatNeeds);
  if (!parsed.ok()) return parsed.error();
  const Json& j = *parsed;
  HeartbeatRequest out;
  GP_RETURN_IF_ERROR(ReadList(j, "replicas", ReplicaFromJson, out.replicas, nullptr));
  GP_RETURN_IF_ERROR(ReadList(j, "logs", LogFromJson, out.logs, &out.skipped));
  GP_RETURN_IF_ERROR(ReadList(j, "health", HealthFromJson, out.health, &out.skipped));
  auto gpu = [](const Json& g, size_t i) { return GpuFromJson(g, i, /*index_required=*/true, /*uuid_required=*/false); };
  GP_RETURN_IF_ERROR(ReadList(j, "gpus", gpu, out.gpus, nullptr));
  GP_RETURN_IF_ERROR(ReadList(j, "mig_errors", RefusalFromJson, out.mig_errors, &out.skipped));
  return out;
}

}  // namespace gpupool
