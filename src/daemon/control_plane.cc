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
    : journal_(std::move(journal)), config_(std::move(config)) {}

Result<std::unique_ptr<ControlPlane>> ControlPlane::Open(std::unique_ptr<Journal> journal,
                                                     SchedulerConfig config) {
  GP_RETURN_IF_ERROR(Validate(config));
  std::unique_ptr<ControlPlane> core(new ControlPlane(std::move(journal), std::move(config)));
  Result<std::unique_ptr<JournaledState>> js = JournaledState::Load(*core->journal_);
  if (!js.ok()) return js.error();
  core->js_ = std::move(js).value();
  core->snapshot_seq_ = core->js_->snapshot_seq();
  return core;
}

Status ControlPlane::Commit(const Change& c) {
  GP_RETURN_IF_ERROR(js_->Commit(c));
  // What this process remembers of what the change ended goes with it.
  if (const auto* ev = std::get_if<EventChange>(&c)) {
    if (const JobId ended = AttemptEnded(ev->event); ended.valid()) started_.erase(ended);
    if (const auto* r = std::get_if<NodeRemoved>(&ev->event)) {
      // Its agent is refused from now on; what it last reported running stays until its lease
      // and grace are surely over (EarlierAttemptMayRun), counted from its last heartbeat.
      if (const auto h = heard_.find(r->node); h != heard_.end()) removed_heard_[r->node] = h->second.last_heartbeat;
      heard_.erase(r->node);
    }
  } else if (const auto* archived = std::get_if<JobArchived>(&c)) {
    logs_.erase(archived->id);  // a finished job: its attempt, and started_, ended with it
  }
  return Ok();
}

Status ControlPlane::ApplyAndStage(const Event& e, const std::string& idempotency) {
  return Commit(EventChange{e, idempotency});
}

Status ControlPlane::Flush() {
  std::vector<Record> staged = js_->TakeStaged();
  Status s = Ok();
  if (!staged.empty()) {
    uint64_t bytes = 0;
    for (const Record& r : staged) bytes += r.kind.size() + r.body.size();
    s = journal_->Append(staged);
    if (s.ok()) bytes_since_snapshot_ += bytes;
  }
  if (s.ok()) {
    if (executors_due_) {
      ExecutorsWant(*executors_due_);
      executors_due_.reset();
    }
    return Ok();
  }
  executors_due_.reset();  // the tick's decisions are gone with it; the next tick decides again
  // Memory is ahead of disk: rebuild from what is durable, then report. If even that fails,
  // the core is stale and serves nothing until a Reload succeeds: serving from a state that is
  // not in the store could acknowledge what a restart loses.
  if (Status rebuilt = Rebuild(); !rebuilt.ok()) {
    stale_ = true;
    Log("error", "the journal cannot be read back after a failed append; serving nothing until it can",
        {{"error", rebuilt.error().message}});
  }
  return s;
}

void ControlPlane::Abandon() {
  (void)js_->TakeStaged();
  executors_due_.reset();
  if (Status rebuilt = Rebuild(); !rebuilt.ok()) {
    stale_ = true;
    Log("error", "the journal cannot be read back after an abandoned batch; serving nothing until it can",
        {{"error", rebuilt.error().message}});
  }
}

Status ControlPlane::Reload() {
  (void)js_->TakeStaged();
  GP_RETURN_IF_ERROR(Rebuild());
  stale_ = false;
  snapshot_seq_ = js_->snapshot_seq();
  bytes_since_snapshot_ = 0;
  return Ok();
}

Result<int64_t> ControlPlane::CatchUp() {
  if (stale_) {
    GP_RETURN_IF_ERROR(Reload());
    return int64_t{0};
  }
  Result<std::vector<Record>> records = journal_->ReadAfter(js_->applied_seq());
  if (!records.ok() && records.error().code != ErrorCode::kNotFound) return records.error();
  if (records.ok() && js_->Follow(*records).ok()) return static_cast<int64_t>(records->size());
  // Compacted past this state, or a record that does not apply on it: this state may be part
  // way through the records, so a fresh one is loaded (stale until it is).
  stale_ = true;
  GP_RETURN_IF_ERROR(Reload());
  return int64_t{0};
}

Status ControlPlane::Rebuild() {
  // Everything journaled is the journal's: a fresh object loaded from it, never reset by hand.
  // How this process runs (set after Open by Serve) stays; of what it has heard since it
  // started, what the journal no longer has goes.
  Result<std::unique_ptr<JournaledState>> fresh = JournaledState::Load(*journal_);
  if (!fresh.ok()) return fresh.error();
  js_ = std::move(fresh).value();
  std::erase_if(heard_, [&](const auto& h) { return js_->agent(h.first) == nullptr; });
  std::erase_if(logs_, [&](const auto& l) { return js_->state().FindJob(l.first) == nullptr; });
  // Agents report what runs again with their next heartbeat.
  started_.clear();
  // The burst settings in force are the journal's.
  if (provider_) return UseBurstInForce();
  return Ok();
}

