// POST /v1/jobs: the job request, its node selector and its priority class.
#include "api/decode.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "api/decode_fields.h"

namespace gpupool {

using namespace decode_internal;

namespace {

// node_selector: [{"key", "operator": In|NotIn|Exists|DoesNotExist, "values"}], at most 16, each
// In or Exists within the tenant's allowed_labels when it has any.
Result<std::vector<LabelRequirement>> NodeSelector(const Json& j, const Tenant& tenant) {
  const Json& sel = j["node_selector"];
  if (!sel.is_array() || sel.size() > 16) return InvalidArgument("'node_selector' must be a list of at most 16 requirements");
  std::vector<LabelRequirement> out;
  for (size_t i = 0; i < sel.size(); ++i) {
    const std::string where = "node_selector[" + std::to_string(i) + "]";
    const Json& r = sel[i];
    if (!r.is_object()) return InvalidArgument("'" + where + "' must be an object");
    GP_RETURN_IF_ERROR(OnlyFields(r, {"key", "operator", "values"}, where + "."));
    LabelRequirement req;
    Result<std::string> key = Str(r, "key", where + ".", 253);
    if (!key.ok()) return key.error();
    GP_RETURN_IF_ERROR(CheckLabelPart(*key, true, where));
    req.key = *key;
    Result<std::string> op = Str(r, "operator", where + ".", 16);
    if (!op.ok()) return op.error();
    bool known = false;
    for (SelectorOp o : {SelectorOp::kIn, SelectorOp::kNotIn, SelectorOp::kExists, SelectorOp::kDoesNotExist}) {
      if (SelectorOpName(o) == *op) {
        req.op = o;
        known = true;
      }
    }
    if (!known) return InvalidArgument("'" + where + ".operator' must be In, NotIn, Exists or DoesNotExist");
    const bool with_values = req.op == SelectorOp::kIn || req.op == SelectorOp::kNotIn;
    if (with_values) {
      if (!r.contains("values") || !r["values"].is_array() || r["values"].empty() || r["values"].size() > 64) {
        return InvalidArgument("'" + where + ".values' must list 1 to 64 values for " + *op);
      }
      for (const Json& v : r["values"]) {
        if (!v.is_string()) return InvalidArgument("'" + where + ".values' must be strings");
        GP_RETURN_IF_ERROR(CheckLabelPart(v.get<std::string>(), false, where));
        req.values.push_back(v.get<std::string>());
      }
      std::sort(req.values.begin(), req.values.end());
      req.values.erase(std::unique(req.values.begin(), req.values.end()), req.values.end());
    } else if (r.contains("values") && !(r["values"].is_array() && r["values"].empty())) {
      return InvalidArgument("'" + where + "': " + *op + " takes no values");
    }
    // The tenant's whitelist: what In and Exists may ask for.
    if (!tenant.allowed_labels.empty() && (req.op == SelectorOp::kIn || req.op == SelectorOp::kExists)) {
      const auto allowed = [&](const std::string& label) {
        return std::binary_search(tenant.allowed_labels.begin(), tenant.allowed_labels.end(), label);
      };
      const auto key_allowed = [&] {
        return std::any_of(tenant.allowed_labels.begin(), tenant.allowed_labels.end(),
                           [&](const std::string& l) { return l.rfind(req.key + "=", 0) == 0; });
      };
      for (const std::string& v : req.values) {
        if (!allowed(req.key + "=" + v)) {
          return Error{ErrorCode::kPermissionDenied, "tenant " + tenant.name + " may not select nodes by " + req.key + "=" + v};
        }
      }
      if (req.op == SelectorOp::kExists && !key_allowed()) {
        return Error{ErrorCode::kPermissionDenied, "tenant " + tenant.name + " may not select nodes by " + req.key};
      }
    }
    out.push_back(std::move(req));
  }
  return out;
}

// The job's priority_class, or the class marked default when it names none.
Result<PriorityClassId> JobPriorityClass(const State& state, const Json& j) {
  if (!j.contains("priority_class")) {
    std::string names;
    for (const PriorityClass& pc : state.priority_classes()) {
      if (pc.is_default) return pc.id;
      names += (names.empty() ? "" : ", ") + pc.name;
    }
    return InvalidArgument("'priority_class' is required: no class is marked default (" + names + ")");
  }
  Result<std::string> pc = Str(j, "priority_class", "");
  if (!pc.ok()) return pc.error();
  Result<PriorityClassId> pcid = state.FindPriorityClass(*pc);
  if (!pcid.ok()) return InvalidArgument(pcid.error().message);
  return *pcid;
}

// resources.flavor (one GPU model) or resources.flavors (1 to kMaxFlavorsPerJob, in order of
// preference; the job runs on the first that has room, JobSpec::flavors).
Status JobFlavors(const State& state, const Json& res, JobSpec& spec) {
  if (res.contains("flavor") == res.contains("flavors")) {
    return InvalidArgument("'resources' needs one of 'flavor' (a GPU model) or 'flavors' (a list, by preference)");
  }
  if (res.contains("flavor")) {
    Result<std::string> flavor = Str(res, "flavor", "resources.");
    if (!flavor.ok()) return flavor.error();
    Result<FlavorId> f = state.catalogue().Find(*flavor);
    if (!f.ok()) return InvalidArgument(f.error().message);
    spec.shape.flavor = *f;
    return Ok();
  }
  const Json& list = res["flavors"];
  if (!list.is_array() || list.empty() || list.size() > kMaxFlavorsPerJob) {
    return InvalidArgument("'resources.flavors' must list 1 to " + std::to_string(kMaxFlavorsPerJob) + " GPU models");
  }
  for (const Json& name : list) {
    if (!name.is_string()) return InvalidArgument("'resources.flavors' must list GPU model names");
    Result<FlavorId> f = state.catalogue().Find(name.get<std::string>());
    if (!f.ok()) return InvalidArgument(f.error().message);
    spec.flavors.push_back(*f);
  }
  spec.shape.flavor = spec.flavors[0];
  return Ok();
}

// resources: exactly one of gpus, mig_profile, gpu_fraction (with memory_gb), of one flavor or
// a list of them.
Status JobResources(const State& state, const Json& j, JobSpec& spec) {
  auto res = j.find("resources");
  if (res == j.end() || !res->is_object()) return InvalidArgument("'resources' must be an object");
  GP_RETURN_IF_ERROR(OnlyFields(*res, {"flavor", "flavors", "gpus", "mig_profile", "gpu_fraction", "memory_gb"},
                                "resources."));
  GP_RETURN_IF_ERROR(JobFlavors(state, *res, spec));
  const FlavorId* f = &spec.shape.flavor;
  const std::string* flavor = &state.catalogue().model(*f).name;
  const int forms = res->contains("gpus") + res->contains("mig_profile") + res->contains("gpu_fraction");
  if (forms != 1) {
    return InvalidArgument("'resources' needs exactly one of 'gpus', 'mig_profile', 'gpu_fraction'");
  }
  if (res->contains("gpus")) {
    Result<int64_t> g = Int(*res, "gpus", 0, 16, "resources.");  // 0: CPU and memory only
    if (!g.ok()) return g.error();
    spec.shape.kind = ShapeKind::kWholeGpus;
    spec.shape.gpus = static_cast<uint8_t>(*g);
  } else if (res->contains("mig_profile")) {
    Result<std::string> p = Str(*res, "mig_profile", "resources.", 32);
    if (!p.ok()) return p.error();
    const int idx = state.catalogue().model(*f).ProfileIndexByName(*p);
    if (idx < 0) return InvalidArgument("unknown MIG profile '" + *p + "' for " + *flavor);
    spec.shape.kind = ShapeKind::kMigProfile;
    spec.shape.mig_profile = static_cast<uint8_t>(idx);
  } else {
    const Json& fr = (*res)["gpu_fraction"];
    if (!fr.is_number()) return InvalidArgument("'resources.gpu_fraction' must be a number");
    const double x = fr.get<double>();
    const double milli = std::round(x * 1000);
    if (!(x > 0 && x <= 1) || std::fabs(milli - x * 1000) > 1e-6) {
      return InvalidArgument("'resources.gpu_fraction' must be in (0, 1] in steps of 0.001");
    }
    Result<int64_t> mem = Int(*res, "memory_gb", 1, 1024, "resources.");
    if (!mem.ok()) return mem.error();
    spec.shape.kind = ShapeKind::kGpuFraction;
    spec.shape.milli = static_cast<uint16_t>(milli);
    spec.shape.gpu_memory_mib = static_cast<uint32_t>(*mem * 1024);
  }
  return Ok();
}

// command: 1 to 256 strings of at most 4096 characters, 64 KiB in all.
Status JobCommand(const Json& j, JobSpec& spec) {
  auto cmd = j.find("command");
  if (cmd == j.end() || !cmd->is_array() || cmd->empty() || cmd->size() > 256) {
    return InvalidArgument("'command' must be a non-empty array of at most 256 strings");
  }
  size_t command_bytes = 0;
  for (const Json& a : *cmd) {
    if (!a.is_string() || a.get<std::string>().size() > 4096) {
      return InvalidArgument("'command' items must be strings of at most 4096 characters");
    }
    spec.command.push_back(a.get<std::string>());
    command_bytes += spec.command.back().size();
  }
  // Every job's command lives in memory and in the journal: bounded per job.
  if (command_bytes > kMaxCommandBytes) {
    return InvalidArgument("'command' holds " + std::to_string(command_bytes) + " bytes; at most " +
                           std::to_string(kMaxCommandBytes) + " (64 KiB) are allowed (put long inputs in a file)");
  }
  return Ok();
}

Status JobTopology(const Json& j, JobSpec& spec) {
  if (auto t = j.find("topology"); t != j.end()) {
    if (!t->is_object()) return InvalidArgument("'topology' must be an object");
    GP_RETURN_IF_ERROR(OnlyFields(*t, {"level", "required"}, "topology."));
    Result<std::string> level = Str(*t, "level", "topology.", 32);
    if (!level.ok()) return level.error();
    bool known = false;
    for (TopologyLevel l : {TopologyLevel::kNode, TopologyLevel::kNvlinkDomain, TopologyLevel::kBlock}) {
      if (TopologyLevelName(l) == *level) {
        spec.topology.level = l;
        known = true;
      }
    }
    if (!known) return InvalidArgument("'topology.level' must be node, nvlink-domain or block");
    if (auto r = t->find("required"); r != t->end()) {
      if (!r->is_boolean()) return InvalidArgument("'topology.required' must be a boolean");
      spec.topology.required = r->get<bool>();
    }
  }
  return Ok();
}

// cpu_milli, memory_mib, checkpointable, reservation.
Status JobExtras(const Json& j, JobSpec& spec) {
  for (const char* key : {"cpu_milli", "memory_mib"}) {
    if (j.contains(key)) {
      Result<int64_t> v = Int(j, key, 0, int64_t{1} << 40, "");
      if (!v.ok()) return v.error();
      (std::string(key) == "cpu_milli" ? spec.shape.cpu_milli : spec.shape.memory_mib) = *v;
    }
  }
  if (auto c = j.find("checkpointable"); c != j.end()) {
    if (!c->is_boolean()) return InvalidArgument("'checkpointable' must be a boolean");
    spec.checkpointable = c->get<bool>();
  }
  if (j.contains("reservation")) {
    // The id as the API shows it ("12"); another tenant's reservation is as unknown as a
    // missing one (ValidateSpec).
    Result<std::string> rid = Str(j, "reservation", "", 19);
    if (!rid.ok()) return rid.error();
    if (rid->find_first_not_of("0123456789") != std::string::npos || (*rid)[0] == '0') {
      return InvalidArgument("'reservation' must be a reservation id such as \"12\"");
    }
    spec.reservation = ReservationId(std::stoull(*rid));
  }
  return Ok();
}

}  // namespace

Result<JobSpec> DecodeJobRequest(const State& state, const Principal& caller, std::string_view body) {
  Result<Json> parsed = ParseObject(body, kJobNeeds);
  if (!parsed.ok()) return parsed.error();
  const Json& j = *parsed;
  GP_RETURN_IF_ERROR(OnlyFields(j, {"tenant", "name", "priority_class", "replicas", "resources",
                                     "duration_estimate_s", "command", "topology", "cpu_milli",
                                     "memory_mib", "checkpointable", "reservation", "node_selector"}, ""));
  JobSpec spec;
  Result<std::string> tenant = Str(j, "tenant", "");
  if (!tenant.ok()) return tenant.error();
  Result<TenantId> tid = state.FindTenant(*tenant);
  if (!tid.ok() || !caller.Sees(*tid)) return NotFound("unknown tenant '" + *tenant + "'");
  spec.tenant = *tid;
  Result<std::string> name = Str(j, "name", "");
  if (!name.ok()) return name.error();
  spec.name = *name;
  Result<PriorityClassId> pcid = JobPriorityClass(state, j);
  if (!pcid.ok()) return pcid.error();
  spec.priority_class = *pcid;
  if (j.contains("replicas")) {  // one replica unless asked
    Result<int64_t> replicas = Int(j, "replicas", 1, 1024, "");
    if (!replicas.ok()) return replicas.error();
    spec.replicas = static_cast<uint16_t>(*replicas);
  }
  // Without an estimate, the tenant's default_duration_s (State::ValidateSpec fills it in).
  const Tenant& ten = state.tenant(spec.tenant);
  if (j.contains("node_selector")) {
    Result<std::vector<LabelRequirement>> sel = NodeSelector(j, ten);
    if (!sel.ok()) return sel.error();
    spec.node_selector = std::move(*sel);
  }
  if (j.contains("duration_estimate_s")) {
    Result<int64_t> dur = Int(j, "duration_estimate_s", 1, 365 * 86400, "");
    if (!dur.ok()) return dur.error();
    spec.estimated_duration = Duration::Seconds(*dur);
  } else if (ten.limits.default_duration.is_infinite()) {
    return InvalidArgument("'duration_estimate_s' is required: tenant " + ten.name +
                           " has no default_duration_s (an admin sets one in the tenant's limits)");
  }
  GP_RETURN_IF_ERROR(JobResources(state, j, spec));
  GP_RETURN_IF_ERROR(JobCommand(j, spec));
  GP_RETURN_IF_ERROR(JobTopology(j, spec));
  GP_RETURN_IF_ERROR(JobExtras(j, spec));
  return state.ValidateSpec(std::move(spec));
}

Result<nlohmann::json> ParseTokenRequest(std::string_view body) { return ParseObject(body, kTokenNeeds); }

}  // namespace gpupool
