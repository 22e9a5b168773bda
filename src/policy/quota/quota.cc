#include "policy/quota/quota.h"

namespace gpupool {

QuotaBook::QuotaBook(const State& state)
    : flavors_(state.catalogue().size()),
      cells_(state.tenants().size() * state.catalogue().size()),
      capacity_(flavors_),
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
  for (const Node& n : state.nodes()) {
    if (!n.schedulable() || n.dedicated_to.valid()) continue;
    for (const Gpu& g : n.gpus) {
      if (g.healthy) capacity_[n.flavor.value()] += GpuEq::Gpus(1);
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
  for (const Tenant& t : state.tenants()) {
    for (size_t f = 0; f < flavors_; ++f) {
      protected_[f] += cell(t.id, FlavorId(static_cast<uint16_t>(f))).Protected();
    }
  }
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
  if (c.usage + demand <= c.guaranteed) return {ReasonCode::kNone, AdmissionKind::kGuaranteed};
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

std::vector<GuaranteeShortfall> GuaranteeShortfalls(const State& state) {
  const QuotaBook book(state);
  std::vector<GuaranteeShortfall> out;
  for (size_t i = 0; i < state.catalogue().size(); ++i) {
    const FlavorId f(static_cast<uint16_t>(i));
    GpuEq sum;
    for (const Tenant& t : state.tenants()) sum += book.guaranteed(t.id, f);
    if (sum > book.capacity(f)) out.push_back({f, sum, book.capacity(f)});
  }
  return out;
}

std::string QuotaBook::Explain(const State& state, TenantId t, FlavorId f, GpuEq demand,
                               ReasonCode code) const {
  const Cell& c = cell(t, f);
  const std::string tn = "tenant " + state.tenant(t).name;
  const std::string fn = state.catalogue().model(f).name;
  const std::string need = "; job needs " + ToString(demand);
  switch (code) {
    case ReasonCode::kNoQuota: return tn + " has no quota for " + fn;
    case ReasonCode::kMayNotBorrow:
      return tn + " would exceed its guarantee of " + ToString(c.guaranteed) + " " + fn +
             " (using " + ToString(c.usage) + ") and the priority class may not borrow" + need;
    case ReasonCode::kBorrowLimit:
      return tn + " at borrow limit for " + fn + ": using " + ToString(c.usage) + " of max " +
             ToString(c.guaranteed + c.borrow_limit) + " (guaranteed " +
             ToString(c.guaranteed) + " + borrow limit " + ToString(c.borrow_limit) + ")" + need;
    case ReasonCode::kNoLendableCapacity:
      return "no lendable " + fn + " capacity: " + ToString(Max(GpuEq(), lendable_to(t, f))) +
             " of " + ToString(capacity(f)) +
             " can be borrowed (the rest is used or protected by other tenants' guarantees)" +
             need;
    default: return tn + ": " + std::string(ReasonCodeName(code));
  }
}

}  // namespace gpupool
