#include "scheduler/schedule.h"

#include <algorithm>
#include <map>
#include <queue>
#include <tuple>

#include "policy/fair_share/fair_share.h"
#include "policy/priority/ordering.h"
#include "scheduler/backfill.h"
#include "scheduler/preempt.h"

namespace gpupool {
namespace {

// What identifies "the same request" within one cycle: if one such job found no room, the
// next one will not either until something is freed.
using FailKey = std::tuple<uint32_t, uint16_t, int, int, int, int, int, int, uint16_t, int,
                           bool, int64_t, int64_t, int64_t>;

class Cycle {
 public:
  Cycle(const State& state, const SchedulerConfig& cfg, const PlacementPolicy& policy, Time now)
      : state_(state),
        cfg_(cfg),
        now_(now),
        session_(state, policy, now),
        placer_(session_, cfg.mig_reconfigure),
        backfill_(session_, placer_) {}

  Plan Run();

 private:
  struct TenantTurn {
    bool borrowing;
    double share;
    uint32_t tenant;
    bool operator>(const TenantTurn& o) const {
      return std::tie(borrowing, share, tenant) > std::tie(o.borrowing, o.share, o.tenant);
    }
  };

  TenantTurn TurnOf(uint32_t tenant) const;
  void Consider(const Job& job);
  bool Commit(const Job& job, Placer::Outcome& o, AdmissionKind kind);
  FailKey KeyOf(const Job& job, Time end) const;
  PendingReason CapacityReason(const Job& job, const Placer::Outcome& o, Time end);
  void Wait(const Job& job, PendingReason reason);

