#include "daemon/control_plane.h"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

#include "api/decode.h"
#include "api/page.h"
#include "daemon/log.h"
#include "daemon/reply.h"
#include "policy/calendar/calendars.h"
#include "policy/quota/quota.h"
#include "scheduler/schedule.h"
#include "store/codec.h"

namespace gpupool {
namespace {

using namespace reply;

}  // namespace

ControlPlane::ControlPlane(std::unique_ptr<Journal> journal, SchedulerConfig config)
    : journal_(std::move(journal)), config_(std::move(config)), state_(std::make_unique<State>()) {}

Result<std::unique_ptr<ControlPlane>> ControlPlane::Open(std::unique_ptr<Journal> journal,
                                                     SchedulerConfig config) {
  GP_RETURN_IF_ERROR(Validate(config));
  std::unique_ptr<ControlPlane> core(new ControlPlane(std::move(journal), std::move(config)));
  GP_RETURN_IF_ERROR(core->Load(*core->journal_));
  return core;
}

Status ControlPlane::Load(Journal& journal) {
  // Only ever onto a core just constructed (Open, Rebuild): nothing is reset by hand, so no
  // member can be forgotten.
  GP_CHECK(empty_ && state_->jobs().empty() && state_->nodes().empty() && staged_.empty());
  Result<Snapshot> snapshot = journal.ReadSnapshot();
  if (!snapshot.ok()) return snapshot.error();
  if (snapshot->seq > 0) GP_RETURN_IF_ERROR(LoadSnapshot(*snapshot));
  Result<std::vector<Record>> records = journal.ReadAll();
  if (!records.ok()) return records.error();
  // The journal starts at or before the snapshot's next record (it drops only what a durable
  // snapshot covers); what the snapshot holds already is skipped.
  std::erase_if(*records, [&](const Record& r) { return r.seq <= snapshot->seq; });
  if (!records->empty() && records->front().seq != snapshot->seq + 1) {
    return FailedPrecondition("the journal resumes at record " + std::to_string(records->front().seq) +
                              " after a snapshot of record " + std::to_string(snapshot->seq));
  }
  GP_RETURN_IF_ERROR(Replay(*records));
  ForgetArchivedUsage();
  empty_ = snapshot->seq == 0 && records->empty();
  return Ok();
}

Status ControlPlane::Replay(const std::vector<Record>& records) {
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
  // The burst settings in force are the journal's (after a failed append: again).
  if (provider_) return UseBurstInForce();
  return Ok();
}

Status ControlPlane::ApplyEvent(const Event& e) {
  GP_RETURN_IF_ERROR(ApplyMetered(*state_, ledger_, e));
  history_.Observe(*state_, e);
  // The exited replicas of an attempt are forgotten when it stops holding resources (the next
  // attempt starts with none, and a finished job keeps no entry).
  JobId ended;
  if (const auto* f = std::get_if<JobFinished>(&e)) ended = f->id;
  if (const auto* l = std::get_if<JobLost>(&e)) ended = l->id;
  if (const auto* p = std::get_if<JobPreempted>(&e)) ended = p->id;
  if (ended.valid()) {
    exits_.erase(ended);
    started_.erase(ended);
  }
  if (const auto* f = std::get_if<JobFinished>(&e)) NoteFinished(f->id, f->at);
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

Status ControlPlane::ApplyAndStage(const Event& e, const std::string& idempotency) {
  return Commit(EventChange{e, idempotency});
}

Status ControlPlane::Flush() {
  if (staged_.empty()) return Ok();
  uint64_t bytes = 0;
  for (const Record& r : staged_) bytes += r.kind.size() + r.body.size();
  Status s = journal_->Append(staged_);
  staged_.clear();
  if (s.ok()) {
    bytes_since_snapshot_ += bytes;
    return Ok();
  }
  // Memory is ahead of disk: rebuild from what is durable, then report. If even that fails,
  // stop: serving from a state that is not on disk could acknowledge what a restart loses, and
  // a restart recovers exactly what is durable.
  const Status rebuilt = Rebuild();
  GP_CHECK(rebuilt.ok()) << "journal replay failed after a failed append: " << rebuilt.error().message;
  return s;
}

void ControlPlane::Abandon() {
  staged_.clear();
  const Status rebuilt = Rebuild();
  GP_CHECK(rebuilt.ok()) << "journal replay failed after an abandoned batch: " << rebuilt.error().message;
}

Status ControlPlane::Rebuild() {
  // A new core from the journal; what it takes from this one is listed here, and is what the
  // journal does not hold by design: how this process runs (set after Open by Serve), and what
  // it has heard or asked since it started. Everything else is the journal's.
  std::unique_ptr<ControlPlane> fresh(new ControlPlane(nullptr, config_));
  fresh->heartbeat_interval_ = heartbeat_interval_;
  fresh->heartbeat_timeout_ = heartbeat_timeout_;
  fresh->start_deadline_ = start_deadline_;
  fresh->deadlines_from_ = deadlines_from_;
  fresh->burst_file_ = burst_file_;
  fresh->provider_ = std::move(provider_);
  fresh->burst_retry_at_ = burst_retry_at_;
  fresh->release_retry_ = release_retry_;
  fresh->burst_errors_ = burst_errors_;
  fresh->last_plan_ = last_plan_;
  fresh->cycles_ = cycles_;
  fresh->bytes_since_snapshot_ = bytes_since_snapshot_;
  fresh->retention_ = retention_;
  fresh->max_finished_ = max_finished_;
  const Status replayed = fresh->Load(*journal_);
  if (!replayed.ok()) {
    provider_ = std::move(fresh->provider_);
    return replayed;
  }
  // Liveness and log tails of the nodes and jobs the journal still has.
  for (auto& [node, a] : fresh->agents_) {
    const auto old = agents_.find(node);
    if (old != agents_.end()) a.last_heartbeat = old->second.last_heartbeat;
  }
  for (auto& [job, tails] : logs_) {
    if (fresh->state_->FindJob(job) != nullptr) fresh->logs_[job] = std::move(tails);
  }
  fresh->journal_ = std::move(journal_);
  *this = std::move(*fresh);
  return Ok();
}

void ControlPlane::Audit(const CallContext& c, const std::string& action, const std::string& object) {
  const std::string tenant =
      c.principal && c.principal->tenant.valid() ? state_->tenant(c.principal->tenant).name : "";
  (void)Commit(AuditEntry{c.now, c.principal ? c.principal->name : "", tenant, action, object, c.remote});
}

Result<std::string> ControlPlane::Bootstrap(const State& config, Time now, const PriceList& prices) {
  if (!empty_) return FailedPrecondition("the journal already holds a cluster");
  for (const Tenant& t : config.tenants()) GP_RETURN_IF_ERROR(Commit(TenantPut{t}));
  for (const PriorityClass& pc : config.priority_classes()) GP_RETURN_IF_ERROR(Commit(PriorityClassAdded{pc}));
  for (const Node& n : config.nodes()) GP_RETURN_IF_ERROR(Commit(NodeAdded{n}));
  if (!(prices == PriceList())) GP_RETURN_IF_ERROR(Commit(PricesSet{prices, std::nullopt}));
  Principal admin{"admin", Role::kClusterAdmin, TenantId(), ""};
  return IssueToken(admin, now);
}

Result<std::string> ControlPlane::IssueToken(const Principal& p, Time now) {
  auto [record, secret] = tokens_.Create(p, now);
  GP_RETURN_IF_ERROR(Commit(TokenIssued{record}));
  return secret;
}

Status ControlPlane::SnapshotWritten(int64_t seq) {
  GP_RETURN_IF_ERROR(journal_->Compact(seq));
  snapshot_seq_ = seq;
  bytes_since_snapshot_ = 0;
  return Ok();
}

void ControlPlane::RememberIdempotency(const std::string& key, JobId job, Time at) {
  idempotency_[key] = {job, at};
  idempotency_order_.emplace_back(at, key);
}

void ControlPlane::ExpireIdempotency(Time now) {
  while (!idempotency_order_.empty() && !(now < idempotency_order_.front().first + kIdempotencyWindow)) {
    // A key re-used after its day names a younger job, which stays.
    auto it = idempotency_.find(idempotency_order_.front().second);
    if (it != idempotency_.end() && !IdempotencyLive(it->second, now)) idempotency_.erase(it);
    idempotency_order_.pop_front();
  }
}

void ControlPlane::Tick(Time now, bool simulate_executor) {
  ExpireIdempotency(now);
  // Before jobs end below: a node whose last job ends now was busy until now.
  if (provider_) TrackBurstUse(*state_, fleet_, now);
  if (simulate_executor) {
    std::vector<Event> events;
    for (JobId id : state_->active()) {
      const Job& j = *state_->FindJob(id);
      if (j.state == JobState::kAdmitted) {
        events.push_back(JobStarted{id, now});
      } else if (j.ExpectedEnd() <= now) {
        events.push_back(JobFinished{id, JobState::kSucceeded, now});
      }
    }
    for (const Event& e : events) GP_CHECK(ApplyAndStage(e).ok());
  }
  if (provider_) BurstJoin(now);  // nodes that are ready take work in this cycle
  if (start_deadline_ && !simulate_executor) {
    MarkNodesWithoutAgents(now);
    CheckStartDeadlines(now);
  }
  if (!state_->pending().empty()) {
    // On-demand nodes take only what their tenant's budget pays for (docs/design/burst.md).
    const NodeDeadlines deadlines =
        provider_ ? OnDemandDeadlines(*state_, burst_policies_, burst_offers_, fleet_, now) : NodeDeadlines{};
    last_plan_ = Schedule(*state_, config_, now, deadlines);
    ++cycles_;
    ApplyPlan(last_plan_, now, *state_, [this](const Event& e) { return ApplyAndStage(e); });
  }
  if (provider_) BurstTick(now);
  if (!agents_.empty()) CheckHeartbeats(now);
  ArchiveFinished(now);
}

}  // namespace gpupool
