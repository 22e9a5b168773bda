#include "model/state.h"

#include <algorithm>
#include <cmath>

namespace gpupool {

State::State(Catalogue catalogue, Duration usage_half_life)
    : catalogue_(std::move(catalogue)), usage_half_life_(usage_half_life) {}

State::State(const State& other) { *this = other; }

State& State::operator=(const State& other) {
  if (this == &other) return *this;
  catalogue_ = other.catalogue_;
  usage_half_life_ = other.usage_half_life_;
  tenants_ = other.tenants_;
  classes_ = other.classes_;
  nodes_ = other.nodes_;
  node_by_name_ = other.node_by_name_;
  jobs_ = other.jobs_;
  pending_ = other.pending_;
  active_ = other.active_;
  pending_by_tenant_ = other.pending_by_tenant_;
  next_job_id_ = other.next_job_id_;
  reservations_ = other.reservations_;
  next_reservation_id_ = other.next_reservation_id_;
  by_id_.clear();
  by_id_.reserve(jobs_.size());
  for (auto& [id, job] : jobs_) by_id_.emplace(id.value(), &job);
  return *this;
}

Result<TenantId> State::AddTenant(Tenant t) {
  if (t.name.empty()) return InvalidArgument("tenant needs a name");
  if (FindTenant(t.name).ok()) return AlreadyExists("tenant " + t.name + " already exists");
  t.id = TenantId(static_cast<uint32_t>(tenants_.size()));
  tenants_.push_back(std::move(t));
  Status s = UpdateTenant(tenants_.back());
  if (!s.ok()) {
    tenants_.pop_back();
    return s.error();
  }
  return tenants_.back().id;
}

Status State::UpdateTenant(const Tenant& t) {
  if (!t.id.valid() || t.id.value() >= tenants_.size()) return NotFound("no such tenant");
  if (t.weight_milli <= 0) return InvalidArgument("tenant weight must be positive");
  for (const auto& [flavor, q] : t.quotas) {
    if (!flavor.valid() || flavor.value() >= catalogue_.size()) {
      return InvalidArgument("quota names an unknown flavor");
    }
    if (q.guaranteed < GpuEq() || (q.borrow_limit && *q.borrow_limit < GpuEq()) ||
        (q.lend_limit && *q.lend_limit < GpuEq())) {
      return InvalidArgument("quota values must not be negative");
    }
  }
  Tenant copy = t;
  std::sort(copy.required_labels.begin(), copy.required_labels.end());
  std::sort(copy.allowed_labels.begin(), copy.allowed_labels.end());
  // Usage history is state, not configuration: keep it.
  copy.decayed_usage = tenants_[t.id.value()].decayed_usage;
  copy.decayed_usage_at = tenants_[t.id.value()].decayed_usage_at;
  tenants_[t.id.value()] = std::move(copy);
  return Ok();
}

Result<PriorityClassId> State::AddPriorityClass(PriorityClass pc) {
  if (pc.name.empty()) return InvalidArgument("priority class needs a name");
  if (FindPriorityClass(pc.name).ok()) {
    return AlreadyExists("priority class " + pc.name + " already exists");
  }
  if (pc.is_default) {
    for (const PriorityClass& other : classes_) {
      if (other.is_default) return AlreadyExists("priority class " + other.name + " is already the default");
    }
  }
  if (pc.min_runtime && *pc.min_runtime < Duration()) return InvalidArgument("min_runtime must not be negative");
  pc.id = PriorityClassId(static_cast<uint16_t>(classes_.size()));
  classes_.push_back(std::move(pc));
  return classes_.back().id;
}

Result<NodeId> State::AddNode(Node n) {
  if (n.name.empty()) return InvalidArgument("node needs a name");
  if (FindNode(n.name).ok()) return AlreadyExists("node " + n.name + " already exists");
  if (!n.flavor.valid() || n.flavor.value() >= catalogue_.size()) {
    return InvalidArgument("node " + n.name + " has an unknown GPU model");
  }
  if (n.gpus.empty() || n.gpus.size() > 16) {
    return InvalidArgument("node " + n.name + " must have 1 to 16 GPUs");
  }
  if (n.dedicated_to.valid() && n.dedicated_to.value() >= tenants_.size()) {
    return InvalidArgument("node " + n.name + " is dedicated to an unknown tenant");
  }
  const GpuModel& model = catalogue_.model(n.flavor);
  const Gpu* dynamic = nullptr;  // the first dynamic GPU; the others must match it
  for (const Gpu& g : n.gpus) {
    if (g.dynamic && g.mode == GpuMode::kMig) {
      return InvalidArgument("node " + n.name + ": a MIG GPU cannot switch to whole or shared use");
    }
    if (g.dynamic && dynamic == nullptr) dynamic = &g;
  }
  for (const Gpu& g : n.gpus) {
    if (dynamic != nullptr && g.mode != GpuMode::kMig &&
        (!g.dynamic || g.max_clients != dynamic->max_clients)) {
      return InvalidArgument("node " + n.name +
                             ": its GPUs not in MIG mode must all be dynamic, with one max_clients, or none");
    }
  }
  for (Gpu& g : n.gpus) {
    if (!g.idle()) return InvalidArgument("node " + n.name + " must join with idle GPUs");
    if (g.mode == GpuMode::kMig) GP_RETURN_IF_ERROR(ValidateLayout(model, g.layout));
    g.instance_occupant.fill(JobId());
  }
  std::sort(n.labels.begin(), n.labels.end());
  n.cpu_used = n.memory_used = 0;
  n.host_only.clear();
  n.id = NodeId(static_cast<uint32_t>(nodes_.size()));
  n.removed = false;
  node_by_name_.emplace(n.name, n.id);
  nodes_.push_back(std::move(n));
  return nodes_.back().id;
}

const Tenant& State::tenant(TenantId id) const {
  GP_CHECK(id.valid() && id.value() < tenants_.size());
  return tenants_[id.value()];
}

Result<TenantId> State::FindTenant(std::string_view name) const {
  for (const Tenant& t : tenants_) {
    if (t.name == name) return t.id;
  }
  return NotFound("unknown tenant '" + std::string(name) + "'");
}

const PriorityClass& State::priority_class(PriorityClassId id) const {
  GP_CHECK(id.valid() && id.value() < classes_.size());
  return classes_[id.value()];
}

Result<PriorityClassId> State::FindPriorityClass(std::string_view name) const {
  for (const PriorityClass& pc : classes_) {
    if (pc.name == name) return pc.id;
  }
  return NotFound("unknown priority class '" + std::string(name) + "'");
}

const Node& State::node(NodeId id) const {
  GP_CHECK(id.valid() && id.value() < nodes_.size());
  return nodes_[id.value()];
}

Result<NodeId> State::FindNode(std::string_view name) const {
  if (auto it = node_by_name_.find(std::string(name)); it != node_by_name_.end()) return it->second;
  return NotFound("unknown node '" + std::string(name) + "'");
}

const Job* State::FindJob(JobId id) const {
  const auto it = by_id_.find(id.value());
  return it == by_id_.end() ? nullptr : it->second;
}

const Reservation* State::FindReservation(ReservationId id) const {
  auto it = reservations_.find(id);
  return it == reservations_.end() ? nullptr : &it->second;
}

Status State::SetPendingReason(JobId id, PendingReason reason) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return NotFound("unknown job " + std::to_string(id.value()));
  if (it->second.state != JobState::kPending) return FailedPrecondition("job is not pending");
  it->second.reason = std::move(reason);
  return Ok();
}

