// QuotaBook: per-tenant, per-flavor usage of the shared pool against guarantees, borrow limits
// and lend limits (DESIGN.md §3; the math is in docs/design/quota.md).
//
// For tenant t and flavor f, with G guaranteed, U used, B borrow limit, L lend limit, C the
// healthy capacity of ready shared-pool nodes and T the sum of all usage:
//   protected(t) = max(0, G - U - L)   (unused guarantee t does not lend; 0 when L is none)
//   t may take d more within its guarantee  iff U + d <= G
//   t may borrow d                          iff may_borrow, U + d <= G + B (when B is set) and
//                                               d <= C - P - sum over others of protected
// where P is the usage that sits on the capacity C (jobs on cordoned or draining nodes count for
// their tenant's U but not in P, since their GPUs are not in C either).
// Nodes dedicated to a tenant are outside the pool: neither their capacity nor their usage
// appears here.
//
// Thread-safety: none. A value type: the scheduler copies it into its session.
#pragma once

#include <string>
#include <vector>

#include "model/state.h"

namespace gpupool {

struct QuotaVerdict {
  ReasonCode code = ReasonCode::kNone;  // kNone: admissible
  AdmissionKind kind = AdmissionKind::kGuaranteed;
  bool ok() const { return code == ReasonCode::kNone; }
};

class QuotaBook {
 public:
  // Capacity from ready, shared-pool nodes' healthy GPUs; usage from the active jobs admitted
  // to the shared pool.
  explicit QuotaBook(const State& state);

  QuotaVerdict Check(TenantId t, FlavorId f, GpuEq demand, bool may_borrow) const;
  // `on_capacity`: the part of `amount` on nodes counted in capacity (all of it for new
  // placements, which only go to ready nodes).
  void Add(TenantId t, FlavorId f, GpuEq amount, GpuEq on_capacity);
  void Add(TenantId t, FlavorId f, GpuEq amount) { Add(t, f, amount, amount); }
  void Remove(TenantId t, FlavorId f, GpuEq amount) { Add(t, f, GpuEq() - amount); }

  GpuEq usage(TenantId t, FlavorId f) const { return cell(t, f).usage; }
  GpuEq guaranteed(TenantId t, FlavorId f) const { return cell(t, f).guaranteed; }
  GpuEq borrowed(TenantId t, FlavorId f) const {
    return Max(GpuEq(), usage(t, f) - guaranteed(t, f));
  }
  bool borrowing(TenantId t, FlavorId f) const { return usage(t, f) > guaranteed(t, f); }
  bool has_quota(TenantId t, FlavorId f) const { return cell(t, f).has_quota; }
  GpuEq capacity(FlavorId f) const { return capacity_[f.value()]; }
  GpuEq total_usage(FlavorId f) const { return total_usage_[f.value()]; }
  GpuEq usage_on_capacity(FlavorId f) const { return on_capacity_[f.value()]; }
  // Capacity tenant t could borrow right now: C - P - others' protected capacity.
  GpuEq lendable_to(TenantId t, FlavorId f) const;

  // A sentence explaining a failed verdict, with the numbers.
  std::string Explain(const State& state, TenantId t, FlavorId f, GpuEq demand,
                      ReasonCode code) const;

 private:
  struct Cell {
    GpuEq guaranteed, usage, borrow_limit, lend_limit;
    bool has_quota = false, borrow_capped = false, lend_capped = false;
    GpuEq Protected() const {
      if (!lend_capped) return GpuEq();
      return Max(GpuEq(), guaranteed - usage - lend_limit);
    }
  };
  const Cell& cell(TenantId t, FlavorId f) const { return cells_[t.value() * flavors_ + f.value()]; }
  Cell& cell(TenantId t, FlavorId f) { return cells_[t.value() * flavors_ + f.value()]; }

  size_t flavors_;
  std::vector<Cell> cells_;             // tenant-major
  std::vector<GpuEq> capacity_, total_usage_, on_capacity_, protected_;  // per flavor
};

// The part of one replica's GPU-equivalents that sits on capacity: on a ready, shared-pool node
// and on healthy GPUs (what the pool's capacity C counts).
GpuEq OnCapacity(const State& state, const Job& job, const ReplicaPlacement& replica);

// Flavors where the guarantees add up to more than the healthy capacity of the shared pool: a
// configuration error when it is set, an alert for admins when health failures cause it
// (DESIGN.md §3).
struct GuaranteeShortfall {
  FlavorId flavor;
  GpuEq guaranteed, capacity;
};
std::vector<GuaranteeShortfall> GuaranteeShortfalls(const State& state);

}  // namespace gpupool
