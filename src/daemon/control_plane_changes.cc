// What each Change does to the daemon's journaled state (change.h): one place for a change made
// now (Commit) and for the same change read back from the journal or a snapshot (ApplyRecord).
// Each applier checks everything before it mutates anything, so a refused change leaves the
// core as it was.
#include <algorithm>

#include "daemon/control_plane.h"

namespace gpupool {

Status ControlPlane::Commit(const Change& c) {
  Record r = ChangeCodec::Encode(*state_, c);  // names as they are before the change
  GP_RETURN_IF_ERROR(ApplyChange(c));
  staged_.push_back(std::move(r));
  empty_ = false;
  return Ok();
}

Status ControlPlane::ApplyRecord(const Record& r) {
  Result<Change> c = ChangeCodec::Decode(*state_, r);
  if (!c.ok()) return c.error();
  return ApplyChange(*c);
}

Status ControlPlane::ApplyChange(const Change& c) {
  return std::visit([this](const auto& change) { return ApplyOne(change); }, c);
}

Status ControlPlane::ApplyOne(const EventChange& c) {
  GP_RETURN_IF_ERROR(ApplyEvent(c.event));
  if (!c.idempotency.empty()) {
    const JobSubmitted& submitted = std::get<JobSubmitted>(c.event);
    RememberIdempotency(c.idempotency, submitted.id, submitted.at);
    ExpireIdempotency(submitted.at);  // a replay holds one day of keys too
  }
  return Ok();
}

Status ControlPlane::ApplyOne(const TenantPut& c) {
  Tenant t = c.tenant;
  if (Result<TenantId> id = state_->FindTenant(t.name); id.ok()) {
    t.id = *id;
    GP_RETURN_IF_ERROR(state_->UpdateTenant(t));
    deleted_.erase(*id);
    return Ok();
  }
  Result<TenantId> added = state_->AddTenant(t);
  return added.ok() ? Ok() : Status(added.error());
}

Status ControlPlane::ApplyOne(const TenantDeleted& c) {
  if (!c.tenant.valid() || c.tenant.value() >= state_->tenants().size()) return NotFound("tenant");
  Tenant t = state_->tenant(c.tenant);
  t.quotas.clear();
  GP_RETURN_IF_ERROR(state_->UpdateTenant(t));
  deleted_.insert(c.tenant);
  for (const auto& [id, token] : tokens_.tokens()) {
    if (token.principal.tenant == c.tenant && !token.revoked) (void)tokens_.Revoke(id);
  }
  return Ok();
}

Status ControlPlane::ApplyOne(const PriorityClassAdded& c) {
  Result<PriorityClassId> id = state_->AddPriorityClass(c.cls);
  return id.ok() ? Ok() : Status(id.error());
}

Status ControlPlane::ApplyOne(const NodeAdded& c) {
  Result<NodeId> id = state_->AddNode(c.node);
  return id.ok() ? Ok() : Status(id.error());
}

Status ControlPlane::ApplyOne(const TokenIssued& c) {
  tokens_.Add(c.token);
  return Ok();
}

Status ControlPlane::ApplyOne(const TokenRevoked& c) { return tokens_.Revoke(c.id); }

Status ControlPlane::ApplyOne(const PricesSet& c) {
  ApplyPrices(c.prices, c.from);
  return Ok();
}

Status ControlPlane::ApplyOne(const BurstRequested& c) {
  for (const BurstNode& other : fleet_) {
    if (other.request_id == c.request_id) return AlreadyExists("burst request " + c.request_id + " recorded twice");
  }
  BurstNode b;
  b.request_id = c.request_id;
  b.tenant = c.tenant;
  b.flavor = c.flavor;
  b.gpus = c.gpus;
  b.micros_per_gpu_hour = c.micros_per_gpu_hour;
  b.for_job = c.for_job;
  b.requested = b.last_busy = c.requested;
  fleet_.push_back(std::move(b));
  ++burst_requests_seen_;
  return Ok();
}

Status ControlPlane::ApplyOne(const BurstNodeJoined& c) {
  auto it = std::find_if(fleet_.begin(), fleet_.end(), [&](const BurstNode& b) { return b.request_id == c.request_id; });
  if (it == fleet_.end() || it->ready) return FailedPrecondition("burst node for unknown request " + c.request_id);
  if (!c.node.on_demand() || c.node.dedicated_to != it->tenant) {
    return InvalidArgument("burst node " + c.node.name + " is not an on-demand node of its tenant");
  }
  Result<NodeId> id = state_->AddNode(c.node);
  if (!id.ok()) return id.error();
  it->node = *id;
  it->ready = c.ready;
  // Idle is counted from when the node joined (and could take work), not from when the
  // provider had it ready: a slow poll must not make a fresh node look idle.
  it->last_busy = c.joined;
  return Ok();
}

Status ControlPlane::ApplyOne(const BurstSettingsChanged& c) {
  if (!burst_changes_.empty() && c.at < burst_changes_.back().first) {
    return InvalidArgument("burst settings changed before the change recorded before them");
  }
  burst_changes_.emplace_back(c.at, c.settings);
  return Ok();  // in force once applied: by SetBurstSettings, or at the end of a replay
}

Status ControlPlane::ApplyOne(const AgentRecorded& c) {
  if (!c.node.valid() || c.node.value() >= state_->nodes().size()) return NotFound("node");
  AgentState a;  // last_heartbeat unset: not heard since this start
  a.gpu_uuid = c.gpu_uuid;
  a.mig_uuid = c.mig_uuid;
  a.mig_layout = c.mig_layout;
  agents_[c.node] = std::move(a);
  return Ok();
}

Status ControlPlane::ApplyOne(const ReplicaExited& c) {
  const Job* job = state_->FindJob(c.job);
  // Only while that attempt still holds its GPUs; JobFinished, JobLost and JobPreempted, later
  // in the journal, clear the entry again (ApplyEvent).
  if (job == nullptr || !HoldsResources(job->state) || c.attempt != job->attempt || c.replica < 0 ||
      c.replica >= static_cast<int64_t>(job->placement.size())) {
    return Ok();
  }
  exits_[c.job].insert(static_cast<int>(c.replica));
  return Ok();
}

// The audit log is the store's (Journal::AuditLines): memory keeps none of it.
Status ControlPlane::ApplyOne(const AuditEntry&) { return Ok(); }

Status ControlPlane::ApplyOne(const JobArchived& c) {
  const Job* job = state_->FindJob(c.id);
  if (job == nullptr || !IsTerminal(job->state)) {
    return InvalidArgument("archived_job: job " + std::to_string(c.id.value()) + " is not a finished job in memory");
  }
  GP_RETURN_IF_ERROR(state_->Forget(c.id));
  history_.Forget(c.id);
  forget_usage_.insert(c.id);
  logs_.erase(c.id);
  exits_.erase(c.id);
  started_.erase(c.id);
  ++archived_;
  return Ok();
}

}  // namespace gpupool
