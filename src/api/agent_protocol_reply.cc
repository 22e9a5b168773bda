// The heartbeat reply's codec (agent_protocol.h): every entry read on its own, a bad one dropped
// with its reason in `skipped` (acceptance 3).
#include "api/agent_protocol.h"
#include "api/agent_protocol_fields.h"

namespace gpupool {

using namespace decode_internal;

namespace {

// The job id of a reply entry: a non-empty string, or an integer read as its decimal text.
Result<std::string> JobText(const Json& j, const std::string& where) {
  auto it = j.find("job");
  if (it != j.end() && it->is_string() && !it->get<std::string>().empty()) return it->get<std::string>();
  if (it != j.end() && it->is_number_unsigned()) return std::to_string(it->get<uint64_t>());
  if (it != j.end() && it->is_number_integer()) return std::to_string(it->get<int64_t>());
  return InvalidArgument("'" + where + "job' must be a job id");
}

// The (job, replica) every entry names.
Status EntryKey(const Json& j, const std::string& where, std::string& job, int64_t& replica) {
  GP_RETURN_IF_ERROR(IsObject(j, where));
  Result<std::string> jid = JobText(j, where);
  if (!jid.ok()) return jid.error();
  job = *jid;
  Result<int64_t> r = Int(j, "replica", 0, INT64_MAX, where);
  if (!r.ok()) return r.error();
  replica = *r;
  return Ok();
}

Status StartCommand(const Json& s, ReplicaStart& out) {
  auto c = s.find("command");
  if (c == s.end() || !c->is_array() || c->empty()) return InvalidArgument("'command' must be a non-empty list of strings");
  for (const Json& a : *c) {
    if (!a.is_string()) return InvalidArgument("'command' must be a list of strings");
    out.command.push_back(a.get<std::string>());
  }
  if (auto d = s.find("devices"); d != s.end()) {
    if (!d->is_array()) return InvalidArgument("'devices' must be a list of UUIDs");
    for (const Json& u : *d) {
      if (!u.is_string()) return InvalidArgument("'devices' must be a list of UUIDs");
      out.devices.push_back(u.get<std::string>());
    }
  }
  if (auto e = s.find("env"); e != s.end()) {
    if (!e->is_object()) return InvalidArgument("'env' must be an object of strings");
    for (const auto& [k, v] : e->items()) {
      if (!v.is_string()) return InvalidArgument("environment variable " + k + " is not a string");
      out.env[k] = v.get<std::string>();
    }
  }
  return Ok();
}

// What a start asks beyond its command: user, fence grace, cgroup limits, MPS shares.
Status StartLimits(const Json& s, ReplicaStart& out) {
  Result<std::optional<std::string>> tenant = OptStr(s, "tenant", "");
  if (!tenant.ok()) return tenant.error();
  out.tenant = tenant->value_or("");
  Result<std::optional<Duration>> grace = OptSeconds(s, "grace_s", "");
  if (!grace.ok()) return grace.error();
  out.grace = *grace;
  struct Field {
    const char* key;
    int64_t lo, hi;
    std::optional<int64_t>* out;
  };
  for (const Field& f : {Field{"cpu_milli", INT64_MIN, INT64_MAX, &out.cpu_milli},
                         Field{"memory_mib", INT64_MIN, INT64_MAX, &out.memory_mib},
                         Field{"mps_active_thread_percentage", 1, 100, &out.mps_active_thread_percentage},
                         Field{"mps_pinned_memory_mib", 1, INT64_MAX, &out.mps_pinned_memory_mib}}) {
    Result<std::optional<int64_t>> v = OptInt(s, f.key, f.lo, f.hi, "");
    if (!v.ok()) return v.error();
    *f.out = *v;
  }
  return Ok();
}

Result<ReplicaStart> StartFromJson(const Json& s, size_t i) {
  const std::string where = At("start", i);
  ReplicaStart out;
  GP_RETURN_IF_ERROR(EntryKey(s, where, out.job, out.replica));
  Result<int64_t> attempt = Int(s, "attempt", 0, INT64_MAX, where);
  if (!attempt.ok()) return attempt.error();
  out.attempt = *attempt;
  // Named well enough to report: what else is wrong is the replica's failed start.
  Status st = StartCommand(s, out);
  if (st.ok()) st = StartLimits(s, out);
  if (!st.ok()) out.error = st.error().message;
  return out;
}

Result<ReplicaStop> StopFromJson(const Json& s, size_t i) {
  const std::string where = At("stop", i);
  ReplicaStop out;
  GP_RETURN_IF_ERROR(EntryKey(s, where, out.job, out.replica));
  Result<std::optional<int64_t>> attempt = OptInt(s, "attempt", 0, INT64_MAX, where);
  if (!attempt.ok()) return attempt.error();
  out.attempt = *attempt;
  Result<std::optional<Duration>> grace = OptSeconds(s, "grace_s", where);
  if (!grace.ok()) return grace.error();
  out.grace = *grace;
  return out;
}

Result<ReplicaForget> ForgetFromJson(const Json& s, size_t i) {
  const std::string where = At("forget", i);
  ReplicaForget out;
  GP_RETURN_IF_ERROR(EntryKey(s, where, out.job, out.replica));
  Result<std::optional<int64_t>> attempt = OptInt(s, "attempt", 0, INT64_MAX, where);
  if (!attempt.ok()) return attempt.error();
  out.attempt = *attempt;
  return out;
}

Result<MigTarget> MigFromJson(const Json& m, size_t i) {
  const std::string where = At("mig", i);
  GP_RETURN_IF_ERROR(IsObject(m, where));
  MigTarget out;
  Result<int64_t> gpu = Int(m, "gpu", 0, INT64_MAX, where);
  if (!gpu.ok()) return gpu.error();
  out.gpu = *gpu;
  Result<std::optional<std::string>> layout = OptStr(m, "layout", where);
  if (!layout.ok()) return layout.error();
  if (!*layout) return InvalidArgument("missing field '" + where + "layout'");
  out.layout = **layout;
  return out;
}

Json StartToJson(const ReplicaStart& s) {
  Json e = {{"job", s.job}, {"replica", s.replica}, {"attempt", s.attempt}, {"command", s.command},
            {"tenant", s.tenant}, {"devices", s.devices}, {"env", Json::object()}};
  for (const auto& [k, v] : s.env) e["env"][k] = v;
  if (s.grace) e["grace_s"] = SecondsJson(*s.grace);
  if (s.cpu_milli) e["cpu_milli"] = *s.cpu_milli;
  if (s.memory_mib) e["memory_mib"] = *s.memory_mib;
  if (s.mps_active_thread_percentage) e["mps_active_thread_percentage"] = *s.mps_active_thread_percentage;
  if (s.mps_pinned_memory_mib) e["mps_pinned_memory_mib"] = *s.mps_pinned_memory_mib;
  return e;
}

}  // namespace

std::string Encode(const HeartbeatReply& r) {
  Json body = {{"start", Json::array()}, {"stop", Json::array()}, {"forget", Json::array()}, {"mig", Json::array()}};
  for (const ReplicaStart& s : r.start) body["start"].push_back(StartToJson(s));
  for (const ReplicaStop& s : r.stop) {
    Json e = {{"job", s.job}, {"replica", s.replica}};
    if (s.attempt) e["attempt"] = *s.attempt;
    if (s.grace) e["grace_s"] = SecondsJson(*s.grace);
    body["stop"].push_back(std::move(e));
  }
  for (const ReplicaForget& f : r.forget) {
    Json e = {{"job", f.job}, {"replica", f.replica}};
    if (f.attempt) e["attempt"] = *f.attempt;
    body["forget"].push_back(std::move(e));
  }
  for (const MigTarget& m : r.mig) body["mig"].push_back({{"gpu", m.gpu}, {"layout", m.layout}});
  if (r.lease_ms) body["lease_ms"] = *r.lease_ms;
  if (r.epoch) body["epoch"] = *r.epoch;
  if (r.condition) body["condition"] = *r.condition;
  return DumpAny(body);
}

Result<HeartbeatReply> DecodeHeartbeatReply(std::string_view body) {
  Result<Json> parsed = ParseReplyObject(body);
  if (!parsed.ok()) return parsed.error();
  const Json& j = *parsed;
  HeartbeatReply out;
  std::vector<std::string>* skipped = &out.skipped;
  // Lenient: none of these fails (a field that is not a list is said in `skipped`).
  (void)ReadList(j, "start", StartFromJson, out.start, skipped, /*lenient_list=*/true);
  (void)ReadList(j, "stop", StopFromJson, out.stop, skipped, true);
  (void)ReadList(j, "forget", ForgetFromJson, out.forget, skipped, true);
  (void)ReadList(j, "mig", MigFromJson, out.mig, skipped, true);
  if (Result<std::optional<int64_t>> lease = PositiveMillis(j, "lease_ms"); lease.ok()) {
    out.lease_ms = *lease;
  } else {
    out.skipped.push_back(lease.error().message);
  }
  if (Result<std::optional<int64_t>> epoch = PositiveInteger(j, "epoch"); epoch.ok()) {
    out.epoch = *epoch;
  } else {
    out.skipped.push_back(epoch.error().message);
  }
  if (Result<std::optional<std::string>> c = OptStr(j, "condition", ""); c.ok()) {
    out.condition = *c;
  } else {
    out.skipped.push_back(c.error().message);
  }
  return out;
}

}  // namespace gpupool
