#include "scheduler/schedule.h"

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <unordered_map>
#include <queue>
#include <tuple>

#include "policy/calendar/calendar.h"
#include "policy/fair_share/fair_share.h"
#include "policy/priority/ordering.h"
#include "scheduler/backfill.h"
#include "scheduler/preempt.h"

namespace gpupool {
namespace {

// What identifies "the same request" within one cycle: if one such job found no room (and no
// victims), the next one will not either until something is freed.
struct FailKey {
  uint32_t tenant;
  uint16_t flavor, priority_class;
  uint8_t kind, gpus, mig_profile, topology;  // topology: level * 2 + required
  uint16_t milli, replicas;
  uint32_t gpu_memory_mib;
  int64_t cpu_milli, memory_mib;
  int64_t end_ms;  // only while holds exist: a shorter job may fit where a longer one did not
  uint32_t selector;  // 0: none; else 1 + the cycle's index of Describe(node_selector)
  friend bool operator==(const FailKey&, const FailKey&) = default;
};
struct FailKeyHash {
  size_t operator()(const FailKey& k) const {
    uint64_t h = 0xcbf29ce484222325ull;
    auto mix = [&h](uint64_t v) { h = (h ^ v) * 0x100000001b3ull; };
    mix(k.tenant);
    mix((uint64_t{k.flavor} << 16) | k.priority_class);
    mix((uint64_t{k.kind} << 24) | (uint64_t{k.gpus} << 16) | (uint64_t{k.mig_profile} << 8) |
        k.topology);
    mix((uint64_t{k.milli} << 48) | (uint64_t{k.replicas} << 32) | k.gpu_memory_mib);
    mix(static_cast<uint64_t>(k.cpu_milli));
    mix(static_cast<uint64_t>(k.memory_mib));
    mix(static_cast<uint64_t>(k.end_ms));
    mix(k.selector);
    return static_cast<size_t>(h);
  }
};

class Cycle {
 public:
  Cycle(const State& state, const SchedulerConfig& cfg, const PlacementPolicy& policy, Time now,
        const NodeDeadlines& deadlines)
      : state_(state),
        cfg_(cfg),
        now_(now),
        session_(state, policy, now, deadlines),
        placer_(session_, cfg.mig_reconfigure, cfg.key_search),
        backfill_(session_, placer_) {}

  Plan Run();

 private:
  struct TenantTurn {
    bool borrowing;
    double share;
    uint32_t tenant;
    uint32_t version;  // stale when the tenant's share changed after this entry was pushed
    bool operator>(const TenantTurn& o) const {
      return std::tie(borrowing, share, tenant) > std::tie(o.borrowing, o.share, o.tenant);
    }
  };