Result<JobSpec> State::ValidateSpec(JobSpec spec) const {
  if (!spec.tenant.valid() || spec.tenant.value() >= tenants_.size()) {
    return InvalidArgument("unknown tenant");
  }
  if (!spec.priority_class.valid() || spec.priority_class.value() >= classes_.size()) {
    return InvalidArgument("unknown priority class");
  }
  const ReplicaShape& s = spec.shape;
  if (!s.flavor.valid() || s.flavor.value() >= catalogue_.size()) {
    return InvalidArgument("unknown GPU model");
  }
  const GpuModel& model = catalogue_.model(s.flavor);
  if (spec.replicas < 1) return InvalidArgument("replicas must be at least 1");
  switch (s.kind) {
    case ShapeKind::kWholeGpus:
      if (s.gpus > 16) return InvalidArgument("gpus must be 0..16");
      if (s.gpus == 0 && s.cpu_milli <= 0 && s.memory_mib <= 0) {
        return InvalidArgument("a job of no GPU must ask for CPU or memory");
      }
      break;
    case ShapeKind::kMigProfile:
      if (!model.mig_capable()) return InvalidArgument(model.name + " has no MIG profiles");
      if (s.mig_profile >= model.profiles.size()) return InvalidArgument("unknown MIG profile");
      break;
    case ShapeKind::kGpuFraction:
      if (s.milli < 1 || s.milli > 1000) {
        return InvalidArgument("gpu_fraction must be in (0, 1]");
      }
      if (s.gpu_memory_mib > model.memory_mib) {
        return InvalidArgument("memory bound exceeds the GPU's " +
                               std::to_string(model.memory_mib) + " MiB");
      }
      break;
  }
  if (s.cpu_milli < 0 || s.memory_mib < 0) return InvalidArgument("negative host resources");
  if (!spec.flavors.empty()) {
    if (spec.flavors.size() > kMaxFlavorsPerJob) {
      return InvalidArgument("a job accepts at most " + std::to_string(kMaxFlavorsPerJob) + " flavors");
    }
    if (std::find(spec.flavors.begin(), spec.flavors.end(), s.flavor) == spec.flavors.end()) {
      return InvalidArgument("the job's flavor must be one of the flavors it accepts");
    }
    for (size_t i = 0; i < spec.flavors.size(); ++i) {
      const FlavorId f = spec.flavors[i];
      if (!f.valid() || f.value() >= catalogue_.size()) return InvalidArgument("unknown GPU model");
      if (std::find(spec.flavors.begin(), spec.flavors.begin() + static_cast<long>(i), f) !=
          spec.flavors.begin() + static_cast<long>(i)) {
        return InvalidArgument(catalogue_.model(f).name + " is listed twice");
      }
      if (spec.flavors.size() > 1 && s.kind == ShapeKind::kMigProfile) {
        return InvalidArgument("a MIG profile belongs to one GPU model: a MIG job accepts one flavor");
      }
      if (s.kind == ShapeKind::kGpuFraction && s.gpu_memory_mib > catalogue_.model(f).memory_mib) {
        return InvalidArgument("memory bound exceeds " + catalogue_.model(f).name + "'s " +
                               std::to_string(catalogue_.model(f).memory_mib) + " MiB");
      }
    }
    if (spec.flavors.size() == 1) spec.flavors.clear();  // the same as naming the one flavor
  }
  for (LabelRequirement& r : spec.node_selector) {
    const bool with_values = r.op == SelectorOp::kIn || r.op == SelectorOp::kNotIn;
    if (r.key.empty()) return InvalidArgument("a node_selector requirement needs a key");
    if (with_values == r.values.empty()) {
      return InvalidArgument("node_selector '" + r.key + "': " + std::string(SelectorOpName(r.op)) +
                             (with_values ? " needs values" : " takes no values"));
    }
    std::sort(r.values.begin(), r.values.end());
    r.values.erase(std::unique(r.values.begin(), r.values.end()), r.values.end());
  }
  const Tenant& t = tenant(spec.tenant);
  const JobLimits& lim = t.limits;
  if (spec.estimated_duration.is_infinite()) spec.estimated_duration = lim.default_duration;
  if (spec.estimated_duration <= Duration()) {
    return InvalidArgument("duration estimate must be positive");
  }
  if (!lim.max_duration.is_infinite() && spec.estimated_duration > lim.max_duration) {
    return InvalidArgument("duration estimate " + ToString(spec.estimated_duration) +
                           " exceeds the tenant's maximum " + ToString(lim.max_duration));
  }
  if (lim.max_replicas && spec.replicas > lim.max_replicas) {
    return InvalidArgument("replicas exceed the tenant's maximum of " +
                           std::to_string(lim.max_replicas));
  }
  const GpuEq eq = s.Eq(catalogue_) * spec.replicas;
  if (lim.max_job_gpu_eq > GpuEq() && eq > lim.max_job_gpu_eq) {
    return InvalidArgument("job needs " + ToString(eq) + " GPUs; the tenant's maximum is " +
                           ToString(lim.max_job_gpu_eq));
  }
  if (spec.reservation.valid()) {
    const std::string rname = "reservation " + std::to_string(spec.reservation.value());
    const Reservation* r = FindReservation(spec.reservation);
    if (r == nullptr || r->maintenance || r->tenant != spec.tenant) {
      return InvalidArgument("unknown " + rname + " for tenant " + t.name);
    }
    if (r->flavor != s.flavor) {
      return InvalidArgument(rname + " holds " + catalogue_.model(r->flavor).name + ", not " +
                             model.name);
    }
    if (!spec.flavors.empty()) {
      return InvalidArgument(rname + " holds one flavor: a job in it accepts only " + model.name);
    }
    if (eq > r->amount) {
      return InvalidArgument("job needs " + ToString(eq) + " GPUs; " + rname + " holds " +
                             ToString(r->amount));
    }
  }
  return spec;
}

