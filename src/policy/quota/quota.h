// QuotaBook: per-tenant, per-flavor usage of the shared pool against guarantees, borrow limits
// and lend limits (DESIGN.md §3 and §5; the math is in docs/design/quota.md).
//
// For tenant t and flavor f, with G guaranteed, U used, B borrow limit, L lend limit, C the
// capacity of the pool and T the sum of all usage:
//   protected(t) = max(0, G - U - L)   (unused guarantee t does not lend; 0 when L is none)
//   t may take d more within its guarantee  iff U + d <= G (and P + d <= C while a maintenance
//                                               window is in force)
//   t may borrow d                          iff may_borrow, U + d <= G + B (when B is set) and
//                                               d <= C - P - sum over others of protected
// where P is the usage that sits on the capacity C (jobs on cordoned or draining nodes count for
// their tenant's U but not in P, since their GPUs are not in C either).
// Nodes dedicated to a tenant are outside the pool: neither their capacity nor their usage
// appears here.
//
// Time enters through reservations (DESIGN.md §5). A book made for `now` adds to G, and to L when
// L is set, the reservations that hold `now`, so an active reservation is exactly extra
// guarantee that is lent while idle; and it subtracts from C the maintenance windows that hold
// `now`. A book made without `now` counts the standing quotas and the full capacity only.
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
  // to the shared pool; guarantees from the standing quotas. No reservation or maintenance
  // window counts.
  explicit QuotaBook(const State& state);
  // The same, plus the reservations and maintenance windows whose [start, end) holds `now`.
  // A reservation for a flavor where its tenant has no standing quota gives it a cell with
  // G = the reserved amount, borrow limit 0 and no lend limit.
  QuotaBook(const State& state, Time now);

  QuotaVerdict Check(TenantId t, FlavorId f, GpuEq demand, bool may_borrow) const;
  // `on_capacity`: the part of `amount` on nodes counted in capacity (all of it for new
  // placements, which only go to ready nodes).
  void Add(TenantId t, FlavorId f, GpuEq amount, GpuEq on_capacity);
  void Add(TenantId t, FlavorId f, GpuEq amount) { Add(t, f, amount, amount); }
  void Remove(TenantId t, FlavorId f, GpuEq amount) { Add(t, f, GpuEq() - amount); }

  GpuEq usage(TenantId t, FlavorId f) const { return cell(t, f).usage; }
  // Standing guarantee plus the reservations in force.
  GpuEq guaranteed(TenantId t, FlavorId f) const { return cell(t, f).guaranteed; }
  // The part of guaranteed() that comes from reservations in force.
  GpuEq reserved(TenantId t, FlavorId f) const { return cell(t, f).reserved; }
  GpuEq borrowed(TenantId t, FlavorId f) const {
    return Max(GpuEq(), usage(t, f) - guaranteed(t, f));
  }
  bool borrowing(TenantId t, FlavorId f) const { return usage(t, f) > guaranteed(t, f); }
  bool has_quota(TenantId t, FlavorId f) const { return cell(t, f).has_quota; }
  // C: the healthy capacity less the maintenance in force, never below 0.
  GpuEq capacity(FlavorId f) const { return capacity_[f.value()]; }
  GpuEq healthy_capacity(FlavorId f) const { return healthy_[f.value()]; }
  GpuEq maintenance(FlavorId f) const { return maintenance_[f.value()]; }
  GpuEq total_usage(FlavorId f) const { return total_usage_[f.value()]; }
  GpuEq usage_on_capacity(FlavorId f) const { return on_capacity_[f.value()]; }
  // Capacity tenant t could borrow right now: C - P - others' protected capacity.
  GpuEq lendable_to(TenantId t, FlavorId f) const;

  // A sentence explaining a failed verdict, with the numbers.
  std::string Explain(const State& state, TenantId t, FlavorId f, GpuEq demand,
                      ReasonCode code) const;
  // Every cell and total equal (a session kept across cycles against a rebuilt one).
  friend bool operator==(const QuotaBook&, const QuotaBook&) = default;

 private:
  void AddReservations(const State& state, Time now);
  void SumProtected();

  struct Cell {
    GpuEq guaranteed, usage, borrow_limit, lend_limit, reserved;
    bool has_quota = false, borrow_capped = false, lend_capped = false;
    GpuEq Protected() const {
      if (!lend_capped) return GpuEq();
      return Max(GpuEq(), guaranteed - usage - lend_limit);
    }
    friend bool operator==(const Cell&, const Cell&) = default;
  };
  const Cell& cell(TenantId t, FlavorId f) const { return cells_[t.value() * flavors_ + f.value()]; }
  Cell& cell(TenantId t, FlavorId f) { return cells_[t.value() * flavors_ + f.value()]; }

  size_t flavors_;
  std::vector<Cell> cells_;             // tenant-major
  // Per flavor.
  std::vector<GpuEq> healthy_, maintenance_, capacity_, total_usage_, on_capacity_, protected_;
};

// Healthy GPUs on ready, shared-pool nodes, per flavor (indexed by flavor id): the capacity
// that both the quota book and the availability calendar start from.
std::vector<GpuEq> PoolCapacities(const State& state);

// The part of one replica's GPU-equivalents that sits on capacity: on a ready, shared-pool node
// and on healthy GPUs (what the pool's capacity C counts).
GpuEq OnCapacity(const State& state, const Job& job, const ReplicaPlacement& replica);

// Flavors where the guarantees add up to more than the healthy capacity of the shared pool: a
// configuration error when it is set, an alert for admins when health failures cause it
// (DESIGN.md §3, §7). From a time-aware book (QuotaBook(state, now)), the guarantees include
// the reservations in force and the capacity excludes maintenance windows in force.
struct GuaranteeShortfall {
  FlavorId flavor;
  GpuEq guaranteed, capacity;
};
std::vector<GuaranteeShortfall> GuaranteeShortfalls(const State& state);
std::vector<GuaranteeShortfall> GuaranteeShortfalls(const State& state, const QuotaBook& book);

// Healthy GPUs of the shared pool per flavor whatever the nodes' conditions (only removed and
// retired nodes are gone): what guarantees may be promised against. Cordons, drains, missing
// agents and unreachable nodes pass; the capacity alert (GuaranteeShortfalls) reports them.
std::vector<GpuEq> InstalledCapacities(const State& state);

// What changing a tenant (or adding it: `changed` with an invalid id) would do to one flavor's
// promises: the sum of guarantees, the installed capacity, and the most that tenants'
// reservations hold at once from `now` on (and when).
struct GuaranteeCheck {
  FlavorId flavor;
  GpuEq guaranteed, was, capacity, reserved;
  Time reserved_at;
  // Over what can be promised: guarantees + peak reservations above capacity.
  bool over() const { return guaranteed + reserved > capacity; }
};
// The flavors where the change raises the sum of guarantees and leaves it over (lowering a
// guarantee is never refused, even while over). Sorted by flavor.
std::vector<GuaranteeCheck> GuaranteeOverruns(const State& state, const Tenant& changed, Time now);
// The flavors where the guarantees are over now (describe tenant shows them).
std::vector<GuaranteeCheck> GuaranteeOvercommits(const State& state, Time now);

}  // namespace gpupool