  TenantTurn TurnOf(uint32_t tenant);
  // Re-queues a tenant whose share changed (its work was preempted) under its new key.
  void Refresh(uint32_t tenant);
  void Consider(const Job& job);
  // Admits and places `job` (the job or its copy on another flavor, AsFlavor) if it can; else,
  // unless probing_, records why it waits. True when admitted.
  bool ConsiderAs(const Job& job);
  // The job as if its shape were of flavor f: itself, or a copy that lives for the cycle.
  const Job& AsFlavor(const Job& job, FlavorId f);
  // A job naming a reservation runs only while it is in force and within its amount; otherwise
  // it waits (reason kReservation) and this returns false.
  bool ReservationAdmits(const Job& job, GpuEq eq);
  bool Commit(const Job& job, Placer::Outcome& o, AdmissionKind kind);
  FailKey KeyOf(const Job& job, Time end) const;
  uint32_t SelectorIndex(const Job& job) const;
  PendingReason CapacityReason(const Job& job, const Placer::Outcome& o, Time end);
  uint32_t AddReason(PendingReason reason);
  // "; 3 are not_ready (no node agent has registered for it), 1 is cordoned": the nodes of the
  // flavor the tenant could use but for their condition, counted once per tenant and flavor.
  const std::string& UnschedulableNote(TenantId t, FlavorId f);
  void Wait(const Job& job, PendingReason reason);
  void WaitWith(const Job& job, uint32_t reason);

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
  std::vector<uint32_t> version_;
  std::vector<double> share_;      // fair-share key per tenant, valid unless dirty
  std::vector<bool> share_dirty_;  // usage changed since share_ was computed
  std::priority_queue<TenantTurn, std::vector<TenantTurn>, std::greater<TenantTurn>> turns_;
  std::unordered_map<FailKey, uint32_t, FailKeyHash> failed_;  // -> reason index
  std::map<std::tuple<uint32_t, uint16_t, int64_t, int, int64_t, int64_t, int64_t>, uint32_t>
      quota_reasons_;
  std::vector<JobId> released_;
  std::map<std::pair<uint32_t, uint16_t>, std::string> unschedulable_notes_;
  mutable std::map<std::string, uint32_t> selectors_;  // node selectors seen, for FailKey
  // GPU-equivalents held by the jobs naming each reservation; built on first use.
  std::optional<std::map<ReservationId, GpuEq>> reserved_used_;
  int preempt_budget_ = 0;
  int queue_budget_ = 0;      // queue preemptions left this cycle (QueuePolicyConfig)
  std::vector<QueueOrder> orders_;              // each tenant's queue policy
  std::vector<std::vector<uint32_t>> ahead_;    // per queue entry: jobs before it in its class
  uint32_t current_ahead_ = 0;                  // of the job being considered
  std::deque<Job> variants_;  // AsFlavor's copies: the backfill timeline points at them
  bool probing_ = false;      // trying a flavor of several: no preemption, hold or reason
  FlavorId home_flavor_;      // the flavor of the job being considered, in the state
  std::string flavor_note_;   // appended to the reason of a job none of whose flavors fits
  int holds_left_ = 0;
  int hold_attempts_left_ = 0;  // a failed attempt also costs a timeline walk
};

Cycle::TenantTurn Cycle::TurnOf(uint32_t t) {
  const Tenant& ten = state_.tenants()[t];
  const Job& head = *queues_[t][next_[t]];
  const FlavorId f = head.spec.shape.flavor;
  const QuotaBook& q = session_.quota();
  const bool within = q.has_quota(ten.id, f) &&
                      q.usage(ten.id, f) + head.Eq(state_.catalogue()) <= q.guaranteed(ten.id, f);
  if (share_dirty_[t]) {
    share_[t] = FairShareKey(cfg_.fair_share,
                             BorrowedDominantShare(q, ten, state_.catalogue().size()), history_[t]);
    share_dirty_[t] = false;
  }
  return {!within, share_[t], t, version_[t]};
}

void Cycle::Refresh(uint32_t t) {
  share_dirty_[t] = true;
  if (next_[t] >= queues_[t].size()) return;
  ++version_[t];
  turns_.push(TurnOf(t));
}

FailKey Cycle::KeyOf(const Job& job, Time end) const {
  const ReplicaShape& s = job.spec.shape;
  const bool holds = !session_.held_nodes().empty();
  return {job.spec.tenant.value(),
          s.flavor.value(),
          job.spec.priority_class.value(),
          static_cast<uint8_t>(s.kind),
          s.gpus,
          s.mig_profile,
          static_cast<uint8_t>(static_cast<int>(job.spec.topology.level) * 2 +
                               job.spec.topology.required),
          s.milli,
          job.spec.replicas,
          s.gpu_memory_mib,
          s.cpu_milli,
          s.memory_mib,
          holds ? end.millis() : 0,
          SelectorIndex(job)};
}

uint32_t Cycle::SelectorIndex(const Job& job) const {
  if (job.spec.node_selector.empty()) return 0;
  auto [it, fresh] = selectors_.try_emplace(Describe(job.spec.node_selector), selectors_.size() + 1);
  return it->second;
}

uint32_t Cycle::AddReason(PendingReason reason) {
  plan_.reasons.push_back(std::move(reason));
  return static_cast<uint32_t>(plan_.reasons.size() - 1);
}

const std::string& Cycle::UnschedulableNote(TenantId t, FlavorId f) {
  auto [it, fresh] = unschedulable_notes_.try_emplace({t.value(), f.value()});
  if (!fresh) return it->second;
  const Tenant& ten = state_.tenant(t);
  std::map<NodeCondition, std::pair<int, std::string>> by;  // count, the first node's reason
  for (const Node& n : state_.nodes()) {
    if (n.flavor != f || n.schedulable() || n.condition == NodeCondition::kRetired) continue;
    if (n.dedicated_to.valid() && n.dedicated_to != t) continue;
    if (!std::includes(n.labels.begin(), n.labels.end(), ten.required_labels.begin(), ten.required_labels.end())) {
      continue;
    }
    auto& [count, reason] = by[n.condition];
    if (count++ == 0) reason = n.condition_reason;
  }
  for (const auto& [condition, entry] : by) {
    it->second += (it->second.empty() ? "; " : ", ") + std::to_string(entry.first) +
                  (entry.first == 1 ? " is " : " are ") + std::string(NodeConditionName(condition)) +
                  (entry.second.empty() ? "" : " (" + entry.second + ")");
  }
  return it->second;
}

void Cycle::Wait(const Job& job, PendingReason reason) {
  if (!probing_) WaitWith(job, AddReason(std::move(reason)));
}

void Cycle::WaitWith(const Job& job, uint32_t reason) {
  if (probing_) return;
  if (!flavor_note_.empty()) {
    PendingReason r = plan_.reasons[reason];
    r.message += flavor_note_;
    reason = AddReason(std::move(r));
  }
  PendingNote note{job.id, reason};
  // Under a queue policy other than fifo, or once starved, where the job stands is news: a
  // shorter job may overtake it (or it overtakes others).
  const QueueOrder order = orders_[job.spec.tenant.value()];
  if (order != QueueOrder::kFifo || Starved(cfg_.queue, job, now_)) {
    note.position = "in tenant " + state_.tenant(job.spec.tenant).name + "'s queue, " +
                    DescribePosition(cfg_.queue, order, job, state_.catalogue(), now_, current_ahead_);
  }
  plan_.pending.push_back(std::move(note));
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

PendingReason Cycle::CapacityReason(const Job& job, const Placer::Outcome& o, Time end) {
  const Catalogue& cat = state_.catalogue();
  std::string what = "waiting for " + Describe(cat, job.spec.shape);
  if (job.spec.replicas > 1) what += " x " + std::to_string(job.spec.replicas) + " replicas";
  if (job.spec.topology.level != TopologyLevel::kNone) {
    what += std::string(job.spec.topology.required ? " in one " : " (preferably in one ") +
            std::string(TopologyLevelName(job.spec.topology.level)) +
            (job.spec.topology.required ? "" : ")");
  }
  // Would it fit if nothing were held? Then a hold is what blocks it. Backfill holds only
  // shared pools; a dedicated node held for its deadline is not a backfill reason.
  if (!session_.held_nodes().empty() && end > now_) {
    std::vector<uint32_t> shared;
    for (uint32_t p : session_.EligiblePools(job)) {
      if (!session_.pool(p).dedicated.valid()) shared.push_back(p);
    }
    const size_t mark = session_.Mark();
    Placer::Outcome free = placer_.PlaceGang(job, shared, now_);
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
  for (FlavorId f : job.spec.flavors) {
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

Plan Cycle::Run() {
  preempt_budget_ = cfg_.preemption.max_attempts_per_cycle;
  queue_budget_ = cfg_.queue.max_preemptions_per_cycle;
  holds_left_ = cfg_.backfill.max_holds;
  hold_attempts_left_ = 4 * cfg_.backfill.max_holds;
  const size_t nt = state_.tenants().size();
  queues_.assign(nt, {});
  next_.assign(nt, 0);
  ahead_.assign(nt, {});
  orders_.resize(nt);
  for (uint32_t t = 0; t < nt; ++t) orders_[t] = OrderOf(cfg_.queue, state_.tenants()[t]);
  // Queue order (QueueKey, under each tenant's queue policy), the sort keys computed once per job.
  std::vector<std::vector<std::pair<QueueKey, const Job*>>> entries(nt);
  for (JobId id : state_.pending()) {  // not jobs(): that grows with history
    const Job& j = *state_.FindJob(id);
    const uint32_t t = j.spec.tenant.value();
    entries[t].push_back({QueueKeyOf(state_, j, cfg_.queue, orders_[t], now_), &j});
  }
  for (uint32_t t = 0; t < nt; ++t) {
    std::sort(entries[t].begin(), entries[t].end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    queues_[t].reserve(entries[t].size());
    ahead_[t].reserve(entries[t].size());
    uint32_t in_class = 0;
    for (size_t i = 0; i < entries[t].size(); ++i) {
      const QueueKey& k = entries[t][i].first;
      if (i > 0 && (k.neg_priority != entries[t][i - 1].first.neg_priority ||
                    k.unreserved != entries[t][i - 1].first.unreserved)) {
        in_class = 0;
      }
      ahead_[t].push_back(in_class++);
      queues_[t].push_back(entries[t][i].second);
    }
  }
  history_ = cfg_.fair_share.usage_blend > 0
                 ? HistoryShares(state_, state_.DecayedUsages(now_))
                 : std::vector<double>(nt, 0.0);
  version_.assign(nt, 0);
  share_.assign(nt, 0.0);
  share_dirty_.assign(nt, true);
  for (uint32_t t = 0; t < nt; ++t) {
    if (!queues_[t].empty()) turns_.push(TurnOf(t));
  }
  while (!turns_.empty()) {
    const TenantTurn turn = turns_.top();
    turns_.pop();
    const uint32_t t = turn.tenant;
    if (turn.version != version_[t]) continue;
    current_ahead_ = ahead_[t][next_[t]];
    Consider(*queues_[t][next_[t]]);
    ++version_[t];
    if (++next_[t] < queues_[t].size()) turns_.push(TurnOf(t));
  }
  std::sort(plan_.pending.begin(), plan_.pending.end(),
            [](const PendingNote& a, const PendingNote& b) { return a.job < b.job; });
  plan_.stats.node_classes = static_cast<int>(session_.num_classes());
  return std::move(plan_);
}

}  // namespace

Plan Schedule(const State& state, const SchedulerConfig& config, Time now,
              const NodeDeadlines& deadlines) {
  GP_CHECK(Validate(config).ok()) << "unvalidated scheduler config";
  WorkloadMix mix;
  if (config.workload) {
    mix = *config.workload;
  } else if (config.placement == "fgd" || config.placement == "gpupool") {
    mix = WorkloadMixOf(state, config.max_workload_types);
  }
  if (config.placement == "gpupool" && mix.fractions.empty()) mix.fractions = RecentFractions(state, config.pairing_window);
  Result<std::unique_ptr<PlacementPolicy>> policy =
      MakePlacementPolicy(config.placement, std::move(mix), config.mig_reconfigure);
  GP_CHECK(policy.ok());
  Cycle cycle(state, config, **policy, now, deadlines);
  return cycle.Run();
}

}  // namespace gpupool
