#include "policy/quota/quota.h"

#include <algorithm>
#include <map>

namespace gpupool {

std::vector<GpuEq> PoolCapacities(const State& state) {
  std::vector<GpuEq> out(state.catalogue().size());
  for (const Node& n : state.nodes()) {
    if (!n.schedulable() || n.dedicated_to.valid()) continue;
    for (const Gpu& g : n.gpus) {
      if (g.healthy) out[n.flavor.value()] += GpuEq::Gpus(1);
    }
  }
  return out;
}

QuotaBook::QuotaBook(const State& state)
    : flavors_(state.catalogue().size()),
      cells_(state.tenants().size() * state.catalogue().size()),
      healthy_(PoolCapacities(state)),
      maintenance_(flavors_),
      capacity_(healthy_),
      total_usage_(flavors_),
      on_capacity_(flavors_),
      protected_(flavors_) {
  for (const Tenant& t : state.tenants()) {
    for (const auto& [f, q] : t.quotas) {
      Cell& c = cell(t.id, f);
      c.has_quota = true;
      c.guaranteed = q.guaranteed;
      c.borrow_capped = q.borrow_limit.has_value();
      c.borrow_limit = q.borrow_limit.value_or(GpuEq());
      c.lend_capped = q.lend_limit.has_value();
      c.lend_limit = q.lend_limit.value_or(GpuEq());
    }
  }
  for (JobId id : state.active()) {
    const Job& j = *state.FindJob(id);
    if (j.admitted_as == AdmissionKind::kDedicated) continue;
    Cell& c = cell(j.spec.tenant, j.spec.shape.flavor);
    c.usage += j.Eq(state.catalogue());
    total_usage_[j.spec.shape.flavor.value()] += j.Eq(state.catalogue());
    for (const ReplicaPlacement& rp : j.placement) {
      on_capacity_[j.spec.shape.flavor.value()] += OnCapacity(state, j, rp);
    }
  }
  SumProtected();
}

QuotaBook::QuotaBook(const State& state, Time now) : QuotaBook(state) {
  AddReservations(state, now);
  SumProtected();
}

// An active reservation is extra guarantee, and extra lendable guarantee: raising L with G
// keeps protected(t) = max(0, G - U - L) where the standing quota put it, so the reserved part
// is lent while idle and reclaimed like any guarantee (docs/design/reservations.md).
void QuotaBook::AddReservations(const State& state, Time now) {
  for (const auto& [id, r] : state.reservations()) {
    if (!r.Holds(now)) continue;
    if (r.maintenance) {
      maintenance_[r.flavor.value()] += r.amount;
      continue;
    }
    Cell& c = cell(r.tenant, r.flavor);
    if (!c.has_quota) {
      c.has_quota = true;
      c.borrow_capped = true;  // limit 0: the reservation, nothing more
    }
    c.guaranteed += r.amount;
    c.reserved += r.amount;
    if (c.lend_capped) c.lend_limit += r.amount;
  }
  for (size_t f = 0; f < flavors_; ++f) {
    capacity_[f] = Max(GpuEq(), healthy_[f] - maintenance_[f]);
  }
}

void QuotaBook::SumProtected() {
  std::fill(protected_.begin(), protected_.end(), GpuEq());
  for (size_t i = 0; i < cells_.size(); ++i) protected_[i % flavors_] += cells_[i].Protected();
}

void QuotaBook::Add(TenantId t, FlavorId f, GpuEq amount, GpuEq on_capacity) {
  Cell& c = cell(t, f);
  protected_[f.value()] -= c.Protected();
  c.usage += amount;
  protected_[f.value()] += c.Protected();
  total_usage_[f.value()] += amount;
  on_capacity_[f.value()] += on_capacity;
}

GpuEq QuotaBook::lendable_to(TenantId t, FlavorId f) const {
  const GpuEq others_protected = protected_[f.value()] - cell(t, f).Protected();
  return capacity_[f.value()] - on_capacity_[f.value()] - others_protected;
}

QuotaVerdict QuotaBook::Check(TenantId t, FlavorId f, GpuEq demand, bool may_borrow) const {
  const Cell& c = cell(t, f);
  if (!c.has_quota) return {ReasonCode::kNoQuota};
  if (c.usage + demand <= c.guaranteed) {
    // Only maintenance can make the pool smaller than the work already on it plus this job:
    // otherwise P + d <= C whenever the job fits on free GPUs, and placement decides.
    const size_t i = f.value();
    if (maintenance_[i] > GpuEq() && on_capacity_[i] + demand > capacity_[i]) {
      return {ReasonCode::kMaintenance};
    }
    return {ReasonCode::kNone, AdmissionKind::kGuaranteed};
  }
  if (!may_borrow) return {ReasonCode::kMayNotBorrow};
  if (c.borrow_capped && c.usage + demand > c.guaranteed + c.borrow_limit) {
    return {ReasonCode::kBorrowLimit};
  }
  if (demand > lendable_to(t, f)) return {ReasonCode::kNoLendableCapacity};
  return {ReasonCode::kNone, AdmissionKind::kBorrowed};
}

GpuEq OnCapacity(const State& state, const Job& job, const ReplicaPlacement& replica) {
  const Node& n = state.node(replica.node);
  if (!n.schedulable() || n.dedicated_to.valid()) return GpuEq();
  const ReplicaShape& s = job.spec.shape;
  // Each grant's share of the replica: a whole GPU each, or the replica's single grant.
  const GpuEq per_grant = s.kind == ShapeKind::kWholeGpus ? GpuEq::Gpus(1) : s.Eq(state.catalogue());
  GpuEq total;
  for (const GpuGrant& g : replica.grants) {
    if (n.gpus[g.gpu].healthy) total += per_grant;
  }
  return total;
}

std::vector<GuaranteeShortfall> GuaranteeShortfalls(const State& state, const QuotaBook& book) {
  std::vector<GuaranteeShortfall> out;
  for (size_t i = 0; i < state.catalogue().size(); ++i) {
    const FlavorId f(static_cast<uint16_t>(i));
    GpuEq sum;
    for (const Tenant& t : state.tenants()) sum += book.guaranteed(t.id, f);
    if (sum > book.capacity(f)) out.push_back({f, sum, book.capacity(f)});
  }
  return out;
}

std::vector<GuaranteeShortfall> GuaranteeShortfalls(const State& state) {
  return GuaranteeShortfalls(state, QuotaBook(state));
}

namespace {

// "4", or "6 (4 standing + 2 reserved)" while reservations are in force.
std::string GuaranteeText(GpuEq guaranteed, GpuEq reserved) {
  if (reserved <= GpuEq()) return ToString(guaranteed);
  return ToString(guaranteed) + " (" + ToString(guaranteed - reserved) + " standing + " +
         ToString(reserved) + " reserved)";
}

}  // namespace

std::string QuotaBook::Explain(const State& state, TenantId t, FlavorId f, GpuEq demand,
                               ReasonCode code) const {
  const Cell& c = cell(t, f);
  const std::string tn = "tenant " + state.tenant(t).name;
  const std::string fn = state.catalogue().model(f).name;
  const std::string need = "; job needs " + ToString(demand);
  switch (code) {
    case ReasonCode::kNoQuota: return tn + " has no quota for " + fn;
    case ReasonCode::kMayNotBorrow:
      return tn + " would exceed its guarantee of " + GuaranteeText(c.guaranteed, c.reserved) +
             " " + fn + " (using " + ToString(c.usage) + ") and the priority class may not borrow" +
             need;
    case ReasonCode::kBorrowLimit:
      return tn + " at borrow limit for " + fn + ": using " + ToString(c.usage) + " of max " +
             ToString(c.guaranteed + c.borrow_limit) + " (guaranteed " +
             GuaranteeText(c.guaranteed, c.reserved) + " + borrow limit " +
             ToString(c.borrow_limit) + ")" + need;
    case ReasonCode::kNoLendableCapacity:
      return "no lendable " + fn + " capacity: " + ToString(Max(GpuEq(), lendable_to(t, f))) +
             " of " + ToString(capacity(f)) +
             " can be borrowed (the rest is used or protected by other tenants' guarantees)" +
             need;
    case ReasonCode::kMaintenance:
      return ToString(maintenance(f)) + " of " + ToString(healthy_capacity(f)) + " " + fn +
             " are under maintenance: " + ToString(usage_on_capacity(f)) + " of the " +
             ToString(capacity(f)) + " left are in use" + need;
    default: return tn + ": " + std::string(ReasonCodeName(code));
  }
}

std::vector<GpuEq> InstalledCapacities(const State& state) {
  std::vector<GpuEq> out(state.catalogue().size());
  for (const Node& n : state.nodes()) {
    if (n.condition == NodeCondition::kRetired || n.dedicated_to.valid()) continue;
    for (const Gpu& g : n.gpus) {
      if (g.healthy) out[n.flavor.value()] += GpuEq::Gpus(1);
    }
  }
  return out;
}

namespace {

// The most reservations of `flavor` hold at once over [now, end of the last), and the first
// instant they do. Maintenance windows do not count: they may eat into guarantees (as a health
// failure would; docs/design/reservations.md).
std::pair<GpuEq, Time> PeakReserved(const State& state, FlavorId flavor, Time now) {
  std::map<Time, GpuEq> delta;
  for (const auto& [id, r] : state.reservations()) {
    if (r.maintenance || r.flavor != flavor || !(now < r.end)) continue;
    delta[std::max(r.start, now)] += r.amount;
    delta[r.end] += GpuEq() - r.amount;
  }
  GpuEq level, peak;
  Time at = now;
  for (const auto& [t, d] : delta) {
    level += d;
    if (level > peak) {
      peak = level;
      at = t;
    }
  }
  return {peak, at};
}

GpuEq GuaranteeSum(const State& state, FlavorId f) {
  GpuEq sum;
  for (const Tenant& t : state.tenants()) {
    if (const FlavorQuota* q = t.quota(f)) sum += q->guaranteed;
  }
  return sum;
}

GuaranteeCheck CheckFlavor(const State& state, FlavorId f, GpuEq sum, GpuEq was, GpuEq capacity, Time now) {
  const auto [reserved, at] = PeakReserved(state, f, now);
  return {f, sum, was, capacity, reserved, at};
}

}  // namespace

std::vector<GuaranteeCheck> GuaranteeOverruns(const State& state, const Tenant& changed, Time now) {
  const std::vector<GpuEq> capacity = InstalledCapacities(state);
  std::vector<GuaranteeCheck> out;
  for (size_t i = 0; i < state.catalogue().size(); ++i) {
    const FlavorId f(static_cast<uint16_t>(i));
    const GpuEq was = GuaranteeSum(state, f);
    GpuEq sum = was;
    if (changed.id.valid()) {
      if (const FlavorQuota* q = state.tenant(changed.id).quota(f)) sum = sum - q->guaranteed;
    }
    if (const FlavorQuota* q = changed.quota(f)) sum += q->guaranteed;
    if (!(sum > was)) continue;
    GuaranteeCheck c = CheckFlavor(state, f, sum, was, capacity[i], now);
    if (c.over()) out.push_back(c);
  }
  return out;
}

std::vector<GuaranteeCheck> GuaranteeOvercommits(const State& state, Time now) {
  const std::vector<GpuEq> capacity = InstalledCapacities(state);
  std::vector<GuaranteeCheck> out;
  for (size_t i = 0; i < state.catalogue().size(); ++i) {
    const FlavorId f(static_cast<uint16_t>(i));
    const GpuEq sum = GuaranteeSum(state, f);
    GuaranteeCheck c = CheckFlavor(state, f, sum, sum, capacity[i], now);
    if (c.over()) out.push_back(c);
  }
  return out;
}

}  // namespace gpupool
