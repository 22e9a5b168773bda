// Apply(state, event): validate, then mutate. Each handler either changes nothing and returns an
// error, or applies the whole event.
#include <algorithm>
#include <string>

#include "model/events.h"

namespace gpupool {

class StateMutator {
 public:
  explicit StateMutator(State& s) : s_(s) {}

  Status operator()(const JobSubmitted& e);
  Status operator()(const JobAdmitted& e);
  Status operator()(const JobStarted& e);
  Status operator()(const JobFinished& e);
  Status operator()(const JobPreempted& e);
  Status operator()(const JobLost& e);
  Status operator()(const MigReconfigured& e);
  Status operator()(const GpuModeChanged& e);
  Status operator()(const JobFlavorChosen& e);
  Status operator()(const NodeConditionChanged& e);
  Status operator()(const GpuHealthChanged& e);
  Status operator()(const ReservationCreated& e);
  Status operator()(const ReservationCancelled& e);
  Status operator()(const NodeRemoved& e);
  Status operator()(const NodeLabelsReported& e);

 private:
  Result<Job*> FindJob(JobId id);
  Result<Node*> FindNode(NodeId id);
  Result<Gpu*> FindGpu(NodeId id, uint16_t gpu);
  Status GrantReplica(Node& node, const Job& job, const ReplicaPlacement& rp);
  Status GrantOne(const GpuModel& model, Gpu& gpu, const Job& job, const GpuGrant& g);
  void Release(Job& job, Time at);
  Status RequeueHolding(JobId id, JobId by, Time at);

