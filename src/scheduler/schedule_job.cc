// One job's turn in the cycle: its flavors in order, the quota check, placement as a gang,
// preemption, and a backfill hold when it must wait (docs/design/scheduler.md, "The loop").
#include <algorithm>
#include <tuple>

#include "policy/calendar/calendar.h"
#include "policy/priority/ordering.h"
#include "scheduler/cycle.h"
#include "scheduler/preempt.h"

namespace gpupool::cycle_internal {

void Cycle::Consider(const Job& job) {
  ++plan_.stats.considered;
  home_flavor_ = job.spec.shape.flavor;
  if (job.spec.flavors.size() <= 1) {
    ConsiderAs(job);
    return;
  }
  // Flavor fungibility (Kueue's default: whenCanBorrow Borrow, whenCanPreempt TryNextFlavor):
  // each accepted flavor in order of preference, taken if the job is admitted there without
  // preemption (within its guarantee or borrowing); only if none is, the first flavor with
  // preemption and backfill holds, and its reason is the job's.
  probing_ = true;
  const std::vector<FlavorId> order =
      cfg_.flavor_choice == FlavorChoice::kBest ? ByFit(job) : job.spec.flavors;
  for (FlavorId f : order) {
    if (ConsiderAs(AsFlavor(job, f))) {
      probing_ = false;
      return;
    }
  }
  probing_ = false;
  std::string others;
  for (size_t i = 1; i < job.spec.flavors.size(); ++i) {
    others += (i > 1 ? ", " : "") + state_.catalogue().model(job.spec.flavors[i]).name;
  }
  flavor_note_ = "; its other flavors (" + others + ") have no room for it either";
  ConsiderAs(AsFlavor(job, job.spec.flavors[0]));
  flavor_note_.clear();
}

std::vector<FlavorId> Cycle::ByFit(const Job& job) {
  struct Fit {
    bool none;
    int64_t score;
    uint32_t node;
    size_t index;
  };
  std::vector<Fit> fits;
  const Time end = now_ + job.spec.estimated_duration;
  for (size_t i = 0; i < job.spec.flavors.size(); ++i) {
    const Job& v = AsFlavor(job, job.spec.flavors[i]);
    Fit fit{true, 0, 0, i};
    const std::vector<uint32_t>& pools = session_.EligiblePools(v);
    if (!pools.empty()) {
      const size_t mark = session_.Mark();
      const Placer::Outcome o = placer_.PlaceGang(v, pools, end);
      if (o.ok) fit = {false, o.score, o.placement.front().node.value(), i};
      session_.RollbackTo(mark);
    }
    fits.push_back(fit);
  }
  std::sort(fits.begin(), fits.end(), [](const Fit& a, const Fit& b) {
    return std::tie(a.none, a.score, a.node, a.index) < std::tie(b.none, b.score, b.node, b.index);
  });
  std::vector<FlavorId> out;
  for (const Fit& f : fits) out.push_back(job.spec.flavors[f.index]);
  return out;
}

const Job& Cycle::AsFlavor(const Job& job, FlavorId f) {
  if (job.spec.shape.flavor == f) return job;
  Job& v = variants_.emplace_back(job);
  v.spec.shape.flavor = f;
  return v;
}

bool Cycle::ConsiderAs(const Job& job) {
  const TenantId t = job.spec.tenant;
  const FlavorId f = job.spec.shape.flavor;
  const GpuEq eq = job.Eq(state_.catalogue());
  const Time end = now_ + job.spec.estimated_duration;
  if (job.spec.reservation.valid() && !ReservationAdmits(job, eq)) return false;
  const std::vector<uint32_t>& pools = session_.EligiblePools(job);
  if (pools.empty() && !job.spec.node_selector.empty() && !session_.EligiblePools(t, f).empty()) {
    Wait(job, {ReasonCode::kNoEligibleNodes,
               "no ready " + state_.catalogue().model(f).name + " node offered to tenant " + state_.tenant(t).name +
                   " matches node_selector " + Describe(job.spec.node_selector)});
    return false;
  }
  if (pools.empty()) {
    Wait(job, {ReasonCode::kNoEligibleNodes,
               "no ready node offers " + state_.catalogue().model(f).name + " to tenant " +
                   state_.tenant(t).name + UnschedulableNote(t, f)});
    return false;
  }
  bool could_fit = false;
  for (uint32_t p : pools) could_fit = could_fit || session_.CouldEverFit(p, job);
  if (!could_fit) {
    Wait(job, {ReasonCode::kNeverFits,
               Describe(state_.catalogue(), job.spec.shape) +
                   (job.spec.replicas > 1 ? " x " + std::to_string(job.spec.replicas) : "") +
                   " is larger than any ready node offered to tenant " +
                   state_.tenant(t).name + " can hold even when idle"});
    return false;
  }
  // A job with a preemption history may have other victims than its twin: never cached.
  const bool cacheable = job.preempted_by.empty();
  if (cacheable) {
    if (auto it = failed_.find(KeyOf(job, end)); it != failed_.end()) {
      WaitWith(job, it->second);
      return false;
    }
  }
  std::vector<uint32_t> dedicated, shared;
  for (uint32_t p : pools) (session_.pool(p).dedicated.valid() ? dedicated : shared).push_back(p);
  Placer::Outcome o;
  if (!dedicated.empty()) {
    ++plan_.stats.placement_attempts;
    o = placer_.PlaceGang(job, dedicated, end);
    if (o.ok) {
      return Commit(job, o, AdmissionKind::kDedicated);
    }
  }
  const PriorityClass& pc = state_.priority_class(job.spec.priority_class);
  // Only dedicated nodes to offer: quota does not apply, and they are full. A job inside its
  // reservation (ReservationAdmits) is within the reserved amount: guaranteed, whatever the
  // tenant's other jobs use, and it never borrows.
  const bool reserved = job.spec.reservation.valid();
  const QuotaVerdict verdict = shared.empty() || reserved ? QuotaVerdict{}
                                                          : session_.quota().Check(t, f, eq, pc.may_borrow);
  if (!shared.empty() && verdict.ok()) {
    ++plan_.stats.placement_attempts;
    o = placer_.PlaceGang(job, shared, end);
    if (o.ok) {
      session_.QuotaAdd(t, f, eq);
      return Commit(job, o, verdict.kind);
    }
  }
  if (probing_) return false;  // another flavor is tried before preempting or holding for this one
  // Preemption: for capacity (reclaim or priority) or for quota (the tenant's own lower-priority
  // work frees quota too; TryPreempt re-checks the quota after the victims leave).
  bool budget_spent = false;
  if (cfg_.preemption.enabled && !shared.empty() && verdict.code != ReasonCode::kNoQuota) {
    if (preempt_budget_ > 0) {
      --preempt_budget_;
      ++plan_.stats.preemption_attempts;
      const QueueVictims queue{&cfg_.queue, orders_[t.value()], queue_budget_};
      PreemptOutcome po = TryPreempt(session_, placer_, job, shared, cfg_.preemption, released_, queue);
      if (po.ok) {
        for (const PreemptDecision& d : po.victims) {
          if (d.kind == PreemptKind::kQueue) --queue_budget_;
          plan_.preemptions.push_back(d);
          released_.push_back(d.victim);
          backfill_.AddReleased(d.victim);
          Refresh(state_.FindJob(d.victim)->spec.tenant.value());
        }
        failed_.clear();  // capacity was freed
        return Commit(job, po.placement, po.kind);
      }
    } else {
      budget_spent = true;
    }
  }
  if (!verdict.ok()) {
    // The sentence depends only on these numbers: share it between jobs that see the same.
    const QuotaBook& q = session_.quota();
    const auto qkey = std::make_tuple(t.value(), f.value(), eq.units(),
                                      static_cast<int>(verdict.code), q.usage(t, f).units(),
                                      q.lendable_to(t, f).units(),
                                      q.usage_on_capacity(f).units());
    auto [it, fresh] = quota_reasons_.try_emplace(qkey, 0);
    if (fresh) it->second = AddReason({verdict.code, q.Explain(state_, t, f, eq, verdict.code)});
    WaitWith(job, it->second);
    return false;
  }
  PendingReason reason = CapacityReason(job, o, end);
  // Within its guarantee, blocked by others' borrowed work that is not old enough to preempt:
  // say from whom and from when.
  if (!shared.empty() && reason.code != ReasonCode::kHeldForBackfill) {
    if (std::optional<ReclaimWait> w = PendingReclaim(session_, job, shared, cfg_.preemption)) {
      std::string from;
      for (TenantId victim : w->from) from += (from.empty() ? "tenant " : ", ") + state_.tenant(victim).name;
      reason.message = "reclaiming " + ToString(w->amount) + " GPUs from " + from + "; earliest at " +
                       Rfc3339(w->earliest) + ", when its work has run the minimum runtime; " + reason.message;
    }
  }
  if (budget_spent && reason.code != ReasonCode::kHeldForBackfill) {
    reason.code = ReasonCode::kPreemptionBudget;
    reason.message += "; preemption may make room but this cycle's budget of " +
                      std::to_string(cfg_.preemption.max_attempts_per_cycle) +
                      " attempts is spent: retried next cycle";
  }
  if (cfg_.backfill.enabled && !shared.empty() && holds_left_ > 0 && hold_attempts_left_ > 0 &&
      reason.code != ReasonCode::kHeldForBackfill) {
    --hold_attempts_left_;
    const Time start = backfill_.HoldFor(job, shared);
    session_.Commit();
    if (!start.is_never()) {
      --holds_left_;
      ++plan_.stats.holds;
      reason.message += "; capacity is held for it, expected start in " + ToString(start - now_);
      Wait(job, std::move(reason));
      return false;  // not cached: the next job of this shape sees different holds
    }
  }
  const uint32_t r = AddReason(std::move(reason));
  if (cacheable) failed_[KeyOf(job, end)] = r;
  WaitWith(job, r);
  return false;
}

bool Cycle::ReservationAdmits(const Job& job, GpuEq eq) {
  const ReservationId rid = job.spec.reservation;
  const std::string name = "reservation " + std::to_string(rid.value());
  const Reservation* r = state_.FindReservation(rid);
  if (r == nullptr) {
    Wait(job, {ReasonCode::kReservation, name + " was cancelled; cancel the job or resubmit it without it"});
    return false;
  }
  if (now_ < r->start) {
    Wait(job, {ReasonCode::kReservation, name + " starts in " + ToString(r->start - now_)});
    return false;
  }
  if (now_ >= r->end) {
    Wait(job, {ReasonCode::kReservation, name + " has ended; cancel the job or resubmit it without it"});
    return false;
  }
  if (!reserved_used_) {
    reserved_used_.emplace();
    for (JobId id : state_.active()) {
      const Job& a = *state_.FindJob(id);
      if (a.spec.reservation.valid()) (*reserved_used_)[a.spec.reservation] += a.Eq(state_.catalogue());
    }
  }
  const GpuEq used = (*reserved_used_)[rid];
  if (used + eq > r->amount) {
    Wait(job, {ReasonCode::kReservation, name + " holds " + ToString(r->amount) + " GPUs and its jobs use " +
                                             ToString(used) + "; this job needs " + ToString(eq)});
    return false;
  }
  return true;
}

bool Cycle::Commit(const Job& job, Placer::Outcome& o, AdmissionKind kind) {
  share_dirty_[job.spec.tenant.value()] = true;
  if (job.spec.reservation.valid() && reserved_used_) {
    (*reserved_used_)[job.spec.reservation] += job.Eq(state_.catalogue());
  }
  for (ReconfigureDecision& r : o.reconfigurations) plan_.reconfigurations.push_back(r);
  for (ModeChangeDecision& m : o.mode_changes) plan_.mode_changes.push_back(m);
  plan_.placements.push_back(
      {job.id, o.placement, kind, job.spec.shape.flavor != home_flavor_ ? job.spec.shape.flavor : FlavorId()});
  backfill_.AddPlaced(job, o.placement);
  session_.Commit();
  return true;
}

}  // namespace gpupool::cycle_internal
