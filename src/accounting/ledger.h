// The usage ledger (DESIGN.md §8): an append-only record of every allocation interval, built from
// the same events the daemon journals. The math and the reconciliation argument are in
// docs/design/accounting.md.
//
// An interval opens when a job is admitted (JobAdmitted: from then on its GPUs are held, whether
// or not the job has started) and closes when it stops holding them: JobFinished (kind as
// admitted), JobPreempted (kind as admitted; the preempted job pays for the time it held), or
// JobLost (kind kInfrastructureFailure: a node failure's lost time is not billed, DESIGN.md §7;
// but a JobLost with RequeueCause::kBudget, an on-demand node given back because its tenant's
// budget is spent, keeps its kind: that run was the tenant's, paid for by its budget).
// A job admitted again after a preemption or a loss opens a new interval.
//
// Exactness: an interval's usage is eq.units() x milliseconds as a 128-bit integer (UnitMillis),
// never rounded. One interval is at most 2^32 units x 2^63 ms < 2^95, so it cannot overflow;
// sums are taken with overflow checks in the report (report.h).
//
// Thread-safety: none; the owner (the daemon's event loop, a replay, a test) serialises calls.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/ids.h"
#include "core/quantity.h"
#include "core/result.h"
#include "core/time.h"
#include "model/events.h"
#include "model/state.h"

namespace gpupool {

// GPU-equivalent units x milliseconds: exact usage. One GPU-hour is kUnitMillisPerGpuHour.
__extension__ typedef __int128 UnitMillis;
inline constexpr int64_t kUnitMillisPerGpuHour = GpuEq::kUnitsPerGpu * 3'600'000;
// Decimal rendering ("-12", "0", "25200000000"): std::to_string has no 128-bit overload.
std::string UnitMillisToString(UnitMillis v);

// How usage is billed. The first three mirror AdmissionKind. kOnDemand: a job on an on-demand
// node (burst, DESIGN.md §6), billed at the on-demand price. kReserved: the part of a job's
// interval inside the window of the reservation it names; kReservedIdle: the rest of a
// reservation's amount x window, which no job used (both computed by the report, which knows
// every reservation's final window). kInfrastructureFailure: an interval ended by JobLost,
// recorded (it was allocated) but never billed.
enum class UsageKind : uint8_t {
  kGuaranteed,
  kBorrowed,
  kDedicated,
  kReserved,
  kReservedIdle,
  kOnDemand,
  kInfrastructureFailure,
};
std::string_view UsageKindName(UsageKind k);  // "guaranteed", ..., "infrastructure_failure"
UsageKind UsageKindOf(AdmissionKind k);

struct UsageInterval {
  TenantId tenant;
  JobId job;
  FlavorId flavor;
  std::string shape;  // Describe(catalogue, spec.shape), e.g. "2x h100-80gb"
  uint16_t replicas = 1;
  GpuEq eq;         // per replica x replicas, as Job::Eq
  Time start, end;  // [start, end); start <= end
  UsageKind kind = UsageKind::kGuaranteed;
  ReservationId reservation;  // the reservation the job names, if any (JobSpec::reservation)
  bool open = false;  // true only in a Snapshot: still held, cut at the snapshot's time

  UnitMillis unit_millis() const {
    return static_cast<UnitMillis>(eq.units()) * static_cast<UnitMillis>((end - start).millis());
  }
  friend bool operator==(const UsageInterval&, const UsageInterval&) = default;
};

// A tenant's reservation as billed: [start, end), end cut back to the cancellation time when it
// was cancelled early (to start, if cancelled before it began). Maintenance windows have none.
struct ReservationSpan {
  ReservationId id;
  TenantId tenant;
  FlavorId flavor;
  GpuEq amount;
  Time start, end;
  friend bool operator==(const ReservationSpan&, const ReservationSpan&) = default;
};

// What one event does to the ledger: the result of Ledger::Prepare, applied by Ledger::Commit.
struct LedgerChange {
  enum class Op : uint8_t { kNone, kOpen, kClose, kReserve, kCutReservation };
  Op op = Op::kNone;
  UsageInterval interval;  // kOpen
  JobId job;               // kClose
  Time at;                 // kClose, kCutReservation
  bool lost = false;       // kClose: JobLost
  ReservationSpan span;    // kReserve; kCutReservation uses span.id
};

// Invariants:
//  1. open() holds exactly one interval per job that holds resources in the state the observed
//     events have produced (when fed every event from an empty state).
//  2. closed() only grows, in the order the intervals closed; every closed interval has
//     start <= end and open == false.
class Ledger {
 public:
  // Records `e`, given the state just BEFORE it is applied.
  // REQUIRES: Apply(before, e) succeeds (the event was accepted and journaled); events come in
  // journal order. Returns kFailedPrecondition, and changes nothing, if the event does not fit
  // the ledger: an admission of a job that already has an open interval, a release of a job
  // holding resources with none open (the ledger missed its admission), or an event time before
  // the interval's start. Events that move no resources (JobStarted, MIG, node, GPU health,
  // reservations; cancelling a pending job) leave the ledger unchanged.
  Status Observe(const State& before, const Event& e);
  // Observe in two steps, for a caller that must apply the event in between (the daemon:
  // Prepare, Apply, and Commit only if Apply succeeded). Prepare changes nothing; Commit
  // REQUIRES a change Prepared against the ledger as it is now.
  Result<LedgerChange> Prepare(const State& before, const Event& e) const;
  void Commit(LedgerChange change);

  const std::vector<UsageInterval>& closed() const { return closed_; }
  const std::map<JobId, UsageInterval>& open() const { return open_; }

  // The closed intervals, then the open ones in job id order with end = max(start, now) and
  // open = true. Does not change the ledger.
  std::vector<UsageInterval> Snapshot(Time now) const;
  // Drops the closed intervals of these jobs (retention: the daemon keeps them in its store's
  // history, and adds them back to the reports that reach them). One pass over closed().
  void ForgetClosed(const std::set<JobId>& jobs);
  // Every reservation of a tenant ever created, in id order, with its billed window.
  std::vector<ReservationSpan> Reservations() const;

 private:
  friend struct SnapshotCodec;  // daemon/snapshot_codec.cc: restores a ledger from a snapshot

  Result<LedgerChange> PrepareClose(const State& before, JobId id, Time at, bool lost) const;

  std::map<JobId, UsageInterval> open_;
  std::vector<UsageInterval> closed_;
  std::map<ReservationId, ReservationSpan> reservations_;
};

// Applies `e` to `state` and records it in `ledger`, or changes neither: the event is checked by
// both (Ledger::Prepare, then Apply) before either changes. The daemon's and the simulators'
// metered apply (an EventApplier for ApplyPlan, scheduler/plan.h). Errors: Apply's, or
// kInternal when the ledger refuses an event (it is out of step with the state: a bug).
Status ApplyMetered(State& state, Ledger& ledger, const Event& e);

}  // namespace gpupool