  State& s_;
};

Result<Job*> StateMutator::FindJob(JobId id) {
  if (!id.valid() || id.value() == 0 || id.value() >= s_.next_job_id_) {
    return NotFound("unknown job " + std::to_string(id.value()));
  }
  const auto it = s_.by_id_.find(id.value());
  // A finished job the daemon no longer keeps in memory (State::Forget): nothing can happen to it.
  if (it == s_.by_id_.end()) return NotFound("job " + std::to_string(id.value()) + " is no longer in memory");
  return it->second;
}

Result<Node*> StateMutator::FindNode(NodeId id) {
  if (!id.valid() || id.value() >= s_.nodes_.size()) return NotFound("unknown node");
  return &s_.nodes_[id.value()];
}

Result<Gpu*> StateMutator::FindGpu(NodeId id, uint16_t gpu) {
  Result<Node*> nr = FindNode(id);
  if (!nr.ok()) return nr.error();
  if (gpu >= (*nr)->gpus.size()) return InvalidArgument("GPU index out of range");
  return &(*nr)->gpus[gpu];
}

Status StateMutator::operator()(const JobSubmitted& e) {
  if (e.id != s_.NextJobId()) {
    return FailedPrecondition("job id " + std::to_string(e.id.value()) + " is not the next id " +
                              std::to_string(s_.next_job_id_));
  }
  Result<JobSpec> spec = s_.ValidateSpec(e.spec);
  if (!spec.ok()) return spec.error();
  Job job;
  job.id = e.id;
  job.spec = std::move(spec).value();
  job.submitted = e.at;
  job.reason = {ReasonCode::kNotYetConsidered, "not yet considered by the scheduler"};
  auto [it, inserted] = s_.jobs_.emplace(e.id, std::move(job));
  GP_CHECK(inserted);
  s_.by_id_.emplace(e.id.value(), &it->second);
  s_.pending_.insert(e.id);
  s_.CountPending(it->second.spec.tenant, +1);
  ++s_.next_job_id_;
  return Ok();
}

Status StateMutator::GrantOne(const GpuModel& model, Gpu& gpu, const Job& job,
                              const GpuGrant& g) {
  const ReplicaShape& shape = job.spec.shape;
  if (!gpu.healthy) return FailedPrecondition("GPU " + std::to_string(g.gpu) + " is unhealthy");
  switch (shape.kind) {
    case ShapeKind::kWholeGpus:
      if (gpu.mode != GpuMode::kWhole || g.mig_start != -1 || g.milli != 0) {
        return InvalidArgument("whole-GPU grant on a GPU not in whole mode");
      }
      if (gpu.occupant.valid()) return FailedPrecondition("GPU already held");
      gpu.occupant = job.id;
      return Ok();
    case ShapeKind::kMigProfile: {
      if (gpu.mode != GpuMode::kMig) return InvalidArgument("MIG grant on a non-MIG GPU");
      const int i = gpu.layout.IndexOfStart(g.mig_start);
      if (i < 0) return FailedPrecondition("no MIG instance at that start");
      if (gpu.layout.at(i).profile != shape.mig_profile) {
        return FailedPrecondition("MIG instance is " +
                                  model.profiles[gpu.layout.at(i).profile].name + ", not " +
                                  model.profiles[shape.mig_profile].name);
      }
      if (gpu.instance_occupant[i].valid()) return FailedPrecondition("MIG instance held");
      gpu.instance_occupant[i] = job.id;
      return Ok();
    }
    case ShapeKind::kGpuFraction: {
      if (gpu.mode != GpuMode::kShared) return InvalidArgument("fraction on a non-shared GPU");
      if (g.milli != shape.milli || g.memory_mib != shape.gpu_memory_mib) {
        return InvalidArgument("fraction grant differs from the job's shape");
      }
      int64_t milli = 0, mem = 0;
      const Tenant& mine = s_.tenant(job.spec.tenant);
      for (const SharedOccupant& o : gpu.shared) {
        milli += o.milli;
        mem += o.memory_mib;
        if (o.tenant != mine.id &&
            !(mine.allow_gpu_cotenancy && s_.tenant(o.tenant).allow_gpu_cotenancy)) {
          return FailedPrecondition("shared GPU holds another tenant's work");
        }
      }
      if (milli + g.milli > 1000 || mem + g.memory_mib > model.memory_mib) {
        return FailedPrecondition("shared GPU has no room");
      }
      if (gpu.max_clients && gpu.shared.size() >= gpu.max_clients) {
        return FailedPrecondition("shared GPU at its client cap");
      }
      gpu.shared.push_back({job.id, job.spec.tenant, g.milli, g.memory_mib});
      return Ok();
    }
  }
  return InvalidArgument("bad shape");
}

Status StateMutator::GrantReplica(Node& node, const Job& job, const ReplicaPlacement& rp) {
  const ReplicaShape& shape = job.spec.shape;
  if (!node.schedulable()) {
    return FailedPrecondition("node " + node.name + " is " +
                              std::string(NodeConditionName(node.condition)));
  }
  if (node.flavor != shape.flavor) return InvalidArgument("node " + node.name + " has other GPUs");
  if (node.dedicated_to.valid() && node.dedicated_to != job.spec.tenant) {
    return FailedPrecondition("node " + node.name + " is dedicated to another tenant");
  }
  const Tenant& t = s_.tenant(job.spec.tenant);
  if (!std::includes(node.labels.begin(), node.labels.end(), t.required_labels.begin(),
                     t.required_labels.end())) {
    return FailedPrecondition("node " + node.name + " lacks labels the tenant requires");
  }
  if (!Matches(job.spec.node_selector, node.labels)) {
    return FailedPrecondition("node " + node.name + " does not match the job's node_selector " +
                              Describe(job.spec.node_selector));
  }
  const size_t want = shape.kind == ShapeKind::kWholeGpus ? shape.gpus : 1;
  if (rp.grants.size() != want) return InvalidArgument("grant count differs from the shape");
  for (size_t i = 0; i < rp.grants.size(); ++i) {
    const GpuGrant& g = rp.grants[i];
    if (g.gpu >= node.gpus.size()) return InvalidArgument("GPU index out of range");
    for (size_t j = 0; j < i; ++j) {
      if (rp.grants[j].gpu == g.gpu) return InvalidArgument("GPU granted twice in one replica");
    }
    GP_RETURN_IF_ERROR(GrantOne(s_.catalogue_.model(node.flavor), node.gpus[g.gpu], job, g));
  }
  if ((node.cpu_milli && node.cpu_used + shape.cpu_milli > node.cpu_milli) ||
      (node.memory_mib && node.memory_used + shape.memory_mib > node.memory_mib)) {
    return FailedPrecondition("node " + node.name + " lacks CPU or memory");
  }
  node.cpu_used += shape.cpu_milli;
  node.memory_used += shape.memory_mib;
  if (shape.gpuless()) node.host_only.push_back(job.id);
  return Ok();
}

Status StateMutator::operator()(const JobAdmitted& e) {
  Result<Job*> jr = FindJob(e.id);
  if (!jr.ok()) return jr.error();
  Job& job = **jr;
  if (job.state != JobState::kPending) return FailedPrecondition("job is not pending");
  if (e.placement.size() != job.spec.replicas) {
    return InvalidArgument("placement must cover all " + std::to_string(job.spec.replicas) +
                           " replicas");
  }
  // Grant on copies of the touched nodes, then swap them in: all or nothing.
  std::vector<Node> scratch;
  std::vector<size_t> index_of(e.placement.size());
  for (size_t r = 0; r < e.placement.size(); ++r) {
    Result<Node*> nr = FindNode(e.placement[r].node);
    if (!nr.ok()) return nr.error();
    size_t k = 0;
    while (k < scratch.size() && scratch[k].id != e.placement[r].node) ++k;
    if (k == scratch.size()) scratch.push_back(**nr);
    index_of[r] = k;
  }
  for (size_t r = 0; r < e.placement.size(); ++r) {
    GP_RETURN_IF_ERROR(GrantReplica(scratch[index_of[r]], job, e.placement[r]));
  }
  for (Node& n : scratch) s_.nodes_[n.id.value()] = std::move(n);
  job.state = JobState::kAdmitted;
  job.admitted = e.at;
  job.attempt = std::max(job.attempt + 1, e.min_attempt);
  job.placement = e.placement;
  job.admitted_as = e.kind;
  job.reason = {};
  s_.pending_.erase(job.id);
  s_.CountPending(job.spec.tenant, -1);
  s_.active_.insert(job.id);
  return Ok();
}

Status StateMutator::operator()(const JobStarted& e) {
  Result<Job*> jr = FindJob(e.id);
  if (!jr.ok()) return jr.error();
  if ((*jr)->state != JobState::kAdmitted) return FailedPrecondition("job is not admitted");
  (*jr)->state = JobState::kRunning;
  (*jr)->started = e.at;
  return Ok();
}

void StateMutator::Release(Job& job, Time at) {
  for (const ReplicaPlacement& rp : job.placement) {
    Node& node = s_.nodes_[rp.node.value()];
    for (const GpuGrant& g : rp.grants) {
      Gpu& gpu = node.gpus[g.gpu];
      switch (gpu.mode) {
        case GpuMode::kWhole: gpu.occupant = JobId(); break;
        case GpuMode::kMig: {
          const int i = gpu.layout.IndexOfStart(g.mig_start);
          GP_CHECK(i >= 0 && gpu.instance_occupant[i] == job.id);
          gpu.instance_occupant[i] = JobId();
          break;
        }
        case GpuMode::kShared: {
          auto it = std::find_if(gpu.shared.begin(), gpu.shared.end(),
                                 [&](const SharedOccupant& o) { return o.job == job.id; });
          GP_CHECK(it != gpu.shared.end());
          gpu.shared.erase(it);
          break;
        }
      }
    }
    node.cpu_used -= job.spec.shape.cpu_milli;
    node.memory_used -= job.spec.shape.memory_mib;
    if (auto h = std::find(node.host_only.begin(), node.host_only.end(), job.id); h != node.host_only.end()) {
      node.host_only.erase(h);
    }
  }
  if (job.state == JobState::kRunning) {
    Tenant& t = s_.tenants_[job.spec.tenant.value()];
    const Duration h = s_.usage_half_life_;
    const Time base = std::max(t.decayed_usage_at, at);
    t.decayed_usage = t.decayed_usage * DecayFactor(base - t.decayed_usage_at, h) +
                      DecayedIntegral(job.Eq(s_.catalogue_).ToGpus(), job.started, at, h) *
                          DecayFactor(base - at, h);
    t.decayed_usage_at = base;
  }
  job.placement.clear();
  s_.active_.erase(job.id);
}

Status StateMutator::operator()(const JobFinished& e) {
  Result<Job*> jr = FindJob(e.id);
  if (!jr.ok()) return jr.error();
  Job& job = **jr;
  if (!IsTerminal(e.outcome)) return InvalidArgument("outcome must be a final state");
  if (IsTerminal(job.state)) return FailedPrecondition("job already finished");
  if (job.state == JobState::kPending) {
    if (e.outcome != JobState::kCancelled) {
      return FailedPrecondition("a pending job can only be cancelled");
    }
    s_.pending_.erase(job.id);
    s_.CountPending(job.spec.tenant, -1);
  } else {
    Release(job, e.at);
  }
  job.state = e.outcome;
  job.reason = {};  // a finished job waits for nothing
  return Ok();
}

Status StateMutator::RequeueHolding(JobId id, JobId by, Time at) {
  Result<Job*> jr = FindJob(id);
  if (!jr.ok()) return jr.error();
  Job& job = **jr;
  if (!HoldsResources(job.state)) return FailedPrecondition("job holds no resources");
  if (job.state == JobState::kRunning && at > job.started) job.ran = job.ran + (at - job.started);
  Release(job, at);
  job.state = JobState::kPending;
  if (by.valid()) {
    if (job.preempted_by.size() >= 8) job.preempted_by.erase(job.preempted_by.begin());
    job.preempted_by.push_back(by);
    ++job.preemptions;
  }
  job.reason = {ReasonCode::kNotYetConsidered, by.valid() ? "preempted; requeued"
                                                          : "node lost; requeued"};
  s_.pending_.insert(id);
  s_.CountPending(job.spec.tenant, +1);
  return Ok();
}

Status StateMutator::operator()(const JobPreempted& e) {
  if (!e.by.valid() || e.by == e.id) return InvalidArgument("preemptor must be another job");
  return RequeueHolding(e.id, e.by, e.at);
}

Status StateMutator::operator()(const JobLost& e) { return RequeueHolding(e.id, JobId(), e.at); }

Status StateMutator::operator()(const MigReconfigured& e) {
  Result<Gpu*> gr = FindGpu(e.node, e.gpu);
  if (!gr.ok()) return gr.error();
  Gpu& gpu = **gr;
  if (gpu.mode != GpuMode::kMig) return FailedPrecondition("GPU is not in MIG mode");
  if (!gpu.idle()) return FailedPrecondition("only an idle GPU may be re-partitioned");
  GP_RETURN_IF_ERROR(ValidateLayout(s_.catalogue_.model(s_.nodes_[e.node.value()].flavor), e.layout));
  gpu.layout = e.layout;
  gpu.instance_occupant.fill(JobId());
  return Ok();
}

Status StateMutator::operator()(const GpuModeChanged& e) {
  Result<Gpu*> gr = FindGpu(e.node, e.gpu);
  if (!gr.ok()) return gr.error();
  Gpu& gpu = **gr;
  if (!gpu.dynamic) {
    return FailedPrecondition("GPU " + std::to_string(e.gpu) + " of " + s_.nodes_[e.node.value()].name + " is not dynamic");
  }
  if (e.mode != GpuMode::kWhole && e.mode != GpuMode::kShared) {
    return InvalidArgument("a dynamic GPU is used whole or shared");
  }
  if (!gpu.idle()) return FailedPrecondition("only an idle GPU may switch between whole and shared use");
  gpu.mode = e.mode;
  return Ok();
}

Status StateMutator::operator()(const JobFlavorChosen& e) {
  Result<Job*> jr = FindJob(e.id);
  if (!jr.ok()) return jr.error();
  Job& job = **jr;
  if (job.state != JobState::kPending) return FailedPrecondition("only a pending job may change its flavor");
  const std::vector<FlavorId>& accepted = job.spec.flavors;
  if (std::find(accepted.begin(), accepted.end(), e.flavor) == accepted.end()) {
    return InvalidArgument("job " + std::to_string(e.id.value()) + " does not accept that flavor");
  }
  job.spec.shape.flavor = e.flavor;
  return Ok();
}

Status StateMutator::operator()(const NodeConditionChanged& e) {
  Result<Node*> nr = FindNode(e.node);
  if (!nr.ok()) return nr.error();
  Node& n = **nr;
  if (e.condition > NodeCondition::kNotReady) return InvalidArgument("unknown node condition");
  if (n.condition == NodeCondition::kRetired) {
    return FailedPrecondition("node " + n.name + " is retired");
  }
  if (e.condition == NodeCondition::kRetired) {
    if (!n.idle()) return FailedPrecondition("node " + n.name + " still runs work: drain it before retiring it");
  }
  n.condition = e.condition;
  n.condition_reason = e.reason;
  return Ok();
}

Status StateMutator::operator()(const GpuHealthChanged& e) {
  Result<Gpu*> gr = FindGpu(e.node, e.gpu);
  if (!gr.ok()) return gr.error();
  Gpu& g = **gr;
  g.healthy = e.healthy;
  g.health_reason = e.healthy ? "" : e.reason;
  return Ok();
}

Status StateMutator::operator()(const NodeRemoved& e) {
  Result<Node*> nr = FindNode(e.node);
  if (!nr.ok()) return nr.error();
  Node& n = **nr;
  if (n.removed) return FailedPrecondition("node " + n.name + " is already removed");
  if (n.condition != NodeCondition::kDraining) {
    return FailedPrecondition("node " + n.name + " is " + std::string(NodeConditionName(n.condition)) +
                              ": drain it before removing it");
  }
  if (!n.idle()) return FailedPrecondition("node " + n.name + " still runs work: wait until it is empty");
  n.condition = NodeCondition::kRetired;
  n.condition_reason = "removed";
  n.removed = true;
  s_.node_by_name_.erase(n.name);
  return Ok();
}

Status StateMutator::operator()(const NodeLabelsReported& e) {
  Result<Node*> nr = FindNode(e.node);
  if (!nr.ok()) return nr.error();
  Node& n = **nr;
  for (const std::string& l : e.labels) {
    const size_t eq = l.find('=');
    if (l.rfind(kAgentLabelPrefix, 0) != 0 || eq == std::string::npos || eq == kAgentLabelPrefix.size()) {
      return InvalidArgument("label '" + l + "' is not key=value with a key under " + std::string(kAgentLabelPrefix));
    }
  }
  std::vector<std::string> labels;
  for (const std::string& l : n.labels) {
    if (l.rfind(kAgentLabelPrefix, 0) != 0) labels.push_back(l);
  }
  labels.insert(labels.end(), e.labels.begin(), e.labels.end());
  std::sort(labels.begin(), labels.end());
  labels.erase(std::unique(labels.begin(), labels.end()), labels.end());
  n.labels = std::move(labels);
  return Ok();
}

Status StateMutator::operator()(const ReservationCreated& e) {
  const Reservation& r = e.reservation;
  const std::string what = r.maintenance ? "maintenance window" : "reservation";
  if (!r.id.valid() || r.id.value() == 0) return InvalidArgument(what + " needs an id");
  if (r.id < s_.NextReservationId()) {
    return AlreadyExists(what + " id " + std::to_string(r.id.value()) + " is taken");
  }
  if (r.id != s_.NextReservationId()) {
    return FailedPrecondition(what + " id " + std::to_string(r.id.value()) +
                              " is not the next id " + std::to_string(s_.next_reservation_id_));
  }
  if (!r.flavor.valid() || r.flavor.value() >= s_.catalogue_.size()) {
    return InvalidArgument(what + " names an unknown GPU model");
  }
  if (r.maintenance && r.tenant.valid()) {
    return InvalidArgument("a maintenance window belongs to no tenant");
  }
  if (!r.maintenance && (!r.tenant.valid() || r.tenant.value() >= s_.tenants_.size())) {
    return InvalidArgument("reservation names an unknown tenant");
  }
  if (r.amount <= GpuEq() || r.amount > Reservation::kMaxAmount ||
      r.amount.units() % GpuEq::kUnitsPerGpu != 0) {
    return InvalidArgument(what + " amount must be a whole number of GPUs from 1 to " +
                           ToString(Reservation::kMaxAmount));
  }
  if (!(r.start < r.end)) return InvalidArgument(what + " must start before it ends");
  s_.reservations_.emplace(r.id, r);
  ++s_.next_reservation_id_;
  return Ok();
}

Status StateMutator::operator()(const ReservationCancelled& e) {
  if (s_.reservations_.erase(e.id) == 0) {
    return NotFound("unknown reservation " + std::to_string(e.id.value()));
  }
  return Ok();
}

Status Apply(State& state, const Event& event) {
  StateMutator m(state);
  return std::visit(m, event);
}

}  // namespace gpupool
