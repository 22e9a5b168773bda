// What each Change does to the journaled state (change.h, journaled_state.h): one place for a
// change made now (Commit) and for the same change read back from the journal or a snapshot
// (ApplyRecord). Each applier checks everything before it mutates anything, so a refused change
// leaves the state as it was.
#include "daemon/journaled_state.h"

#include <algorithm>

namespace gpupool {

Result<std::unique_ptr<JournaledState>> JournaledState::Load(Journal& journal) {
  auto js = std::make_unique<JournaledState>();
  Result<Snapshot> snapshot = journal.ReadSnapshot();
  if (!snapshot.ok()) return snapshot.error();
  if (snapshot->seq > 0) GP_RETURN_IF_ERROR(js->LoadSnapshot(*snapshot));
  Result<std::vector<Record>> records = journal.ReadAll();
  if (!records.ok()) return records.error();
  // The journal starts at or before the snapshot's next record (it drops only what a durable
  // snapshot covers); what the snapshot holds already is skipped.
  std::erase_if(*records, [&](const Record& r) { return r.seq <= snapshot->seq; });
  if (!records->empty() && records->front().seq != snapshot->seq + 1) {
    return FailedPrecondition("the journal resumes at record " + std::to_string(records->front().seq) +
                              " after a snapshot of record " + std::to_string(snapshot->seq));
  }
  GP_RETURN_IF_ERROR(js->Replay(*records));
  js->ForgetArchivedUsage();
  js->empty_ = snapshot->seq == 0 && records->empty();
  js->applied_seq_ = records->empty() ? snapshot->seq : records->back().seq;
  return js;
}

Status JournaledState::Follow(const std::vector<Record>& records) {
  if (records.empty()) return Ok();
  if (records.front().seq != applied_seq_ + 1) {
    return FailedPrecondition("the journal resumes at record " + std::to_string(records.front().seq) +
                              " after record " + std::to_string(applied_seq_));
  }
  GP_RETURN_IF_ERROR(Replay(records));
  ForgetArchivedUsage();
  applied_seq_ = records.back().seq;
  empty_ = false;
  return Ok();
}

Status JournaledState::Replay(const std::vector<Record>& records) {
  for (const Record& r : records) {
    Status s = Ok();
    try {
      s = ApplyRecord(r);
    } catch (const std::exception& e) {  // a record of the wrong shape (hand-edited, or a bug)
      s = InvalidArgument(e.what());
    }
    if (!s.ok()) {
      return Error{ErrorCode::kInternal, "journal record " + std::to_string(r.seq) + " (" + r.kind +
                                             "): " + s.error().message};
    }
  }
  // Requests that never became nodes died with the process that made them (providers are
  // asked again if the jobs still wait).
  std::erase_if(fleet_, [](const BurstNode& n) { return !n.ready.has_value(); });
  return Ok();
}

Status JournaledState::Commit(const Change& c) {
  Record r = ChangeCodec::Encode(state_, c);  // names as they are before the change
  GP_RETURN_IF_ERROR(ApplyChange(c));
  staged_.push_back(std::move(r));
  empty_ = false;
  return Ok();
}

Status JournaledState::ApplyRecord(const Record& r) {
  Result<Change> c = ChangeCodec::Decode(state_, r);
  if (!c.ok()) return c.error();
  return ApplyChange(*c);
}

Status JournaledState::ApplyChange(const Change& c) {
  return std::visit([this](const auto& change) { return ApplyOne(change); }, c);
}

const AgentRecorded* JournaledState::agent(NodeId node) const {
  const auto it = agents_.find(node);
  return it == agents_.end() ? nullptr : &it->second;
}

bool JournaledState::Exited(JobId job, int replica) const {
  const auto it = exits_.find(job);
  return it != exits_.end() && it->second.count(replica) > 0;
}

Status JournaledState::ApplyEvent(const Event& e) {
  GP_RETURN_IF_ERROR(ApplyMetered(state_, ledger_, e));
  history_.Observe(state_, e);
  // The exited replicas of an attempt are forgotten when it stops holding resources (the next
  // attempt starts with none, and a finished job keeps no entry).
  if (const JobId ended = AttemptEnded(e); ended.valid()) exits_.erase(ended);
  if (const auto* f = std::get_if<JobFinished>(&e)) finished_.emplace_back(f->at, f->id);
  // A removed node's agent is forgotten: its heartbeats answer 404, and its name may register
  // anew as a new node.
  if (const auto* r = std::get_if<NodeRemoved>(&e)) agents_.erase(r->node);
  if (const auto* n = std::get_if<NodeConditionChanged>(&e); n && n->condition == NodeCondition::kRetired) {
    for (BurstNode& b : fleet_) {
      if (b.node == n->node && !b.released) b.released = n->at;
    }
  }
  return Ok();
}

JobId AttemptEnded(const Event& e) {
  if (const auto* f = std::get_if<JobFinished>(&e)) return f->id;
  if (const auto* l = std::get_if<JobLost>(&e)) return l->id;
  if (const auto* p = std::get_if<JobPreempted>(&e)) return p->id;
  return JobId();
}

Status JournaledState::ApplyOne(const EventChange& c) {
  GP_RETURN_IF_ERROR(ApplyEvent(c.event));
  if (!c.idempotency.empty()) {
    const JobSubmitted& submitted = std::get<JobSubmitted>(c.event);
    RememberIdempotency(c.idempotency, submitted.id, submitted.at);
    ExpireIdempotency(submitted.at);  // a replay holds one day of keys too
  }
  return Ok();
}

Status JournaledState::ApplyOne(const TenantPut& c) {
  Tenant t = c.tenant;
  if (Result<TenantId> id = state_.FindTenant(t.name); id.ok()) {
    t.id = *id;
    GP_RETURN_IF_ERROR(state_.UpdateTenant(t));
    deleted_.erase(*id);
    return Ok();
  }
  Result<TenantId> added = state_.AddTenant(t);
  return added.ok() ? Ok() : Status(added.error());
}

Status JournaledState::ApplyOne(const TenantDeleted& c) {
  if (!c.tenant.valid() || c.tenant.value() >= state_.tenants().size()) return NotFound("tenant");
  Tenant t = state_.tenant(c.tenant);
  t.quotas.clear();
  GP_RETURN_IF_ERROR(state_.UpdateTenant(t));
  deleted_.insert(c.tenant);
  for (const auto& [id, token] : tokens_.tokens()) {
    if (token.principal.tenant == c.tenant && !token.revoked) (void)tokens_.Revoke(id);
  }
  std::erase_if(accounts_, [&](const auto& a) { return a.first.first == c.tenant; });
  return Ok();
}

Status JournaledState::ApplyOne(const PriorityClassAdded& c) {
  Result<PriorityClassId> id = state_.AddPriorityClass(c.cls);
  return id.ok() ? Ok() : Status(id.error());
}

Status JournaledState::ApplyOne(const NodeAdded& c) {
  Result<NodeId> id = state_.AddNode(c.node);
  return id.ok() ? Ok() : Status(id.error());
}

Status JournaledState::ApplyOne(const TokenIssued& c) {
  tokens_.Add(c.token);
  return Ok();
}

Status JournaledState::ApplyOne(const TokenRevoked& c) { return tokens_.Revoke(c.id); }

Status JournaledState::ApplyOne(const OidcMappingPut& c) {
  if (c.deleted) return oidc_mappings_.erase(c.id) ? Ok() : Status(NotFound("OIDC mapping " + c.id));
  return oidc_mappings_.emplace(c.id, c).second ? Ok() : Status(AlreadyExists("OIDC mapping " + c.id));
}

Status JournaledState::ApplyOne(const ServiceAccountPut& c) {
  const std::pair<TenantId, std::string> key{c.account.tenant, c.account.name};
  if (!c.deleted) {
    if (!c.account.tenant.valid() || deleted_.count(c.account.tenant)) return NotFound("tenant");
    if (!accounts_.emplace(key, c.account).second) return AlreadyExists("service account " + c.account.name);
    return Ok();
  }
  if (accounts_.erase(key) == 0) return NotFound("service account " + c.account.name);
  for (const auto& [id, token] : tokens_.tokens()) {
    if (token.principal.tenant == c.account.tenant && token.account == c.account.name && !token.revoked) {
      (void)tokens_.Revoke(id);
    }
  }
  return Ok();
}

Status JournaledState::ApplyOne(const PricesSet& c) {
  ApplyPrices(c.prices, c.from);
  return Ok();
}

void JournaledState::ApplyPrices(PriceList list, std::optional<Time> from) {
  if (!from) {
    prices_ = {{Time(), std::move(list)}};
    return;
  }
  // In order of `from`; a list with the same start replaces the one there, and changes
  // scheduled later stay scheduled.
  auto at = std::lower_bound(prices_.begin(), prices_.end(), *from,
                             [](const PricedPeriod& p, Time t) { return p.from < t; });
  if (at != prices_.end() && at->from == *from) {
    at->prices = std::move(list);
  } else {
    prices_.insert(at, {*from, std::move(list)});
  }
}

Status JournaledState::ApplyOne(const BurstRequested& c) {
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

Status JournaledState::ApplyOne(const BurstNodeJoined& c) {
  auto it = std::find_if(fleet_.begin(), fleet_.end(), [&](const BurstNode& b) { return b.request_id == c.request_id; });
  if (it == fleet_.end() || it->ready) return FailedPrecondition("burst node for unknown request " + c.request_id);
  if (!c.node.on_demand() || c.node.dedicated_to != it->tenant) {
    return InvalidArgument("burst node " + c.node.name + " is not an on-demand node of its tenant");
  }
  Result<NodeId> id = state_.AddNode(c.node);
  if (!id.ok()) return id.error();
  it->node = *id;
  it->ready = c.ready;
  // Idle is counted from when the node joined (and could take work), not from when the
  // provider had it ready: a slow poll must not make a fresh node look idle.
  it->last_busy = c.joined;
  return Ok();
}

Status JournaledState::ApplyOne(const BurstSettingsChanged& c) {
  if (!burst_changes_.empty() && c.at < burst_changes_.back().first) {
    return InvalidArgument("burst settings changed before the change recorded before them");
  }
  burst_changes_.emplace_back(c.at, c.settings);
  return Ok();  // the owner puts them in force
}

Status JournaledState::ApplyOne(const AgentRecorded& c) {
  if (!c.node.valid() || c.node.value() >= state_.nodes().size()) return NotFound("node");
  agents_[c.node] = c;
  return Ok();
}

Status JournaledState::ApplyOne(const ReplicaExited& c) {
  const Job* job = state_.FindJob(c.job);
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
Status JournaledState::ApplyOne(const AuditEntry&) { return Ok(); }

Status JournaledState::ApplyOne(const JobArchived& c) {
  const Job* job = state_.FindJob(c.id);
  if (job == nullptr || !IsTerminal(job->state)) {
    return InvalidArgument("archived_job: job " + std::to_string(c.id.value()) + " is not a finished job in memory");
  }
  GP_RETURN_IF_ERROR(state_.Forget(c.id));
  history_.Forget(c.id);
  forget_usage_.insert(c.id);
  exits_.erase(c.id);
  // Jobs leave in finish order (DueForArchive), so this is nearly always the front.
  if (!finished_.empty() && finished_.front().second == c.id) {
    finished_.pop_front();
  } else {
    std::erase_if(finished_, [&](const auto& f) { return f.second == c.id; });
  }
  ++archived_;
  return Ok();
}

void JournaledState::RememberIdempotency(const std::string& key, JobId job, Time at) {
  idempotency_[key] = {job, at};
  idempotency_order_.emplace_back(at, key);
}

void JournaledState::ExpireIdempotency(Time now) {
  while (!idempotency_order_.empty() && !(now < idempotency_order_.front().first + kIdempotencyWindow)) {
    // A key re-used after its day names a younger job, which stays.
    auto it = idempotency_.find(idempotency_order_.front().second);
    if (it != idempotency_.end() && !IdempotencyLive(it->second, now)) idempotency_.erase(it);
    idempotency_order_.pop_front();
  }
}

std::optional<JobId> JournaledState::IdempotentJob(const std::string& key, Time now) const {
  const auto it = idempotency_.find(key);
  if (it == idempotency_.end() || !IdempotencyLive(it->second, now)) return std::nullopt;
  return it->second.job;
}

std::vector<JobId> JournaledState::DueForArchive(Time now, Duration retention, size_t max_in_memory,
                                                 size_t batch) const {
  std::vector<JobId> due;
  // Past the window, or over the count (finished_ is in finish order: the oldest go first).
  for (const auto& [at, id] : finished_) {
    if (due.size() >= batch || (now < at + retention && finished_.size() - due.size() <= max_in_memory)) break;
    due.push_back(id);
  }
  return due;
}

void JournaledState::ForgetArchivedUsage() {
  if (forget_usage_.empty()) return;
  ledger_.ForgetClosed(forget_usage_);
  forget_usage_.clear();
}

void JournaledState::RebuildFinished() {
  finished_.clear();
  for (const auto& [id, job] : state_.jobs()) {
    if (!IsTerminal(job.state)) continue;
    Time at = job.submitted;
    const std::vector<HistoryEntry>& entries = history_.Of(id);
    if (!entries.empty() && entries.back().type == HistoryType::kFinished) at = entries.back().at;
    finished_.emplace_back(at, id);
  }
  std::stable_sort(finished_.begin(), finished_.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
}

}  // namespace gpupool
