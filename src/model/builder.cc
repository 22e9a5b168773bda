#include "model/builder.h"

namespace gpupool {

Result<NodeId> AddNode(State& state, const std::string& name, const NodeTemplate& t) {
  Result<FlavorId> flavor = state.catalogue().Find(t.flavor);
  if (!flavor.ok()) return flavor.error();
  const GpuModel& model = state.catalogue().model(*flavor);
  if (t.gpus < 1 || t.mig_gpus < 0 || t.shared_gpus < 0 || t.mig_gpus + t.shared_gpus > t.gpus) {
    return InvalidArgument("node " + name + ": GPU mode counts do not add up");
  }
  MigLayout layout;
  if (t.mig_gpus > 0) {
    if (!model.mig_capable()) return InvalidArgument(t.flavor + " is not MIG-capable");
    if (t.mig_layout.empty()) {
      layout = AllBalancedLayout(model);
    } else {
      Result<MigLayout> l = ParseLayout(model, t.mig_layout);
      if (!l.ok()) return l.error();
      layout = *l;
    }
  }
  Node n;
  n.name = name;
  n.flavor = *flavor;
  n.nvlink_domain = t.nvlink_domain;
  n.block = t.block;
  n.cpu_milli = t.cpu_milli;
  n.memory_mib = t.memory_mib;
  n.labels = t.labels;
  if (!t.dedicated_to.empty()) {
    Result<TenantId> owner = state.FindTenant(t.dedicated_to);
    if (!owner.ok()) return owner.error();
    n.dedicated_to = *owner;
  }
  for (int i = 0; i < t.gpus; ++i) {
    Gpu g;
    if (i < t.mig_gpus) {
      g.mode = GpuMode::kMig;
      g.layout = layout;
    } else {
      if (i < t.mig_gpus + t.shared_gpus) g.mode = GpuMode::kShared;
      if (g.mode == GpuMode::kShared || t.dynamic) g.max_clients = t.max_clients;
      g.dynamic = t.dynamic;
    }
    n.gpus.push_back(std::move(g));
  }
  return state.AddNode(std::move(n));
}

Result<TenantId> AddTenant(State& state, const std::string& name,
                           const std::map<std::string, QuotaGpus>& quotas,
                           int64_t weight_milli) {
  Tenant t;
  t.name = name;
  t.weight_milli = weight_milli;
  for (const auto& [flavor_name, q] : quotas) {
    Result<FlavorId> f = state.catalogue().Find(flavor_name);
    if (!f.ok()) return f.error();
    FlavorQuota fq;
    fq.guaranteed = GpuEq::Gpus(q.guaranteed);
    if (q.borrow_limit) fq.borrow_limit = GpuEq::Gpus(*q.borrow_limit);
    if (q.lend_limit) fq.lend_limit = GpuEq::Gpus(*q.lend_limit);
    t.quotas[*f] = fq;
  }
  return state.AddTenant(std::move(t));
}

void AddDefaultPriorityClasses(State& state) {
  GP_CHECK(state.AddPriorityClass({PriorityClassId(), "inference", 1000, false, false,
                                   Duration::Seconds(30)}).ok());
  // Jobs that name no class train: preemptible when borrowing (DESIGN.md §3).
  GP_CHECK(state.AddPriorityClass({PriorityClassId(), "training", 500, true, true,
                                   Duration::Seconds(120), std::nullopt, /*is_default=*/true}).ok());
  GP_CHECK(state.AddPriorityClass({PriorityClassId(), "batch", 100, true, true,
                                   Duration::Seconds(10)}).ok());
}

Result<ReplicaShape> WholeGpus(const State& state, const std::string& flavor, int gpus) {
  Result<FlavorId> f = state.catalogue().Find(flavor);
  if (!f.ok()) return f.error();
  if (gpus < 1 || gpus > 16) return InvalidArgument("gpus must be 1..16");
  ReplicaShape s;
  s.kind = ShapeKind::kWholeGpus;
  s.flavor = *f;
  s.gpus = static_cast<uint8_t>(gpus);
  return s;
}

Result<ReplicaShape> MigShape(const State& state, const std::string& flavor,
                              const std::string& profile) {
  Result<FlavorId> f = state.catalogue().Find(flavor);
  if (!f.ok()) return f.error();
  const int idx = state.catalogue().model(*f).ProfileIndexByName(profile);
  if (idx < 0) return InvalidArgument("unknown MIG profile '" + profile + "' for " + flavor);
  ReplicaShape s;
  s.kind = ShapeKind::kMigProfile;
  s.flavor = *f;
  s.mig_profile = static_cast<uint8_t>(idx);
  return s;
}

Result<ReplicaShape> FractionShape(const State& state, const std::string& flavor, int milli,
                                   uint32_t gpu_memory_mib) {
  Result<FlavorId> f = state.catalogue().Find(flavor);
  if (!f.ok()) return f.error();
  if (milli < 1 || milli > 1000) return InvalidArgument("fraction must be 1..1000 milli-GPUs");
  ReplicaShape s;
  s.kind = ShapeKind::kGpuFraction;
  s.flavor = *f;
  s.milli = static_cast<uint16_t>(milli);
  s.gpu_memory_mib = gpu_memory_mib;
  return s;
}

Result<JobId> Submit(State& state, const JobRequest& req, Time at) {
  Result<TenantId> t = state.FindTenant(req.tenant);
  if (!t.ok()) return t.error();
  Result<PriorityClassId> pc = state.FindPriorityClass(req.priority_class);
  if (!pc.ok()) return pc.error();
  JobSubmitted e;
  e.id = state.NextJobId();
  e.at = at;
  e.spec.tenant = *t;
  e.spec.priority_class = *pc;
  e.spec.shape = req.shape;
  e.spec.replicas = req.replicas;
  e.spec.estimated_duration = req.estimated;
  e.spec.topology = req.topology;
  e.spec.reservation = req.reservation;
  e.spec.node_selector = req.node_selector;
  e.spec.name = req.name.empty() ? "job-" + std::to_string(e.id.value()) : req.name;
  GP_RETURN_IF_ERROR(Apply(state, e));
  return e.id;
}

}  // namespace gpupool
