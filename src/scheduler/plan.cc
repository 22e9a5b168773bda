#include "scheduler/plan.h"

#include "policy/placement/policies.h"
#include "scheduler/config.h"

namespace gpupool {

Status Validate(const SchedulerConfig& cfg) {
  bool known = false;
  for (std::string_view n : PlacementPolicyNames()) known = known || n == cfg.placement;
  if (!known) return InvalidArgument("unknown placement policy '" + cfg.placement + "'");
  if (cfg.fair_share.usage_blend < 0.0 || cfg.fair_share.usage_blend > 1.0) {
    return InvalidArgument("fair_share.usage_blend must be in [0, 1]");
  }
  if (cfg.preemption.max_attempts_per_cycle < 0 || cfg.preemption.max_victims < 1) {
    return InvalidArgument("preemption budgets must be positive");
  }
  if (cfg.preemption.min_runtime < Duration()) {
    return InvalidArgument("preemption.min_runtime must not be negative");
  }
  if (cfg.backfill.max_holds < 0) return InvalidArgument("backfill.max_holds must be >= 0");
  if (cfg.max_workload_types < 1) return InvalidArgument("max_workload_types must be >= 1");
  if (cfg.pairing_window < 1) return InvalidArgument("pairing_window must be >= 1");
  if (Status q = Validate(cfg.queue); !q.ok()) return InvalidArgument("queue_policy: " + q.error().message);
  return Ok();
}

std::vector<Event> PlanToEvents(const Plan& plan, Time now) {
  std::vector<Event> out;
  for (const PreemptDecision& p : plan.preemptions) {
    out.push_back(JobPreempted{p.victim, p.preemptor, now, p.kind});
  }
  for (const ReconfigureDecision& r : plan.reconfigurations) {
    out.push_back(MigReconfigured{r.node, r.gpu, r.to, now});
  }
  for (const ModeChangeDecision& m : plan.mode_changes) {
    out.push_back(GpuModeChanged{m.node, m.gpu, m.to, now});
  }
  for (const PlaceDecision& p : plan.placements) {
    if (p.flavor.valid()) out.push_back(JobFlavorChosen{p.job, p.flavor, now});
    out.push_back(JobAdmitted{p.job, p.placement, p.kind, now});
  }
  return out;
}

void RecordReasons(State& state, const Plan& plan) {
  for (const PendingNote& n : plan.pending) {
    const Job* j = state.FindJob(n.job);
    if (j != nullptr && j->state == JobState::kPending) {
      PendingReason r = plan.ReasonOf(n);
      if (!n.position.empty()) r.message += "; " + n.position;
      GP_CHECK(state.SetPendingReason(n.job, std::move(r)).ok());
    }
  }
}

void ApplyPlan(const Plan& plan, Time now, State& state, const EventApplier& apply,
               PlanApplication how) {
  for (const Event& e : PlanToEvents(plan, now)) {
    const Status s = apply(e);
    GP_CHECK(s.ok()) << "a plan's event did not apply: " << s.error().message;
  }
  if (how.start_placed) {
    for (const PlaceDecision& d : plan.placements) {
      const Status s = apply(JobStarted{d.job, now});
      GP_CHECK(s.ok()) << "a placed job did not start: " << s.error().message;
    }
  }
  if (how.record_reasons) RecordReasons(state, plan);
}

namespace {

std::string DescribePlacement(const State& s, const std::vector<ReplicaPlacement>& placement) {
  std::string out;
  for (const ReplicaPlacement& rp : placement) {
    out += " " + s.node(rp.node).name + "[";
    for (size_t i = 0; i < rp.grants.size(); ++i) {
      const GpuGrant& g = rp.grants[i];
      if (i) out += ",";
      out += std::to_string(g.gpu);
      if (g.mig_start >= 0) out += "@" + std::to_string(g.mig_start);
      if (g.milli) out += ":" + std::to_string(g.milli) + "m";
    }
    out += "]";
  }
  return out;
}

}  // namespace

std::string Describe(const State& s, const Plan& plan) {
  std::string out;
  for (const ReconfigureDecision& r : plan.reconfigurations) {
    const GpuModel& m = s.catalogue().model(s.node(r.node).flavor);
    out += "reconfigure " + s.node(r.node).name + " gpu " + std::to_string(r.gpu) + " [" +
           ToString(m, r.from) + "] -> [" + ToString(m, r.to) + "]\n";
  }
  for (const ModeChangeDecision& m : plan.mode_changes) {
    out += "switch " + s.node(m.node).name + " gpu " + std::to_string(m.gpu) + " " +
           std::string(GpuModeName(m.from)) + " -> " + std::string(GpuModeName(m.to)) + "\n";
  }
  for (const PreemptDecision& p : plan.preemptions) {
    out += std::string("preempt ") + std::to_string(p.victim.value()) + " for " +
           std::to_string(p.preemptor.value()) +
           " (" + std::string(PreemptKindName(p.kind)) + ")\n";
  }
  for (const PlaceDecision& p : plan.placements) {
    out += "place " + std::to_string(p.job.value()) + " as " +
           std::string(AdmissionKindName(p.kind)) + " on" + DescribePlacement(s, p.placement) +
           (p.flavor.valid() ? " as " + s.catalogue().model(p.flavor).name : "") + "\n";
  }
  for (const PendingNote& n : plan.pending) {
    const PendingReason& r = plan.ReasonOf(n);
    out += "wait " + std::to_string(n.job.value()) + " " + std::string(ReasonCodeName(r.code)) +
           ": " + r.message + (n.position.empty() ? "" : "; " + n.position) + "\n";
  }
  return out;
}

}  // namespace gpupool