void ControlPlane::Audit(const CallContext& c, const std::string& action, const std::string& object) {
  const std::string tenant =
      c.principal && c.principal->tenant.valid() ? state().tenant(c.principal->tenant).name : "";
  (void)Commit(AuditEntry{c.now, c.principal ? c.principal->name : "", tenant, action, object, c.remote,
                          c.principal ? c.principal->issuer : "", c.principal ? c.principal->subject : ""});
}

Result<std::string> ControlPlane::Bootstrap(const State& config, Time now, const PriceList& prices) {
  if (!js_->empty()) return FailedPrecondition("the journal already holds a cluster");
  for (const Tenant& t : config.tenants()) GP_RETURN_IF_ERROR(Commit(TenantPut{t}));
  for (const PriorityClass& pc : config.priority_classes()) GP_RETURN_IF_ERROR(Commit(PriorityClassAdded{pc}));
  for (const Node& n : config.nodes()) GP_RETURN_IF_ERROR(Commit(NodeAdded{n}));
  if (!(prices == PriceList())) GP_RETURN_IF_ERROR(Commit(PricesSet{prices, std::nullopt}));
  Principal admin{"admin", Role::kClusterAdmin, TenantId(), ""};
  return IssueToken(admin, now);
}

Result<std::string> ControlPlane::IssueToken(const Principal& p, Time now, Time expires) {
  auto [record, secret] = js_->tokens().Create(p, now);
  record.expires = expires;
  GP_RETURN_IF_ERROR(Commit(TokenIssued{record}));
  return secret;
}

Status ControlPlane::SnapshotWritten(int64_t seq) {
  GP_RETURN_IF_ERROR(journal_->Compact(seq));
  SnapshotDurable(seq);
  return Ok();
}

void ControlPlane::SnapshotDurable(int64_t seq) {
  snapshot_seq_ = seq;
  bytes_since_snapshot_ = 0;
}

// What a snapshot holds: the journaled state as of journal record `seq`, a copy, so the loop goes
// on changing its own while a worker encodes this.
struct ControlPlane::SnapshotCopy {
  int64_t seq = 0;
  JournaledState state;
};

std::shared_ptr<const ControlPlane::SnapshotCopy> ControlPlane::CopyForSnapshot() const {
  return std::make_shared<const SnapshotCopy>(SnapshotCopy{journal_->last_seq(), js_->ForSnapshot()});
}

int64_t ControlPlane::SnapshotSeq(const SnapshotCopy& copy) { return copy.seq; }

Snapshot ControlPlane::EncodeSnapshot(const SnapshotCopy& copy) { return copy.state.EncodeSnapshot(copy.seq); }

void ControlPlane::Tick(Time now, bool simulate_executor) {
  js_->ExpireIdempotency(now);
  JournalTokenUse();
  // Before jobs end below: a node whose last job ends now was busy until now.
  if (provider_) TrackBurstUse(state(), js_->fleet_upkeep(), now);
  if (simulate_executor) {
    std::vector<Event> events;
    for (JobId id : state().active()) {
      const Job& j = *state().FindJob(id);
      if (j.state == JobState::kAdmitted) {
        events.push_back(JobStarted{id, now});
      } else if (j.ExpectedEnd() <= now) {
        events.push_back(JobFinished{id, JobState::kSucceeded, now});
      }
    }
    for (const Event& e : events) GP_CHECK(ApplyAndStage(e).ok());
  }
  if (provider_) BurstJoin(now);  // nodes that are ready take work in this cycle
  if (!executors_.empty()) ExecutorsObserve(now);
  if (start_deadline_ && !simulate_executor) {
    MarkNodesWithoutAgents(now);
    CheckStartDeadlines(now);
  }
  if (!state().pending().empty()) {
    // On-demand nodes take only what their tenant's budget pays for (docs/design/burst.md).
    const NodeDeadlines deadlines =
        provider_ ? OnDemandDeadlines(state(), burst_policies_, burst_offers_, js_->fleet(), now) : NodeDeadlines{};
    last_plan_ = Schedule(state(), config_, now, deadlines);
    ++cycles_;
    ApplyPlan(last_plan_, now, js_->reasons_upkeep(), [this](const Event& e) { return ApplyAndStage(e); });
  }
  if (provider_) BurstTick(now);
  if (!executors_.empty()) executors_due_ = now;  // handed over by the flush that makes this durable
  if (!js_->agents().empty()) CheckHeartbeats(now);
  ArchiveFinished(now);
}

}  // namespace gpupool
