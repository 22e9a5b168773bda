// Ledger: opens an interval at admission, closes it at finish, preemption or loss.
#include "accounting/ledger.h"

#include <algorithm>
#include <variant>

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

Status Ledger::Close(const State& before, JobId id, Time at, bool lost) {
  const Job* job = before.FindJob(id);
  if (job == nullptr || !HoldsResources(job->state)) return Ok();  // e.g. cancel while pending
  auto it = open_.find(id);
  if (it == open_.end()) {
    return FailedPrecondition("ledger: job " + std::to_string(id.value()) +
                              " holds resources but has no open interval");
  }
  if (at < it->second.start) {
    return FailedPrecondition("ledger: job " + std::to_string(id.value()) +
                              " released before its admission");
  }
  UsageInterval interval = std::move(it->second);
  open_.erase(it);
  interval.end = at;
  if (lost) interval.kind = UsageKind::kInfrastructureFailure;
  closed_.push_back(std::move(interval));
  return Ok();
}

Status Ledger::Observe(const State& before, const Event& e) {
  if (const auto* a = std::get_if<JobAdmitted>(&e)) {
    const Job* job = before.FindJob(a->id);
    if (job == nullptr) return FailedPrecondition("ledger: admission of an unknown job");
    if (open_.count(a->id) != 0) {
      return FailedPrecondition("ledger: job " + std::to_string(a->id.value()) +
                                " admitted with an interval already open");
    }
    UsageInterval u;
    u.tenant = job->spec.tenant;
    u.job = job->id;
    u.flavor = job->spec.shape.flavor;
    u.shape = Describe(before.catalogue(), job->spec.shape);
    u.replicas = job->spec.replicas;
    u.eq = job->Eq(before.catalogue());
    u.start = u.end = a->at;
    u.kind = UsageKindOf(a->kind);
    open_.emplace(a->id, std::move(u));
    return Ok();
  }
  if (const auto* f = std::get_if<JobFinished>(&e)) return Close(before, f->id, f->at, false);
  if (const auto* p = std::get_if<JobPreempted>(&e)) return Close(before, p->id, p->at, false);
  if (const auto* l = std::get_if<JobLost>(&e)) return Close(before, l->id, l->at, true);
  return Ok();
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