double DecayFactor(Duration dt, Duration half_life) {
  if (half_life <= Duration()) return 0.0;
  if (dt <= Duration()) return 1.0;
  return std::exp2(-static_cast<double>(dt.millis()) / static_cast<double>(half_life.millis()));
}

double DecayedIntegral(double gpus, Time from, Time to, Duration half_life) {
  if (to <= from || half_life <= Duration()) return 0.0;
  const double h_s = static_cast<double>(half_life.millis()) / 1000.0;
  return gpus * h_s / std::log(2.0) * (1.0 - DecayFactor(to - from, half_life));
}

std::vector<double> State::DecayedUsages(Time now) const {
  std::vector<double> u(tenants_.size());
  for (const Tenant& t : tenants_) {
    u[t.id.value()] = t.decayed_usage * DecayFactor(now - t.decayed_usage_at, usage_half_life_);
  }
  for (JobId id : active_) {
    const Job& j = jobs_.at(id);
    if (j.state != JobState::kRunning) continue;
    u[j.spec.tenant.value()] +=
        DecayedIntegral(j.Eq(catalogue_).ToGpus(), j.started, now, usage_half_life_);
  }
  return u;
}

Status State::Forget(JobId id) {
  const Job* j = FindJob(id);
  if (j == nullptr) return NotFound("no job " + std::to_string(id.value()));
  if (!IsTerminal(j->state)) return FailedPrecondition("job " + std::to_string(id.value()) + " has not finished");
  by_id_.erase(id.value());
  jobs_.erase(id);
  return Ok();
}

}  // namespace gpupool
