// Ledger: opens an interval at admission, closes it at finish, preemption or loss.
#include "accounting/ledger.h"

#include <algorithm>
#include <variant>

#include "core/check.h"

namespace gpupool {

std::string UnitMillisToString(UnitMillis v) {
  if (v == 0) return "0";
  const bool negative = v < 0;
  std::string digits;
  while (v != 0) {
    const int d = static_cast<int>(v % 10);
    digits.push_back(static_cast<char>('0' + (negative ? -d : d)));
    v /= 10;
  }
  if (negative) digits.push_back('-');
  std::reverse(digits.begin(), digits.end());
  return digits;
}

std::string_view UsageKindName(UsageKind k) {
  switch (k) {
    case UsageKind::kGuaranteed:
      return "guaranteed";
    case UsageKind::kBorrowed:
      return "borrowed";
    case UsageKind::kDedicated:
      return "dedicated";
    case UsageKind::kReserved:
      return "reserved";
    case UsageKind::kReservedIdle:
      return "reserved_idle";
    case UsageKind::kOnDemand:
      return "on_demand";
    case UsageKind::kInfrastructureFailure:
      return "infrastructure_failure";
  }
  return "unknown";
}

UsageKind UsageKindOf(AdmissionKind k) {
  switch (k) {
    case AdmissionKind::kGuaranteed:
      return UsageKind::kGuaranteed;
    case AdmissionKind::kBorrowed:
      return UsageKind::kBorrowed;
    case AdmissionKind::kDedicated:
      return UsageKind::kDedicated;
  }
  return UsageKind::kGuaranteed;
}

Result<LedgerChange> Ledger::PrepareClose(const State& before, JobId id, Time at, bool lost) const {
  LedgerChange c;
  const Job* job = before.FindJob(id);
  if (job == nullptr || !HoldsResources(job->state)) return c;  // e.g. cancel while pending
  auto it = open_.find(id);
  if (it == open_.end()) {
    return FailedPrecondition("ledger: job " + std::to_string(id.value()) +
                              " holds resources but has no open interval");
  }
  if (at < it->second.start) {
    return FailedPrecondition("ledger: job " + std::to_string(id.value()) +
                              " released before its admission");
  }
  c.op = LedgerChange::Op::kClose;
  c.job = id;
  c.at = at;
  c.lost = lost;
  return c;
}

Result<LedgerChange> Ledger::Prepare(const State& before, const Event& e) const {
  LedgerChange c;
  if (const auto* a = std::get_if<JobAdmitted>(&e)) {
    const Job* job = before.FindJob(a->id);
    if (job == nullptr) return FailedPrecondition("ledger: admission of an unknown job");
    if (open_.count(a->id) != 0) {
      return FailedPrecondition("ledger: job " + std::to_string(a->id.value()) +
                                " admitted with an interval already open");
    }
    UsageInterval& u = c.interval;
    u.tenant = job->spec.tenant;
    u.job = job->id;
    u.flavor = job->spec.shape.flavor;
    u.shape = Describe(before.catalogue(), job->spec.shape);
    u.replicas = job->spec.replicas;
    u.eq = job->Eq(before.catalogue());
    u.start = u.end = a->at;
    u.kind = UsageKindOf(a->kind);
    u.reservation = job->spec.reservation;
    // On-demand nodes are dedicated to the tenant that asked for them; the label says which
    // dedicated nodes were bought for a burst.
    for (const ReplicaPlacement& rp : a->placement) {
      if (rp.node.valid() && rp.node.value() < before.nodes().size() &&
          before.node(rp.node).on_demand()) {
        u.kind = UsageKind::kOnDemand;
      }
    }
    c.op = LedgerChange::Op::kOpen;
    return c;
  }
  if (const auto* f = std::get_if<JobFinished>(&e)) return PrepareClose(before, f->id, f->at, false);
  if (const auto* p = std::get_if<JobPreempted>(&e)) return PrepareClose(before, p->id, p->at, false);
  // A budget stop ends real use that the tenant's budget paid for: billed as admitted (on
  // demand). Every other cause is infrastructure's.
  if (const auto* l = std::get_if<JobLost>(&e)) {
    return PrepareClose(before, l->id, l->at, l->cause != RequeueCause::kBudget);
  }
  if (const auto* r = std::get_if<ReservationCreated>(&e)) {
    if (r->reservation.maintenance) return c;
    if (reservations_.count(r->reservation.id) != 0) {
      return FailedPrecondition("ledger: reservation " + std::to_string(r->reservation.id.value()) +
                                " created twice");
    }
    c.op = LedgerChange::Op::kReserve;
    c.span = {r->reservation.id, r->reservation.tenant, r->reservation.flavor,
              r->reservation.amount, r->reservation.start, r->reservation.end};
    return c;
  }
  if (const auto* x = std::get_if<ReservationCancelled>(&e)) {
    if (reservations_.count(x->id) == 0) return c;  // a maintenance window
    c.op = LedgerChange::Op::kCutReservation;
    c.span.id = x->id;
    c.at = x->at;
    return c;
  }
  return c;
}

void Ledger::Commit(LedgerChange c) {
  switch (c.op) {
    case LedgerChange::Op::kNone:
      return;
    case LedgerChange::Op::kOpen: {
      const JobId id = c.interval.job;
      open_.emplace(id, std::move(c.interval));
      return;
    }
    case LedgerChange::Op::kClose: {
      auto it = open_.find(c.job);
      GP_CHECK(it != open_.end()) << "ledger: commit of a close that was not prepared";
      UsageInterval interval = std::move(it->second);
      open_.erase(it);
      interval.end = c.at;
      if (c.lost) interval.kind = UsageKind::kInfrastructureFailure;
      closed_.push_back(std::move(interval));
      return;
    }
    case LedgerChange::Op::kReserve:
      reservations_.emplace(c.span.id, c.span);
      return;
    case LedgerChange::Op::kCutReservation: {
      ReservationSpan& s = reservations_.at(c.span.id);
      s.end = std::min(s.end, std::max(s.start, c.at));
      return;
    }
  }
}

Status Ledger::Observe(const State& before, const Event& e) {
  Result<LedgerChange> c = Prepare(before, e);
  if (!c.ok()) return c.error();
  Commit(std::move(c).value());
  return Ok();
}

Status ApplyMetered(State& state, Ledger& ledger, const Event& e) {
  Result<LedgerChange> c = ledger.Prepare(state, e);
  if (!c.ok()) return Error{ErrorCode::kInternal, c.error().message};  // a ledger out of step
  GP_RETURN_IF_ERROR(Apply(state, e));
  ledger.Commit(std::move(c).value());
  return Ok();
}

std::vector<ReservationSpan> Ledger::Reservations() const {
  std::vector<ReservationSpan> out;
  out.reserve(reservations_.size());
  for (const auto& [id, s] : reservations_) out.push_back(s);
  return out;
}

void Ledger::ForgetClosed(const std::set<JobId>& jobs) {
  std::erase_if(closed_, [&](const UsageInterval& u) { return jobs.count(u.job) > 0; });
}

std::vector<UsageInterval> Ledger::Snapshot(Time now) const {
  std::vector<UsageInterval> out = closed_;
  out.reserve(closed_.size() + open_.size());
  for (const auto& [id, u] : open_) {
    UsageInterval cut = u;
    cut.end = std::max(u.start, now);
    cut.open = true;
    out.push_back(std::move(cut));
  }
  return out;
}

}  // namespace gpupool
