// The registration's codecs (agent_protocol.h): the request, its reply, and the GPU report that
// heartbeats share.
#include <set>

#include "api/agent_protocol.h"
#include "api/agent_protocol_fields.h"
#include "model/node.h"

namespace gpupool::decode_internal {

Json GpuToJson(const GpuReport& g) {
  Json entry = {{"index", g.index}, {"uuid", g.uuid}, {"mig", g.mig}};
  if (!g.mig) return entry;
  Json inst = Json::array();
  for (const MigInstanceReport& i : g.instances) {
    inst.push_back({{"start", i.start}, {"size", i.size}, {"profile", i.profile}, {"uuid", i.uuid}});
  }
  entry["instances"] = std::move(inst);
  return entry;
}

namespace {

Result<MigInstanceReport> InstanceFromJson(const Json& in, const std::string& where) {
  GP_RETURN_IF_ERROR(IsObject(in, where));
  MigInstanceReport out;
  Result<int64_t> start = Int(in, "start", 0, 7, where);
  if (!start.ok()) return start.error();
  out.start = *start;
  Result<std::optional<int64_t>> size = OptInt(in, "size", 0, 8, where);
  if (!size.ok()) return size.error();
  out.size = size->value_or(0);
  Result<std::string> profile = Str(in, "profile", where, 64);
  if (!profile.ok()) return profile.error();
  out.profile = *profile;
  Result<std::optional<std::string>> uuid = OptStr(in, "uuid", where);
  if (!uuid.ok()) return uuid.error();
  out.uuid = uuid->value_or("");
  if (out.uuid.size() > 128) return InvalidArgument("'" + where + "uuid' must be at most 128 characters");
  return out;
}

}  // namespace

Result<GpuReport> GpuFromJson(const Json& g, size_t i, bool index_required, bool uuid_required) {
  const std::string where = At("gpus", i);
  GP_RETURN_IF_ERROR(IsObject(g, where));
  GpuReport out;
  out.index = static_cast<int64_t>(i);
  if (index_required || g.contains("index")) {
    Result<int64_t> index = Int(g, "index", 0, 15, where);
    if (!index.ok()) return index.error();
    out.index = *index;
  }
  Result<std::optional<std::string>> uuid = OptStr(g, "uuid", where);
  if (!uuid.ok()) return uuid.error();
  out.uuid = uuid->value_or("");
  if ((uuid_required && out.uuid.empty()) || out.uuid.size() > 128) {
    return InvalidArgument("'" + where + "uuid' must be a GPU UUID (1..128 characters)");
  }
  Result<std::optional<bool>> mig = OptBool(g, "mig", where);
  if (!mig.ok()) return mig.error();
  out.mig = mig->value_or(false);
  if (!out.mig) return out;  // a GPU without MIG has no instances to read
  Result<const Json*> inst = OptList(g, "instances", where);
  if (!inst.ok()) return inst.error();
  for (size_t k = 0; *inst != nullptr && k < (*inst)->size(); ++k) {
    Result<MigInstanceReport> in = InstanceFromJson((**inst)[k], where + At("instances", k));
    if (!in.ok()) return in.error();
    out.instances.push_back(std::move(*in));
  }
  return out;
}

}  // namespace gpupool::decode_internal