  const State& state_;
  const SchedulerConfig& cfg_;
  Time now_;
  Session session_;
  Placer placer_;
  Backfill backfill_;
  Plan plan_;
  std::vector<std::vector<const Job*>> queues_;
  std::vector<size_t> next_;
  std::vector<double> history_;
  std::map<FailKey, PendingReason> failed_;
  std::map<JobId, PendingReason> waiting_;
  std::vector<JobId> released_;
  int preempt_budget_ = 0;
  int holds_left_ = 0;
};

Cycle::TenantTurn Cycle::TurnOf(uint32_t t) const {
  const Tenant& ten = state_.tenants()[t];
  const Job& head = *queues_[t][next_[t]];
  const FlavorId f = head.spec.shape.flavor;
  const QuotaBook& q = session_.quota();
  const bool within = q.has_quota(ten.id, f) &&
                      q.usage(ten.id, f) + head.Eq(state_.catalogue()) <= q.guaranteed(ten.id, f);
  const double dominant = BorrowedDominantShare(q, ten, state_.catalogue().size());
  return {!within, FairShareKey(cfg_.fair_share, dominant, history_[t]), t};
}

FailKey Cycle::KeyOf(const Job& job, Time end) const {
  const ReplicaShape& s = job.spec.shape;
  const bool holds = !session_.held_nodes().empty();
  return {job.spec.tenant.value(), s.flavor.value(), static_cast<int>(s.kind), s.gpus,
          s.mig_profile, s.milli, static_cast<int>(s.gpu_memory_mib), job.spec.replicas,
          static_cast<uint16_t>(job.spec.topology.level), 0, job.spec.topology.required,
          s.cpu_milli, s.memory_mib, holds ? end.millis() : 0};
}

void Cycle::Wait(const Job& job, PendingReason reason) { waiting_[job.id] = std::move(reason); }

bool Cycle::Commit(const Job& job, Placer::Outcome& o, AdmissionKind kind) {
  for (ReconfigureDecision& r : o.reconfigurations) plan_.reconfigurations.push_back(r);
  plan_.placements.push_back({job.id, o.placement, kind});
  backfill_.AddPlaced(job, o.placement);
  session_.Commit();
  return true;
}

PendingReason Cycle::CapacityReason(const Job& job, const Placer::Outcome& o, Time end) {
  const Catalogue& cat = state_.catalogue();
  std::string what = "waiting for " + Describe(cat, job.spec.shape);
  if (job.spec.replicas > 1) what += " x " + std::to_string(job.spec.replicas) + " replicas";
  if (job.spec.topology.level != TopologyLevel::kNone) {
    what += std::string(job.spec.topology.required ? " in one " : " (preferably in one ") +
            std::string(TopologyLevelName(job.spec.topology.level)) +
            (job.spec.topology.required ? "" : ")");
  }
  // Would it fit if nothing were held? Then a hold is what blocks it.
  if (!session_.held_nodes().empty() && end > now_) {
    const size_t mark = session_.Mark();
    Placer::Outcome free = placer_.PlaceGang(
        job, session_.EligiblePools(job.spec.tenant, job.spec.shape.flavor), now_);
    session_.RollbackTo(mark);
    if (free.ok) {
      return {ReasonCode::kHeldForBackfill,
              what + ": capacity is held for a larger job that waits longer; only jobs that "
                     "end before it starts may use it"};
    }
  }
  return {o.code, what + ": " + o.detail};
}

void Cycle::Consider(const Job& job) {
  ++plan_.stats.considered;
  const TenantId t = job.spec.tenant;
  const FlavorId f = job.spec.shape.flavor;
  const GpuEq eq = job.Eq(state_.catalogue());
  const Time end = now_ + job.spec.estimated_duration;
  const std::vector<uint32_t>& pools = session_.EligiblePools(t, f);
  if (pools.empty()) {
    Wait(job, {ReasonCode::kNoEligibleNodes,
               "no ready node offers " + state_.catalogue().model(f).name +
                   " to tenant " + state_.tenant(t).name});
    return;
  }
  const FailKey key = KeyOf(job, end);
  if (auto it = failed_.find(key); it != failed_.end()) {
    Wait(job, it->second);
    return;
  }
  std::vector<uint32_t> dedicated, shared;
  for (uint32_t p : pools) (session_.pool(p).dedicated.valid() ? dedicated : shared).push_back(p);
  Placer::Outcome o;
  if (!dedicated.empty()) {
    ++plan_.stats.placement_attempts;
    o = placer_.PlaceGang(job, dedicated, end);
    if (o.ok) {
      Commit(job, o, AdmissionKind::kDedicated);
      return;
    }
  }
  const PriorityClass& pc = state_.priority_class(job.spec.priority_class);
  const QuotaVerdict verdict = session_.quota().Check(t, f, eq, pc.may_borrow);
  if (!shared.empty() && verdict.ok()) {
    ++plan_.stats.placement_attempts;
    o = placer_.PlaceGang(job, shared, end);
    if (o.ok) {
      session_.QuotaAdd(t, f, eq);
      Commit(job, o, verdict.kind);
      return;
    }
  }
  // Preemption: for capacity (reclaim or priority) or for the tenant's own borrow limit
  // (priority only: freeing its own lower-priority work).
  const bool own_limit = verdict.code == ReasonCode::kBorrowLimit ||
                         verdict.code == ReasonCode::kMayNotBorrow;
  if (cfg_.preemption.enabled && !shared.empty() && (verdict.ok() || own_limit)) {
    if (preempt_budget_ > 0) {
      --preempt_budget_;
      ++plan_.stats.preemption_attempts;
      PreemptOutcome po = TryPreempt(session_, placer_, job, shared, cfg_.preemption, released_);
      if (po.ok) {
        for (const PreemptDecision& d : po.victims) {
          plan_.preemptions.push_back(d);
          released_.push_back(d.victim);
          backfill_.AddReleased(d.victim);
        }
        Commit(job, po.placement, po.kind);
        failed_.clear();  // capacity was freed
        return;
      }
    }
  }
  if (!verdict.ok()) {
    Wait(job, {verdict.code, session_.quota().Explain(state_, t, f, eq, verdict.code)});
    return;
  }
  if (shared.empty()) {
    Wait(job, CapacityReason(job, o, end));
    return;
  }
  PendingReason reason = CapacityReason(job, o, end);
  if (cfg_.backfill.enabled && holds_left_ > 0 && reason.code != ReasonCode::kHeldForBackfill) {
    const Time start = backfill_.HoldFor(job, shared);
    session_.Commit();
    if (!start.is_never()) {
      --holds_left_;
      ++plan_.stats.holds;
      reason.message += "; capacity is held for it, expected start " + ToString(start);
      Wait(job, std::move(reason));
      return;  // not cached: the next job of this shape sees different holds
    }
  }
  failed_[KeyOf(job, end)] = reason;
  Wait(job, std::move(reason));
}

Plan Cycle::Run() {
  preempt_budget_ = cfg_.preemption.max_attempts_per_cycle;
  holds_left_ = cfg_.backfill.max_holds;
  const size_t nt = state_.tenants().size();
  queues_.assign(nt, {});
  next_.assign(nt, 0);
  for (JobId id : state_.pending()) {
    const Job& j = *state_.FindJob(id);
    queues_[j.spec.tenant.value()].push_back(&j);
  }
  for (auto& q : queues_) {
    std::sort(q.begin(), q.end(),
              [&](const Job* a, const Job* b) { return QueueBefore(state_, *a, *b); });
  }
  history_ = cfg_.fair_share.usage_blend > 0
                 ? HistoryShares(state_, state_.DecayedUsages(now_))
                 : std::vector<double>(nt, 0.0);
  std::priority_queue<TenantTurn, std::vector<TenantTurn>, std::greater<TenantTurn>> turns;
  for (uint32_t t = 0; t < nt; ++t) {
    if (!queues_[t].empty()) turns.push(TurnOf(t));
  }
  while (!turns.empty()) {
    const uint32_t t = turns.top().tenant;
    turns.pop();
    Consider(*queues_[t][next_[t]]);
    if (++next_[t] < queues_[t].size()) turns.push(TurnOf(t));
  }
  for (const auto& [id, reason] : waiting_) plan_.pending.push_back({id, reason});
  plan_.stats.node_classes = static_cast<int>(session_.num_classes());
  return std::move(plan_);
}

}  // namespace

Plan Schedule(const State& state, const SchedulerConfig& config, Time now) {
  GP_CHECK(Validate(config).ok()) << "unvalidated scheduler config";
  WorkloadMix mix;
  if (config.placement == "fgd") mix = WorkloadMixOf(state, config.max_workload_types);
  Result<std::unique_ptr<PlacementPolicy>> policy =
      MakePlacementPolicy(config.placement, std::move(mix), config.mig_reconfigure);
  GP_CHECK(policy.ok());
  Cycle cycle(state, config, **policy, now);
  return cycle.Run();
}

}  // namespace gpupool
