#include "store/codec.h"

namespace gpupool {
namespace {

// Reads a field with a type check; a malformed record is an error, never an exception.
template <class T>
Result<T> Get(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return InvalidArgument(std::string("record lacks '") + key + "'");
  try {
    return it->get<T>();
  } catch (const Json::exception&) {
    return InvalidArgument(std::string("record field '") + key + "' has the wrong type");
  }
}

Json Placement(const std::vector<ReplicaPlacement>& placement) {
  Json out = Json::array();
  for (const ReplicaPlacement& rp : placement) {
    Json grants = Json::array();
    for (const GpuGrant& g : rp.grants) {
      grants.push_back({g.gpu, g.mig_start, g.milli, g.memory_mib});
    }
    out.push_back({{"node", rp.node.value()}, {"grants", grants}});
  }
  return out;
}

Result<std::vector<ReplicaPlacement>> PlacementFrom(const Json& j) {
  std::vector<ReplicaPlacement> out;
  try {
    for (const Json& r : j) {
      ReplicaPlacement rp;
      rp.node = NodeId(r.at("node").get<uint32_t>());
      for (const Json& g : r.at("grants")) {
        rp.grants.push_back({g.at(0).get<uint16_t>(), g.at(1).get<int8_t>(),
                             g.at(2).get<uint16_t>(), g.at(3).get<uint32_t>()});
      }
      out.push_back(std::move(rp));
    }
  } catch (const Json::exception&) {
    return InvalidArgument("malformed placement in record");
  }
  return out;
}

Result<SelectorOp> ParseSelectorOp(const std::string& name) {
  for (SelectorOp op : {SelectorOp::kIn, SelectorOp::kNotIn, SelectorOp::kExists, SelectorOp::kDoesNotExist}) {
    if (SelectorOpName(op) == name) return op;
  }
  return InvalidArgument("unknown node_selector operator '" + name + "'");
}

Json SpecToJson(const JobSpec& s) {
  Json j = {{"tenant", s.tenant.value()},
          {"name", s.name},
          {"priority_class", s.priority_class.value()},
          {"replicas", s.replicas},
          {"kind", static_cast<int>(s.shape.kind)},
          {"flavor", s.shape.flavor.value()},
          {"gpus", s.shape.gpus},
          {"mig_profile", s.shape.mig_profile},
          {"milli", s.shape.milli},
          {"gpu_memory_mib", s.shape.gpu_memory_mib},
          {"cpu_milli", s.shape.cpu_milli},
          {"memory_mib", s.shape.memory_mib},
          {"topology_level", static_cast<int>(s.topology.level)},
          {"topology_required", s.topology.required},
          {"estimated_ms", s.estimated_duration.millis()},
          {"command", s.command},
          {"checkpointable", s.checkpointable},
          {"reservation", s.reservation.valid() ? s.reservation.value() : 0}};
  if (!s.flavors.empty()) {
    Json flavors = Json::array();
    for (FlavorId f : s.flavors) flavors.push_back(f.value());
    j["flavors"] = flavors;
  }
  if (!s.node_selector.empty()) {
    Json sel = Json::array();
    for (const LabelRequirement& r : s.node_selector) {
      sel.push_back({{"key", r.key}, {"op", std::string(SelectorOpName(r.op))}, {"values", r.values}});
    }
    j["node_selector"] = sel;
  }
  return j;
}

Result<JobSpec> SpecFromJson(const Json& j) {
  try {
    JobSpec s;
    s.tenant = TenantId(j.at("tenant").get<uint32_t>());
    s.name = j.at("name").get<std::string>();
    s.priority_class = PriorityClassId(j.at("priority_class").get<uint16_t>());
    s.replicas = j.at("replicas").get<uint16_t>();
    s.shape.kind = static_cast<ShapeKind>(j.at("kind").get<int>());
    s.shape.flavor = FlavorId(j.at("flavor").get<uint16_t>());
    s.shape.gpus = j.at("gpus").get<uint8_t>();
    s.shape.mig_profile = j.at("mig_profile").get<uint8_t>();
    s.shape.milli = j.at("milli").get<uint16_t>();
    s.shape.gpu_memory_mib = j.at("gpu_memory_mib").get<uint32_t>();
    s.shape.cpu_milli = j.at("cpu_milli").get<int64_t>();
    s.shape.memory_mib = j.at("memory_mib").get<int64_t>();
    s.topology.level = static_cast<TopologyLevel>(j.at("topology_level").get<int>());
    s.topology.required = j.at("topology_required").get<bool>();
    s.estimated_duration = Duration::Millis(j.at("estimated_ms").get<int64_t>());
    s.command = j.at("command").get<std::vector<std::string>>();
    s.checkpointable = j.at("checkpointable").get<bool>();
    if (const uint64_t r = j.value("reservation", uint64_t{0}); r != 0) s.reservation = ReservationId(r);
    for (const Json& f : j.value("flavors", Json::array())) s.flavors.push_back(FlavorId(f.get<uint16_t>()));
    for (const Json& r : j.value("node_selector", Json::array())) {
      LabelRequirement req{r.at("key").get<std::string>(), SelectorOp::kIn, r.at("values").get<std::vector<std::string>>()};
      Result<SelectorOp> op = ParseSelectorOp(r.at("op").get<std::string>());
      if (!op.ok()) return op.error();
      req.op = *op;
      s.node_selector.push_back(std::move(req));
    }
    return s;
  } catch (const Json::exception&) {
    return InvalidArgument("malformed job spec in record");
  }
}

Result<PreemptKind> ParsePreemptKind(const std::string& name) {
  for (PreemptKind k : {PreemptKind::kReclaim, PreemptKind::kPriority, PreemptKind::kQueue}) {
    if (PreemptKindName(k) == name) return k;
  }
  return InvalidArgument("unknown preemption kind '" + name + "'");
}

Result<RequeueCause> ParseRequeueCause(const std::string& name) {
  for (int i = 0; i <= static_cast<int>(RequeueCause::kBudget); ++i) {
    if (RequeueCauseName(static_cast<RequeueCause>(i)) == name) return static_cast<RequeueCause>(i);
  }
  return InvalidArgument("unknown requeue cause '" + name + "'");
}

}  // namespace

Json TenantToJson(const State& s, const Tenant& t) {
  Json quotas = Json::object();
  for (const auto& [f, q] : t.quotas) {
    Json jq = {{"guaranteed_units", q.guaranteed.units()}};
    if (q.borrow_limit) jq["borrow_limit_units"] = q.borrow_limit->units();
    if (q.lend_limit) jq["lend_limit_units"] = q.lend_limit->units();
    quotas[s.catalogue().model(f).name] = jq;
  }
  Json j = {{"name", t.name},
          {"weight_milli", t.weight_milli},
          {"quotas", quotas},
          {"max_replicas", t.limits.max_replicas},
          {"max_job_units", t.limits.max_job_gpu_eq.units()},
          {"default_duration_ms", t.limits.default_duration.millis()},
          {"max_duration_ms", t.limits.max_duration.millis()},
          {"max_pending_jobs", t.limits.max_pending_jobs},
          {"allow_gpu_cotenancy", t.allow_gpu_cotenancy},
          {"required_labels", t.required_labels}};
  if (!t.allowed_labels.empty()) j["allowed_labels"] = t.allowed_labels;
  if (t.queue_policy) j["queue_policy"] = std::string(QueueOrderName(*t.queue_policy));
  return j;
}

Result<Tenant> TenantFromJson(const State& s, const Json& j) {
  try {
    Tenant t;
    t.name = j.at("name").get<std::string>();
    t.weight_milli = j.at("weight_milli").get<int64_t>();
    for (const auto& [flavor, q] : j.at("quotas").items()) {
      Result<FlavorId> f = s.catalogue().Find(flavor);
      if (!f.ok()) return f.error();
      FlavorQuota fq;
      fq.guaranteed = GpuEq::Units(q.at("guaranteed_units").get<int64_t>());
      if (q.contains("borrow_limit_units")) fq.borrow_limit = GpuEq::Units(q["borrow_limit_units"].get<int64_t>());
      if (q.contains("lend_limit_units")) fq.lend_limit = GpuEq::Units(q["lend_limit_units"].get<int64_t>());
      t.quotas[*f] = fq;
    }
    t.limits.max_replicas = j.at("max_replicas").get<uint16_t>();
    t.limits.max_job_gpu_eq = GpuEq::Units(j.at("max_job_units").get<int64_t>());
    t.limits.default_duration = Duration::Millis(j.at("default_duration_ms").get<int64_t>());
    t.limits.max_duration = Duration::Millis(j.at("max_duration_ms").get<int64_t>());
    t.limits.max_pending_jobs = j.value("max_pending_jobs", JobLimits::kDefaultMaxPendingJobs);  // older records: the default
    t.allow_gpu_cotenancy = j.at("allow_gpu_cotenancy").get<bool>();
    t.required_labels = j.at("required_labels").get<std::vector<std::string>>();
    t.allowed_labels = j.value("allowed_labels", std::vector<std::string>());
    if (j.contains("queue_policy")) {
      Result<QueueOrder> o = ParseQueueOrder(j["queue_policy"].get<std::string>());
      if (!o.ok()) return InvalidArgument("tenant record: " + o.error().message);
      t.queue_policy = *o;
    }
    return t;
  } catch (const Json::exception&) {
    return InvalidArgument("malformed tenant record");
  }
}

Json PriorityClassToJson(const PriorityClass& pc) {
  Json j = {{"name", pc.name}, {"value", pc.value}, {"preemptible", pc.preemptible},
            {"may_borrow", pc.may_borrow}, {"grace_ms", pc.grace_period.millis()}};
  if (pc.min_runtime) j["min_runtime_ms"] = pc.min_runtime->millis();
  if (pc.is_default) j["default"] = true;
  return j;
}

Result<PriorityClass> PriorityClassFromJson(const Json& j) {
  try {
    PriorityClass pc;
    pc.name = j.at("name").get<std::string>();
    pc.value = j.at("value").get<int32_t>();
    pc.preemptible = j.at("preemptible").get<bool>();
    pc.may_borrow = j.at("may_borrow").get<bool>();
    pc.grace_period = Duration::Millis(j.at("grace_ms").get<int64_t>());
    if (j.contains("min_runtime_ms")) pc.min_runtime = Duration::Millis(j.at("min_runtime_ms").get<int64_t>());
    pc.is_default = j.value("default", false);
    return pc;
  } catch (const Json::exception&) {
    return InvalidArgument("malformed priority class record");
  }
}

Json NodeToJson(const State& s, const Node& n) {
  const GpuModel& m = s.catalogue().model(n.flavor);
  Json gpus = Json::array();
  for (const Gpu& g : n.gpus) {
    Json gpu = {{"mode", std::string(GpuModeName(g.mode))},
                {"layout", ToString(m, g.layout)},
                {"max_clients", g.max_clients},
                {"healthy", g.healthy}};
    if (g.dynamic) gpu["dynamic"] = true;
    gpus.push_back(std::move(gpu));
  }
  return {{"name", n.name},
          {"flavor", m.name},
          {"gpus", gpus},
          {"nvlink_domain", n.nvlink_domain},
          {"block", n.block},
          {"labels", n.labels},
          {"dedicated_to", n.dedicated_to.valid() ? s.tenant(n.dedicated_to).name : ""},
          {"cpu_milli", n.cpu_milli},
          {"memory_mib", n.memory_mib}};
}

Result<Node> NodeFromJson(const State& s, const Json& j) {
  try {
    Node n;
    n.name = j.at("name").get<std::string>();
    Result<FlavorId> f = s.catalogue().Find(j.at("flavor").get<std::string>());
    if (!f.ok()) return f.error();
    n.flavor = *f;
    const GpuModel& m = s.catalogue().model(*f);
    for (const Json& g : j.at("gpus")) {
      Gpu gpu;
      const std::string mode = g.at("mode").get<std::string>();
      gpu.mode = mode == "mig" ? GpuMode::kMig : mode == "shared" ? GpuMode::kShared : GpuMode::kWhole;
      if (gpu.mode == GpuMode::kMig) {
        Result<MigLayout> l = ParseLayout(m, g.at("layout").get<std::string>());
        if (!l.ok()) return l.error();
        gpu.layout = *l;
      }
      gpu.max_clients = g.at("max_clients").get<uint8_t>();
      gpu.healthy = g.at("healthy").get<bool>();
      gpu.dynamic = g.value("dynamic", false);
      n.gpus.push_back(std::move(gpu));
    }
    n.nvlink_domain = j.at("nvlink_domain").get<std::string>();
    n.block = j.at("block").get<std::string>();
    n.labels = j.at("labels").get<std::vector<std::string>>();
    const std::string owner = j.at("dedicated_to").get<std::string>();
    if (!owner.empty()) {
      Result<TenantId> t = s.FindTenant(owner);
      if (!t.ok()) return t.error();
      n.dedicated_to = *t;
    }
    n.cpu_milli = j.at("cpu_milli").get<int64_t>();
    n.memory_mib = j.at("memory_mib").get<int64_t>();
    return n;
  } catch (const Json::exception&) {
    return InvalidArgument("malformed node record");
  }
}

Json EventToJson(const Event& e) {
  struct V {
    Json operator()(const JobSubmitted& x) {
      return {{"type", "submitted"}, {"id", x.id.value()}, {"at", x.at.millis()}, {"spec", SpecToJson(x.spec)}};
    }
    Json operator()(const JobAdmitted& x) {
      // min_attempt is always written: its absence marks a record from before attempt counters.
      return {{"type", "admitted"}, {"id", x.id.value()}, {"at", x.at.millis()},
              {"kind", static_cast<int>(x.kind)}, {"placement", Placement(x.placement)},
              {"min_attempt", x.min_attempt}};
    }
    Json operator()(const JobFlavorChosen& x) {
      return {{"type", "flavor_chosen"}, {"id", x.id.value()}, {"flavor", x.flavor.value()}, {"at", x.at.millis()}};
    }
    Json operator()(const JobStarted& x) {
      return {{"type", "started"}, {"id", x.id.value()}, {"at", x.at.millis()}};
    }
    // Fields added after the first journals (detail, kind, cause, reason) are written only
    // when they say something, and read as their defaults when absent.
    Json operator()(const JobFinished& x) {
      Json j = {{"type", "finished"}, {"id", x.id.value()}, {"at", x.at.millis()},
                {"outcome", static_cast<int>(x.outcome)}};
      if (!x.detail.empty()) j["detail"] = x.detail;
      return j;
    }
    Json operator()(const JobPreempted& x) {
      Json j = {{"type", "preempted"}, {"id", x.id.value()}, {"by", x.by.value()}, {"at", x.at.millis()}};
      if (x.kind != PreemptKind::kReclaim) j["kind"] = std::string(PreemptKindName(x.kind));
      return j;
    }
    Json operator()(const JobLost& x) {
      Json j = {{"type", "lost"}, {"id", x.id.value()}, {"at", x.at.millis()}};
      if (x.cause != RequeueCause::kNodeLost) j["cause"] = std::string(RequeueCauseName(x.cause));
      if (!x.detail.empty()) j["detail"] = x.detail;
      return j;
    }
    Json operator()(const MigReconfigured& x) {
      return {{"type", "mig"}, {"node", x.node.value()}, {"gpu", x.gpu},
              {"layout", x.layout.Encode()}, {"at", x.at.millis()}};
    }
    Json operator()(const GpuModeChanged& x) {
      return {{"type", "gpu_mode"}, {"node", x.node.value()}, {"gpu", x.gpu},
              {"mode", std::string(GpuModeName(x.mode))}, {"at", x.at.millis()}};
    }
    Json operator()(const NodeConditionChanged& x) {
      Json j = {{"type", "condition"}, {"node", x.node.value()},
                {"condition", static_cast<int>(x.condition)}, {"at", x.at.millis()}};
      if (!x.reason.empty()) j["reason"] = x.reason;
      return j;
    }
    Json operator()(const GpuHealthChanged& x) {
      Json j = {{"type", "gpu_health"}, {"node", x.node.value()}, {"gpu", x.gpu},
                {"healthy", x.healthy}, {"at", x.at.millis()}};
      if (!x.reason.empty()) j["reason"] = x.reason;
      return j;
    }
    Json operator()(const NodeRemoved& x) {
      return {{"type", "node_removed"}, {"node", x.node.value()}, {"at", x.at.millis()}};
    }
    Json operator()(const NodeLabelsReported& x) {
      return {{"type", "node_labels"}, {"node", x.node.value()}, {"labels", x.labels}, {"at", x.at.millis()}};
    }
    // A maintenance window has no tenant: null, not the invalid id's number.
    Json operator()(const ReservationCreated& x) {
      const Reservation& r = x.reservation;
      return {{"type", "reservation"}, {"id", r.id.value()},
              {"tenant", r.tenant.valid() ? Json(r.tenant.value()) : Json(nullptr)},
              {"flavor", r.flavor.value()}, {"amount_units", r.amount.units()},
              {"start_ms", r.start.millis()}, {"end_ms", r.end.millis()},
              {"maintenance", r.maintenance}, {"at", r.created.millis()}};
    }
    Json operator()(const ReservationCancelled& x) {
      return {{"type", "reservation_cancelled"}, {"id", x.id.value()}, {"at", x.at.millis()}};
    }
  };
  return std::visit(V{}, e);
}

Result<Event> EventFromJson(const Json& j) {
  Result<std::string> type = Get<std::string>(j, "type");
  if (!type.ok()) return type.error();
  try {
    const Time at = Time::FromMillis(j.at("at").get<int64_t>());
    if (*type == "submitted") {
      Result<JobSpec> spec = SpecFromJson(j.at("spec"));
      if (!spec.ok()) return spec.error();
      return Event(JobSubmitted{JobId(j.at("id").get<uint64_t>()), *spec, at});
    }
    if (*type == "admitted") {
      Result<std::vector<ReplicaPlacement>> p = PlacementFrom(j.at("placement"));
      if (!p.ok()) return p.error();
      // An old record: that version's attempt was the admission time in ms, and agents may
      // still hold it, so the counter goes on from there.
      const int64_t min_attempt = j.contains("min_attempt") ? j.at("min_attempt").get<int64_t>() : at.millis();
      return Event(JobAdmitted{JobId(j.at("id").get<uint64_t>()), *p,
                               static_cast<AdmissionKind>(j.at("kind").get<int>()), at, min_attempt});
    }
    if (*type == "started") return Event(JobStarted{JobId(j.at("id").get<uint64_t>()), at});
    if (*type == "flavor_chosen") {
      return Event(JobFlavorChosen{JobId(j.at("id").get<uint64_t>()), FlavorId(j.at("flavor").get<uint16_t>()), at});
    }
    if (*type == "finished") {
      return Event(JobFinished{JobId(j.at("id").get<uint64_t>()),
                               static_cast<JobState>(j.at("outcome").get<int>()), at, j.value("detail", "")});
    }
    if (*type == "preempted") {
      PreemptKind kind = PreemptKind::kReclaim;
      if (j.contains("kind")) {
        Result<PreemptKind> k = ParsePreemptKind(j.at("kind").get<std::string>());
        if (!k.ok()) return k.error();
        kind = *k;
      }
      return Event(JobPreempted{JobId(j.at("id").get<uint64_t>()), JobId(j.at("by").get<uint64_t>()), at, kind});
    }
    if (*type == "lost") {
      RequeueCause cause = RequeueCause::kNodeLost;
      if (j.contains("cause")) {
        Result<RequeueCause> c = ParseRequeueCause(j.at("cause").get<std::string>());
        if (!c.ok()) return c.error();
        cause = *c;
      }
      return Event(JobLost{JobId(j.at("id").get<uint64_t>()), at, cause, j.value("detail", "")});
    }
    if (*type == "mig") {
      return Event(MigReconfigured{NodeId(j.at("node").get<uint32_t>()), j.at("gpu").get<uint16_t>(),
                                   MigLayout::Decode(j.at("layout").get<uint64_t>()), at});
    }
    if (*type == "gpu_mode") {
      const std::string mode = j.at("mode").get<std::string>();
      if (mode != "whole" && mode != "shared") return InvalidArgument("unknown GPU mode '" + mode + "'");
      return Event(GpuModeChanged{NodeId(j.at("node").get<uint32_t>()), j.at("gpu").get<uint16_t>(),
                                  mode == "whole" ? GpuMode::kWhole : GpuMode::kShared, at});
    }
    if (*type == "condition") {
      return Event(NodeConditionChanged{NodeId(j.at("node").get<uint32_t>()),
                                        static_cast<NodeCondition>(j.at("condition").get<int>()), at,
                                        j.value("reason", "")});
    }
    if (*type == "gpu_health") {
      return Event(GpuHealthChanged{NodeId(j.at("node").get<uint32_t>()), j.at("gpu").get<uint16_t>(),
                                    j.at("healthy").get<bool>(), at, j.value("reason", "")});
    }
    if (*type == "node_removed") return Event(NodeRemoved{NodeId(j.at("node").get<uint32_t>()), at});
    if (*type == "node_labels") {
      return Event(NodeLabelsReported{NodeId(j.at("node").get<uint32_t>()),
                                      j.at("labels").get<std::vector<std::string>>(), at});
    }
    if (*type == "reservation") {
      Reservation r;
      r.id = ReservationId(j.at("id").get<uint64_t>());
      if (!j.at("tenant").is_null()) r.tenant = TenantId(j.at("tenant").get<uint32_t>());
      r.flavor = FlavorId(j.at("flavor").get<uint16_t>());
      r.amount = GpuEq::Units(j.at("amount_units").get<int64_t>());
      r.start = Time::FromMillis(j.at("start_ms").get<int64_t>());
      r.end = Time::FromMillis(j.at("end_ms").get<int64_t>());
      r.maintenance = j.at("maintenance").get<bool>();
      r.created = at;
      return Event(ReservationCreated{r});
    }
    if (*type == "reservation_cancelled") {
      return Event(ReservationCancelled{ReservationId(j.at("id").get<uint64_t>()), at});
    }
  } catch (const Json::exception&) {
    return InvalidArgument("malformed '" + *type + "' event record");
  }
  return InvalidArgument("unknown event type '" + *type + "'");
}

}  // namespace gpupool