namespace gpupool {

using namespace decode_internal;

namespace {

constexpr const char* kRegisterNeeds =
    "a registration needs 'node', 'flavor' and 'gpus' ([{'uuid', 'mig', 'instances'}])";

// reported_labels: at most 16 key=value labels under kAgentLabelPrefix, sorted.
Result<std::optional<std::vector<std::string>>> ReportedLabels(const Json& j) {
  auto rl = j.find("reported_labels");
  if (rl == j.end()) return std::optional<std::vector<std::string>>();
  if (!rl->is_array() || rl->size() > 16) return InvalidArgument("'reported_labels' must list at most 16 key=value");
  std::vector<std::string> reported;
  for (const Json& l : *rl) {
    const std::string text = l.is_string() ? l.get<std::string>() : "";
    if (text.rfind(kAgentLabelPrefix, 0) != 0 || text.find('=') == std::string::npos || text.size() > 320) {
      return InvalidArgument("'reported_labels' must be key=value labels under " + std::string(kAgentLabelPrefix));
    }
    reported.push_back(text);
  }
  std::sort(reported.begin(), reported.end());
  return std::optional<std::vector<std::string>>(std::move(reported));
}

Result<std::optional<AcceptanceReport>> Acceptance(const Json& j) {
  auto a = j.find("acceptance");
  if (a == j.end()) return std::optional<AcceptanceReport>();
  if (!a->is_object() || !a->contains("passed") || !(*a)["passed"].is_boolean()) {
    return InvalidArgument("'acceptance' must be {\"passed\": bool, \"output\": text}");
  }
  Result<std::optional<std::string>> output = OptStr(*a, "output", "acceptance.");
  if (!output.ok()) return output.error();
  return std::optional<AcceptanceReport>(AcceptanceReport{(*a)["passed"].get<bool>(), output->value_or("")});
}

Status RegisterGpus(const Json& j, RegisterRequest& out) {
  auto gpus = j.find("gpus");
  if (gpus == j.end() || !gpus->is_array() || gpus->empty() || gpus->size() > 16) {
    return InvalidArgument("'gpus' must list 1 to 16 GPUs");
  }
  for (size_t i = 0; i < gpus->size(); ++i) {
    Result<GpuReport> g = GpuFromJson((*gpus)[i], i, /*index_required=*/false, /*uuid_required=*/true);
    if (!g.ok()) return g.error();
    out.gpus.push_back(std::move(*g));
  }
  return Ok();
}

}  // namespace

Result<ReportedMig> MigOfReport(const GpuModel& model, const GpuReport& g, size_t i) {
  ReportedMig out;
  std::string layout;
  for (const MigInstanceReport& in : g.instances) {
    layout += (layout.empty() ? "" : ",") + in.profile + "@" + std::to_string(in.start);
    if (!in.uuid.empty()) out.uuid[static_cast<int>(in.start)] = in.uuid;
  }
  Result<MigLayout> l = ParseLayout(model, layout);
  if (!l.ok()) return InvalidArgument("gpus[" + std::to_string(i) + "]: " + l.error().message);
  out.layout = *l;
  return out;
}

std::string Encode(const RegisterRequest& r) {
  Json gpus = Json::array();
  for (const GpuReport& g : r.gpus) gpus.push_back(GpuToJson(g));
  Json body = {{"node", r.node}, {"flavor", r.flavor}, {"gpus", std::move(gpus)}};
  if (r.labels) body["labels"] = *r.labels;
  if (r.reported_labels) body["reported_labels"] = *r.reported_labels;
  if (r.cpu_milli) body["cpu_milli"] = *r.cpu_milli;
  if (r.memory_mib) body["memory_mib"] = *r.memory_mib;
  if (r.acceptance) body["acceptance"] = {{"passed", r.acceptance->passed}, {"output", r.acceptance->output}};
  return DumpAny(body);
}

Result<RegisterRequest> DecodeRegisterRequest(std::string_view body) {
  Result<Json> parsed = ParseObject(body, kRegisterNeeds);
  if (!parsed.ok()) return parsed.error();
  const Json& j = *parsed;
  GP_RETURN_IF_ERROR(OnlyFields(j, {"node", "flavor", "gpus", "labels", "reported_labels", "cpu_milli", "memory_mib",
                                    "acceptance"}, ""));
  RegisterRequest out;
  auto node = j.find("node");
  if (node == j.end() || !node->is_string() || node->get<std::string>().empty() || node->get<std::string>().size() > 63) {
    return InvalidArgument("'node' must be a node name (1..63 characters)");
  }
  out.node = node->get<std::string>();
  Result<std::string> flavor = Str(j, "flavor", "", 64);
  if (!flavor.ok()) return flavor.error();
  out.flavor = *flavor;
  GP_RETURN_IF_ERROR(RegisterGpus(j, out));
  Result<std::optional<std::vector<std::string>>> labels = OptStrings(j, "labels", "key=value");
  if (!labels.ok()) return labels.error();
  out.labels = std::move(*labels);
  Result<std::optional<std::vector<std::string>>> reported = ReportedLabels(j);
  if (!reported.ok()) return reported.error();
  out.reported_labels = std::move(*reported);
  for (auto [key, field] : {std::pair{"cpu_milli", &out.cpu_milli}, std::pair{"memory_mib", &out.memory_mib}}) {
    Result<std::optional<int64_t>> v = OptInt(j, key, INT64_MIN, INT64_MAX, "");
    if (!v.ok()) return v.error();
    *field = *v;
  }
  Result<std::optional<AcceptanceReport>> acceptance = Acceptance(j);
  if (!acceptance.ok()) return acceptance.error();
  out.acceptance = std::move(*acceptance);
  return out;
}

std::string Encode(const RegisterReply& r) {
  Json body = {{"node", r.node}};
  if (r.condition) body["condition"] = *r.condition;
  if (r.heartbeat_interval_ms) body["heartbeat_interval_ms"] = *r.heartbeat_interval_ms;
  if (r.heartbeat_timeout_ms) body["heartbeat_timeout_ms"] = *r.heartbeat_timeout_ms;
  if (r.lease_ms) body["lease_ms"] = *r.lease_ms;
  if (r.epoch) body["epoch"] = *r.epoch;
  return DumpAny(body);
}

Result<RegisterReply> DecodeRegisterReply(std::string_view body) {
  Result<Json> parsed = ParseReplyObject(body);
  if (!parsed.ok()) return parsed.error();
  const Json& j = *parsed;
  RegisterReply out;
  if (Result<std::optional<std::string>> node = OptStr(j, "node", ""); node.ok()) {
    out.node = node->value_or("");
  } else {
    out.skipped.push_back(node.error().message);
  }
  if (Result<std::optional<std::string>> c = OptStr(j, "condition", ""); c.ok()) {
    out.condition = *c;
  } else {
    out.skipped.push_back(c.error().message);
  }
  for (auto [key, field] : {std::pair{"heartbeat_interval_ms", &out.heartbeat_interval_ms},
                            std::pair{"heartbeat_timeout_ms", &out.heartbeat_timeout_ms},
                            std::pair{"lease_ms", &out.lease_ms}}) {
    Result<std::optional<int64_t>> v = PositiveMillis(j, key);
    if (v.ok()) {
      *field = *v;
    } else {
      out.skipped.push_back(v.error().message);
    }
  }
  if (Result<std::optional<int64_t>> epoch = PositiveInteger(j, "epoch"); epoch.ok()) {
    out.epoch = *epoch;
  } else {
    out.skipped.push_back(epoch.error().message);
  }
  return out;
}

}  // namespace gpupool
