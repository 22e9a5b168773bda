#include "daemon/core.h"

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

// The job as the API shows it to `caller`; with its events (GET /v1/jobs/{id}) or without (lists).
Json JobJson(const State& s, const JobHistory& history, const Principal& caller, const Job& j, bool events) {
  const ReplicaShape& sh = j.spec.shape;
  const GpuModel& m = s.catalogue().model(sh.flavor);
  Json res = {{"flavor", m.name}};
  switch (sh.kind) {
    case ShapeKind::kWholeGpus: res["gpus"] = sh.gpus; break;
    case ShapeKind::kMigProfile: res["mig_profile"] = m.profiles[sh.mig_profile].name; break;
    case ShapeKind::kGpuFraction:
      res["gpu_fraction"] = sh.milli / 1000.0;
      res["memory_gb"] = sh.gpu_memory_mib / 1024;
      break;
  }
  Json placement = Json::array();
  for (const ReplicaPlacement& rp : j.placement) {
    Json gpus = Json::array();
    for (const GpuGrant& g : rp.grants) {
      Json gj = {{"gpu", g.gpu}};
      if (g.mig_start >= 0) gj["mig_start"] = g.mig_start;
      if (g.milli) gj["milli"] = g.milli;
      gpus.push_back(gj);
    }
    placement.push_back({{"node", s.node(rp.node).name}, {"gpus", gpus}});
  }
  Json out = {{"id", std::to_string(j.id.value())},
              {"name", j.spec.name},
              {"tenant", s.tenant(j.spec.tenant).name},
              {"priority_class", s.priority_class(j.spec.priority_class).name},
              {"state", std::string(JobStateName(j.state))},
              {"replicas", j.spec.replicas},
              {"resources", res},
              {"duration_estimate_s", j.spec.estimated_duration.seconds()},
              {"command", j.spec.command},
              {"submitted_at_ms", j.submitted.millis()},
              {"placement", placement}};
  if (j.state == JobState::kPending) {
    out["reason"] = {{"code", std::string(ReasonCodeName(j.reason.code))}, {"message", j.reason.message}};
    // A job sent back leads with why, until it is admitted again; the scheduler's reason says
    // what it waits for now.
    if (std::optional<HistoryEntry> back = history.LastSetback(j.id)) {
      out["reason"] = {{"code", back->type == HistoryType::kPreempted ? "preempted" : "requeued"},
                       {"message", JobHistory::Message(s, caller, *back) + " at " + Rfc3339(back->at) +
                                       "; now " + j.reason.message},
                       {"waiting", std::string(ReasonCodeName(j.reason.code))}};
    }
  }
  if (events) out["events"] = history.View(s, caller, j.id);
  if (HoldsResources(j.state)) out["admitted_as"] = std::string(AdmissionKindName(j.admitted_as));
  if (j.state == JobState::kRunning) out["started_at_ms"] = j.started.millis();
  if (j.spec.reservation.valid()) out["reservation"] = std::to_string(j.spec.reservation.value());
  if (!j.spec.node_selector.empty()) {
    Json sel = Json::array();
    for (const LabelRequirement& r : j.spec.node_selector) {
      Json e = {{"key", r.key}, {"operator", std::string(SelectorOpName(r.op))}};
      if (!r.values.empty()) e["values"] = r.values;
      sel.push_back(std::move(e));
    }
    out["node_selector"] = sel;
  }
  return out;
}

Result<uint64_t> ParseId(const std::string& s) {
  if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string::npos) {
    return NotFound("no job '" + s + "'");
  }
  return std::stoull(s);
}

}  // namespace

DaemonCore::DaemonCore(std::unique_ptr<Journal> journal, SchedulerConfig config)
    : journal_(std::move(journal)), config_(std::move(config)), state_(std::make_unique<State>()) {}

Result<std::unique_ptr<DaemonCore>> DaemonCore::Open(std::unique_ptr<Journal> journal,
                                                     SchedulerConfig config) {
  GP_RETURN_IF_ERROR(Validate(config));
  std::unique_ptr<DaemonCore> core(new DaemonCore(std::move(journal), std::move(config)));
  Result<std::vector<Record>> records = core->journal_->ReadAll();
  if (!records.ok()) return records.error();
  GP_RETURN_IF_ERROR(core->Replay(*records));
  return core;
}

Status DaemonCore::Replay(const std::vector<Record>& records) {
  // Only ever onto a core just constructed (Open, Rebuild): nothing is reset by hand, so no
  // member can be forgotten.
  GP_CHECK(empty_ && state_->jobs().empty() && state_->nodes().empty() && staged_.empty());
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
  empty_ = records.empty();
  // Requests that never became nodes died with the process that made them (providers are
  // asked again if the jobs still wait).
  std::erase_if(fleet_, [](const BurstNode& n) { return !n.ready.has_value(); });
  // The burst settings in force are the journal's (after a failed append: again).
  if (provider_) return UseBurstInForce();
  return Ok();
}

Status DaemonCore::ApplyRecord(const Record& r) {
  const Json j = Json::parse(r.body, nullptr, false);
  if (j.is_discarded()) return InvalidArgument("not JSON");
  if (r.kind == "tenant") {
    Result<Tenant> t = TenantFromJson(*state_, j);
    if (!t.ok()) return t.error();
    if (Result<TenantId> id = state_->FindTenant(t->name); id.ok()) {
      t->id = *id;
      deleted_.erase(*id);
      return state_->UpdateTenant(*t);
    }
    Result<TenantId> added = state_->AddTenant(*t);
    return added.ok() ? Ok() : Status(added.error());
  }
  if (r.kind == "class") {
    Result<PriorityClass> pc = PriorityClassFromJson(j);
    if (!pc.ok()) return pc.error();
    Result<PriorityClassId> id = state_->AddPriorityClass(*pc);
    return id.ok() ? Ok() : Status(id.error());
  }
  if (r.kind == "node") {
    Result<Node> n = NodeFromJson(*state_, j);
    if (!n.ok()) return n.error();
    Result<NodeId> id = state_->AddNode(*n);
    return id.ok() ? Ok() : Status(id.error());
  }
  if (r.kind == "event") {
    Result<Event> e = EventFromJson(j.value("event", Json()));
    if (!e.ok()) return e.error();
    GP_RETURN_IF_ERROR(ApplyEvent(*e));
    if (j.contains("idempotency")) {
      const JobSubmitted& submitted = std::get<JobSubmitted>(*e);
      RememberIdempotency(j["idempotency"].get<std::string>(), submitted.id, submitted.at);
      ExpireIdempotency(submitted.at);  // replay holds one day of keys too
    }
    return Ok();
  }
  if (r.kind == "token") {
    TokenRecord t;
    t.id = j.value("id", "");
    t.sha256 = j.value("sha256", "");
    t.principal.name = j.value("name", "");
    Result<Role> role = ParseRole(j.value("role", ""));
    if (!role.ok()) return role.error();
    t.principal.role = *role;
    t.principal.token_id = t.id;
    const std::string tenant = j.value("tenant", "");
    if (!tenant.empty()) {
      Result<TenantId> tid = state_->FindTenant(tenant);
      if (!tid.ok()) return tid.error();
      t.principal.tenant = *tid;
    }
    t.created = Time::FromMillis(j.value("created_ms", int64_t{0}));
    tokens_.Add(t);
    return Ok();
  }
  if (r.kind == "tenant_deleted") {
    Result<TenantId> id = state_->FindTenant(j.value("name", ""));
    if (!id.ok()) return id.error();
    Tenant t = state_->tenant(*id);
    t.quotas.clear();
    GP_RETURN_IF_ERROR(state_->UpdateTenant(t));
    deleted_.insert(*id);
    for (const auto& [tid, tok] : tokens_.tokens()) {
      if (tok.principal.tenant == *id && !tok.revoked) (void)tokens_.Revoke(tid);
    }
    return Ok();
  }
  if (r.kind == "token_revoked") return tokens_.Revoke(j.value("id", ""));
  if (r.kind == "burst_request" || r.kind == "burst_node") return ApplyBurstRecord(r.kind, j);
  if (r.kind == "burst_settings") return ApplyBurstSettingsRecord(j);
  if (r.kind == "agent") return ApplyAgentRecord(j);
  if (r.kind == "replica_exit") return ApplyReplicaExitRecord(j);
  if (r.kind == "prices") {
    std::optional<Time> from;
    Result<PriceList> p = DecodePriceList(*state_, r.body, &from);
    if (!p.ok()) return p.error();
    ApplyPrices(std::move(p).value(), from);
    return Ok();
  }
  if (r.kind == "audit") {
    audit_.push_back(r.body);
    return Ok();
  }
  return InvalidArgument("unknown record kind");
}

Status DaemonCore::Stage(std::string kind, std::string body) {
  staged_.push_back({0, std::move(kind), std::move(body)});
  empty_ = false;
  return Ok();
}

Status DaemonCore::ApplyEvent(const Event& e) {
  Result<LedgerChange> change = ledger_.Prepare(*state_, e);
  if (!change.ok()) return Error{ErrorCode::kInternal, change.error().message};
  GP_RETURN_IF_ERROR(Apply(*state_, e));
  ledger_.Commit(std::move(change).value());
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

Status DaemonCore::ApplyAndStage(const Event& e, const std::string& idempotency) {
  GP_RETURN_IF_ERROR(ApplyEvent(e));
  Json body = {{"event", EventToJson(e)}};
  if (!idempotency.empty()) body["idempotency"] = idempotency;
  return Stage("event", body.dump());
}

Status DaemonCore::Flush() {
  if (staged_.empty()) return Ok();
  Status s = journal_->Append(staged_);
  staged_.clear();
  if (s.ok()) return Ok();
  // Memory is ahead of disk: rebuild from what is durable, then report. If even that fails,
  // stop: serving from a state that is not on disk could acknowledge what a restart loses, and
  // a restart recovers exactly what is durable.
  const Status rebuilt = Rebuild();
  GP_CHECK(rebuilt.ok()) << "journal replay failed after a failed append: " << rebuilt.error().message;
  return s;
}

void DaemonCore::Abandon() {
  staged_.clear();
  const Status rebuilt = Rebuild();
  GP_CHECK(rebuilt.ok()) << "journal replay failed after an abandoned batch: " << rebuilt.error().message;
}

Status DaemonCore::Rebuild() {
  Result<std::vector<Record>> records = journal_->ReadAll();
  if (!records.ok()) return records.error();
  // A new core from the journal; what it takes from this one is listed here, and is what the
  // journal does not hold by design: how this process runs (set after Open by Serve), and what
  // it has heard or asked since it started. Everything else is the journal's.
  std::unique_ptr<DaemonCore> fresh(new DaemonCore(nullptr, config_));
  fresh->heartbeat_interval_ = heartbeat_interval_;
  fresh->heartbeat_timeout_ = heartbeat_timeout_;
  fresh->start_deadline_ = start_deadline_;
  fresh->deadlines_from_ = deadlines_from_;
  fresh->burst_file_ = burst_file_;
  fresh->provider_ = std::move(provider_);
  fresh->burst_retry_at_ = burst_retry_at_;
  fresh->release_retry_ = release_retry_;
  fresh->last_plan_ = last_plan_;
  fresh->cycles_ = cycles_;
  const Status replayed = fresh->Replay(*records);
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

void DaemonCore::Audit(const CallContext& c, const std::string& action, const std::string& object) {
  const Json j = {{"at_ms", c.now.millis()},
                  {"principal", c.principal ? c.principal->name : ""},
                  {"tenant", c.principal && c.principal->tenant.valid()
                                 ? state_->tenant(c.principal->tenant).name
                                 : ""},
                  {"action", action},
                  {"object", object},
                  {"remote", c.remote}};
  std::string line = j.dump();
  audit_.push_back(line);
  (void)Stage("audit", std::move(line));
}

Result<std::string> DaemonCore::Bootstrap(const State& config, Time now, const PriceList& prices) {
  if (!empty_) return FailedPrecondition("the journal already holds a cluster");
  for (const Tenant& t : config.tenants()) {
    const Json j = TenantToJson(config, t);
    const Record r{0, "tenant", j.dump()};
    GP_RETURN_IF_ERROR(ApplyRecord(r));
    GP_RETURN_IF_ERROR(Stage(r.kind, r.body));
  }
  for (const PriorityClass& pc : config.priority_classes()) {
    const Record r{0, "class", PriorityClassToJson(pc).dump()};
    GP_RETURN_IF_ERROR(ApplyRecord(r));
    GP_RETURN_IF_ERROR(Stage(r.kind, r.body));
  }
  for (const Node& n : config.nodes()) {
    const Record r{0, "node", NodeToJson(config, n).dump()};
    GP_RETURN_IF_ERROR(ApplyRecord(r));
    GP_RETURN_IF_ERROR(Stage(r.kind, r.body));
  }
  if (!(prices == PriceList())) {
    const Record r{0, "prices", PriceListToJson(*state_, prices)};
    GP_RETURN_IF_ERROR(ApplyRecord(r));
    GP_RETURN_IF_ERROR(Stage(r.kind, r.body));
  }
  Principal admin{"admin", Role::kClusterAdmin, TenantId(), ""};
  return IssueToken(admin, now);
}

Result<std::string> DaemonCore::IssueToken(const Principal& p, Time now) {
  auto [record, secret] = tokens_.Create(p, now);
  tokens_.Add(record);
  const Json j = {{"id", record.id},
                  {"sha256", record.sha256},
                  {"name", p.name},
                  {"role", std::string(RoleName(p.role))},
                  {"tenant", p.tenant.valid() ? state_->tenant(p.tenant).name : ""},
                  {"created_ms", now.millis()}};
  GP_RETURN_IF_ERROR(Stage("token", j.dump()));
  return secret;
}

void DaemonCore::RememberIdempotency(const std::string& key, JobId job, Time at) {
  idempotency_[key] = job;
  idempotency_order_.emplace_back(at, key);
}

void DaemonCore::ExpireIdempotency(Time now) {
  while (!idempotency_order_.empty() && !(now < idempotency_order_.front().first + kIdempotencyWindow)) {
    // A key re-used after its day names a younger job, which stays.
    auto it = idempotency_.find(idempotency_order_.front().second);
    if (it != idempotency_.end() && !IdempotencyLive(it->second, now)) idempotency_.erase(it);
    idempotency_order_.pop_front();
  }
}

Reply DaemonCore::SubmitJob(const CallContext& c, const std::string& body, const std::string& key) {
  if (c.principal == nullptr) return Unauthenticated();
  if (key.size() > 128) return Err(InvalidArgument("Idempotency-Key is longer than 128 characters"));
  if (!ValidUtf8(key)) return Err(InvalidArgument("Idempotency-Key is not valid UTF-8"));
  // Keys are scoped to the token (as payment APIs scope them to the API key).
  const std::string idem = key.empty() ? "" : c.principal->token_id + "\n" + key;
  ExpireIdempotency(c.now);
  if (!idem.empty()) {
    auto it = idempotency_.find(idem);
    // The queue is in submit order; with a clock that stepped back it may hold an entry past
    // its day behind a younger one, so the day is checked here too.
    if (it != idempotency_.end() && IdempotencyLive(it->second, c.now)) {
      const Job& j = *state_->FindJob(it->second);
      return JsonReply(201, {{"id", std::to_string(j.id.value())},
                             {"state", std::string(JobStateName(j.state))},
                             {"replayed", true}});
    }
  }
  Result<JobSpec> spec = DecodeJobRequest(*state_, *c.principal, body);
  if (!spec.ok()) return Err(spec.error());
  if (!c.principal->Writes()) return Forbidden("submit jobs");
  if (deleted_.count(spec->tenant)) return Err(NotFound("unknown tenant"));
  if (const uint32_t most = state_->tenant(spec->tenant).limits.max_pending_jobs;
      most > 0 && state_->pending_jobs(spec->tenant) >= most) {
    // 429, as for any rate the caller must slow down to (the body says which limit).
    return Reply{429, ErrorBody(Error{ErrorCode::kResourceExhausted,
                                      "tenant " + state_->tenant(spec->tenant).name + " has " + std::to_string(most) +
                                          " jobs pending, its maximum (limits.max_pending_jobs): wait for some to "
                                          "start or cancel some"})};
  }
  if (spec->reservation.valid()) {
    const Reservation& r = *state_->FindReservation(spec->reservation);  // ValidateSpec checked
    if (r.end <= c.now) {
      return Err(FailedPrecondition("reservation " + std::to_string(r.id.value()) + " ended at " +
                                    Rfc3339(r.end)));
    }
  }
  const JobSubmitted e{state_->NextJobId(), *spec, c.now};
  if (Status s = ApplyAndStage(e, idem); !s.ok()) return Err(s.error());
  if (!idem.empty()) RememberIdempotency(idem, e.id, e.at);
  Audit(c, "job.submit", std::to_string(e.id.value()));
  return JsonReply(201, {{"id", std::to_string(e.id.value())}, {"state", "pending"}});
}

const Job* DaemonCore::VisibleJob(const CallContext& c, const std::string& id) const {
  Result<uint64_t> n = ParseId(id);
  if (!n.ok()) return nullptr;
  const Job* j = state_->FindJob(JobId(*n));
  if (j == nullptr || !c.principal->Sees(j->spec.tenant)) return nullptr;
  return j;
}

Reply DaemonCore::GetJob(const CallContext& c, const std::string& id) {
  if (c.principal == nullptr) return Unauthenticated();
  const Job* j = VisibleJob(c, id);
  if (j == nullptr) return Err(NotFound("no job '" + id + "'"));
  return JsonReply(200, JobJson(*state_, history_, *c.principal, *j, true));
}

Reply DaemonCore::ListJobs(const CallContext& c, const std::map<std::string, std::string>& query) {
  if (c.principal == nullptr) return Unauthenticated();
  Result<PageQuery> page = DecodePageQuery(query, "jobs", {"tenant", "state"});
  if (!page.ok()) return Err(page.error());
  const auto param = [&query](const char* key) {
    const auto it = query.find(key);
    return it == query.end() ? std::string() : it->second;
  };
  const std::string tenant = param("tenant"), st = param("state");
  if (!st.empty()) {
    bool known = false;
    for (JobState s : {JobState::kPending, JobState::kAdmitted, JobState::kRunning, JobState::kSucceeded,
                       JobState::kFailed, JobState::kCancelled}) {
      known = known || JobStateName(s) == st;
    }
    if (!known) {
      return Err(InvalidArgument("unknown state '" + st +
                                 "': pending, admitted, running, succeeded, failed or cancelled"));
    }
  }
  TenantId filter;
  if (!tenant.empty()) {
    Result<TenantId> t = state_->FindTenant(tenant);
    if (!t.ok() || !c.principal->Sees(*t)) return Err(NotFound("unknown tenant '" + tenant + "'"));
    filter = *t;
  }
  // Newest first. Ids only grow, so the jobs older than the cursor are the map's entries before
  // it: walk back from there until the page is full and one more match shows there is a next.
  const std::map<JobId, Job>& jobs = state_->jobs();
  auto it = page->before ? jobs.lower_bound(JobId(*page->before)) : jobs.end();
  Json items = Json::array();
  uint64_t last = 0;  // the last job returned: the cursor names only what the caller was shown
  bool more = false;
  while (it != jobs.begin()) {
    const Job& j = (--it)->second;
    if (!c.principal->Sees(j.spec.tenant)) continue;
    if (filter.valid() && j.spec.tenant != filter) continue;
    if (!st.empty() && JobStateName(j.state) != st) continue;
    if (page->limit && items.size() == static_cast<size_t>(*page->limit)) {
      more = true;
      break;
    }
    items.push_back(JobJson(*state_, history_, *c.principal, j, false));
    last = j.id.value();
  }
  return JsonReply(200, {{"items", items}, {"next_cursor", more ? Json(EncodeCursor("jobs", last)) : Json(nullptr)}});
}

Reply DaemonCore::CancelJob(const CallContext& c, const std::string& id) {
  if (c.principal == nullptr) return Unauthenticated();
  const Job* j = VisibleJob(c, id);
  if (j == nullptr) return Err(NotFound("no job '" + id + "'"));
  if (!c.principal->Writes()) return Forbidden("cancel jobs");
  if (IsTerminal(j->state)) return Err(FailedPrecondition("job already " + std::string(JobStateName(j->state))));
  if (Status s = ApplyAndStage(JobFinished{j->id, JobState::kCancelled, c.now, "by " + c.principal->name}); !s.ok()) {
    return Err(s.error());
  }
  Audit(c, "job.cancel", id);
  return JsonReply(200, {{"id", id}, {"state", "cancelled"}});
}

Reply DaemonCore::ListTenants(const CallContext& c) {
  if (c.principal == nullptr) return Unauthenticated();
  Json items = Json::array();
  const QuotaBook book(*state_, c.now);  // one book and one pass over the jobs for the whole list
  const auto counts = JobCounts(*state_);
  const std::vector<GuaranteeCheck> over = GuaranteeOvercommits(*state_, c.now);
  for (const Tenant& t : state_->tenants()) {
    if (c.principal->Sees(t.id) && !deleted_.count(t.id)) items.push_back(TenantView(t, book, counts, over));
  }
  return JsonReply(200, {{"items", items}});
}

const Tenant* DaemonCore::VisibleTenant(const CallContext& c, const std::string& name) const {
  Result<TenantId> t = state_->FindTenant(name);
  if (!t.ok() || deleted_.count(*t) || !c.principal->Sees(*t)) return nullptr;
  return &state_->tenant(*t);
}

Json DaemonCore::TenantView(const Tenant& t, Time now) const {
  return TenantView(t, QuotaBook(*state_, now), JobCounts(*state_), GuaranteeOvercommits(*state_, now));
}

namespace {

std::string Gpus(GpuEq q) { return ToString(q); }

// "h100-80gb: guarantees would be 124 of 64 GPUs"
std::string OverrunText(const State& s, const GuaranteeCheck& c, bool would) {
  std::string out = s.catalogue().model(c.flavor).name + ": guarantees " + (would ? "would be " : "are ") +
                    Gpus(c.guaranteed) + " of " + Gpus(c.capacity) + " GPUs";
  if (c.reserved > GpuEq()) {
    out += ", and reservations hold " + Gpus(c.reserved) + " at " + Rfc3339(c.reserved_at) + " (at most " +
           Gpus(Max(GpuEq(), c.capacity - c.reserved)) + " can be guaranteed)";
  }
  return out;
}

}  // namespace

Status DaemonCore::CheckGuarantees(const CallContext& c, const Tenant& t, bool allow_overcommit) {
  const std::vector<GuaranteeCheck> over = GuaranteeOverruns(*state_, t, c.now);
  if (over.empty()) return Ok();
  std::string text;
  for (const GuaranteeCheck& g : over) text += (text.empty() ? "" : "; ") + OverrunText(*state_, g, true);
  if (!allow_overcommit) {
    return Error{ErrorCode::kConflict, text + "; to promise more than the pool holds, send \"allow_overcommit\": true"};
  }
  Audit(c, "tenant.overcommit", t.name + ": " + text);
  Log("warn", "guarantees above capacity, allowed by the request", {{"tenant", t.name}, {"detail", text}});
  return Ok();
}

Json DaemonCore::TenantView(const Tenant& t, const QuotaBook& book,
                            const std::map<TenantId, std::pair<int, int>>& counts,
                            const std::vector<GuaranteeCheck>& overcommits) const {
  const Catalogue& cat = state_->catalogue();
  auto gpus = [](GpuEq q) { return q.ToGpus(); };
  Json quotas = Json::object();
  for (const auto& [f, q] : t.quotas) {
    Json jq = {{"guaranteed", gpus(q.guaranteed)}};
    if (q.borrow_limit) jq["borrow_limit"] = gpus(*q.borrow_limit);
    if (q.lend_limit) jq["lend_limit"] = gpus(*q.lend_limit);
    quotas[cat.model(f).name] = jq;
  }
  Json usage = Json::object();
  for (size_t i = 0; i < cat.size(); ++i) {
    const FlavorId f(static_cast<uint16_t>(i));
    if (book.usage(t.id, f) == GpuEq() && !t.quota(f)) continue;
    Json& u = usage[cat.model(f).name];
    u = {{"allocated", gpus(book.usage(t.id, f))}, {"borrowed", gpus(book.borrowed(t.id, f))}};
    if (book.reserved(t.id, f) > GpuEq()) u["reserved_in_force"] = gpus(book.reserved(t.id, f));
  }
  const auto it = counts.find(t.id);
  const auto [pending, active] = it == counts.end() ? std::pair<int, int>{0, 0} : it->second;
  Json limits = Json::object();
  if (t.limits.max_replicas) limits["max_replicas"] = t.limits.max_replicas;
  if (t.limits.max_job_gpu_eq > GpuEq()) limits["max_job_gpus"] = gpus(t.limits.max_job_gpu_eq);
  if (t.limits.default_duration != Duration::Infinite()) limits["default_duration_s"] = t.limits.default_duration.seconds();
  if (t.limits.max_duration != Duration::Infinite()) limits["max_duration_s"] = t.limits.max_duration.seconds();
  if (t.limits.max_pending_jobs != JobLimits::kDefaultMaxPendingJobs) limits["max_pending_jobs"] = t.limits.max_pending_jobs;
  // Flavors this tenant is guaranteed where the promises exceed the pool (an admin allowed it,
  // or health took capacity away): its guarantee may not be honoured in full.
  Json over = Json::array();
  for (const GuaranteeCheck& g : overcommits) {
    if (const FlavorQuota* q = t.quota(g.flavor); q && q->guaranteed > GpuEq()) over.push_back(OverrunText(*state_, g, false));
  }
  Json out = {{"name", t.name},
              {"weight", t.weight_milli / 1000.0},
              {"quotas", quotas},
              {"limits", limits},
              {"allow_gpu_cotenancy", t.allow_gpu_cotenancy},
              {"required_labels", t.required_labels},
              {"allowed_labels", t.allowed_labels},
              {"usage", usage},
              {"pending_jobs", pending},
              {"active_jobs", active}};
  if (!over.empty()) out["overcommitted"] = over;
  return out;
}

Status DaemonCore::StageTenant(const Tenant& t) {
  const Record r{0, "tenant", TenantToJson(*state_, t).dump()};
  GP_RETURN_IF_ERROR(ApplyRecord(r));
  return Stage(r.kind, r.body);
}

Reply DaemonCore::GetTenant(const CallContext& c, const std::string& name) {
  if (c.principal == nullptr) return Unauthenticated();
  const Tenant* t = VisibleTenant(c, name);
  if (t == nullptr) return Err(NotFound("no tenant '" + name + "'"));
  return JsonReply(200, TenantView(*t, c.now));
}

Reply DaemonCore::CreateTenant(const CallContext& c, const std::string& body) {
  if (c.principal == nullptr) return Unauthenticated();
  if (!c.principal->admin()) return Forbidden("create tenants");
  bool allow_overcommit = false;
  Result<Tenant> t = DecodeTenantRequest(*state_, body, nullptr, &allow_overcommit);
  if (!t.ok()) return Err(t.error());
  Result<TenantId> existing = state_->FindTenant(t->name);
  if (existing.ok() && !deleted_.count(*existing)) {
    return Err({ErrorCode::kAlreadyExists, "tenant '" + t->name + "' exists"});
  }
  if (existing.ok()) t->id = *existing;
  if (Status s = CheckGuarantees(c, *t, allow_overcommit); !s.ok()) return Err(s.error());
  if (Status s = StageTenant(*t); !s.ok()) return Err(s.error());
  Audit(c, "tenant.create", t->name);
  return JsonReply(201, TenantView(state_->tenant(*state_->FindTenant(t->name)), c.now));
}

Reply DaemonCore::UpdateTenant(const CallContext& c, const std::string& name, const std::string& body) {
  if (c.principal == nullptr) return Unauthenticated();
  const Tenant* t = VisibleTenant(c, name);
  if (t == nullptr) return Err(NotFound("no tenant '" + name + "'"));
  if (!c.principal->admin()) return Forbidden("change tenants");
  bool allow_overcommit = false;
  Result<Tenant> updated = DecodeTenantRequest(*state_, body, t, &allow_overcommit);
  if (!updated.ok()) return Err(updated.error());
  if (Status s = CheckGuarantees(c, *updated, allow_overcommit); !s.ok()) return Err(s.error());
  if (Status s = StageTenant(*updated); !s.ok()) return Err(s.error());
  Audit(c, "tenant.update", name);
  return JsonReply(200, TenantView(state_->tenant(updated->id), c.now));
}

Reply DaemonCore::DeleteTenant(const CallContext& c, const std::string& name) {
  if (c.principal == nullptr) return Unauthenticated();
  const Tenant* t = VisibleTenant(c, name);
  if (t == nullptr) return Err(NotFound("no tenant '" + name + "'"));
  if (!c.principal->admin()) return Forbidden("delete tenants");
  for (const auto* ids : {&state_->pending(), &state_->active()}) {
    for (JobId id : *ids) {
      if (state_->FindJob(id)->spec.tenant == t->id) {
        return Err(FailedPrecondition("tenant '" + name + "' has pending or active jobs; cancel them first"));
      }
    }
  }
  // Its reservations would go on counting as guarantee: they are cancelled first, by the caller.
  for (const auto& [rid, res] : state_->reservations()) {
    if (res.tenant == t->id && c.now < res.end) {
      return Err(FailedPrecondition("tenant '" + name + "' holds reservation " + std::to_string(rid.value()) +
                                    " (until " + Rfc3339(res.end) + "); cancel it first"));
    }
  }
  // A tombstone: the id stays (jobs and the ledger refer to it); no quota, no tokens, hidden.
  const Record r{0, "tenant_deleted", Json({{"name", name}}).dump()};
  if (Status s = ApplyRecord(r); !s.ok()) return Err(s.error());
  (void)Stage(r.kind, r.body);
  Audit(c, "tenant.delete", name);
  return JsonReply(200, {{"name", name}, {"deleted", true}});
}

Reply DaemonCore::ListPriorityClasses(const CallContext& c) {
  if (c.principal == nullptr) return Unauthenticated();
  Json items = Json::array();
  for (const PriorityClass& pc : state_->priority_classes()) {
    Json item = {{"name", pc.name}, {"value", pc.value}, {"preemptible", pc.preemptible},
                 {"may_borrow", pc.may_borrow}, {"grace_period_s", pc.grace_period.seconds()},
                 {"default", pc.is_default}};
    // The minimum runtime before preemption: the class's own, or the scheduler's.
    item["min_runtime_s"] = pc.min_runtime.value_or(config_.preemption.min_runtime).seconds();
    items.push_back(std::move(item));
  }
  return JsonReply(200, {{"items", items}});
}

Reply DaemonCore::CreatePriorityClass(const CallContext& c, const std::string& body) {
  if (c.principal == nullptr) return Unauthenticated();
  if (!c.principal->admin()) return Forbidden("create priority classes");
  Result<PriorityClass> pc = DecodePriorityClassRequest(body);
  if (!pc.ok()) return Err(pc.error());
  if (state_->FindPriorityClass(pc->name).ok()) {
    return Err({ErrorCode::kAlreadyExists, "priority class '" + pc->name + "' exists"});
  }
  const Record r{0, "class", PriorityClassToJson(*pc).dump()};
  if (Status s = ApplyRecord(r); !s.ok()) return Err(s.error());
  (void)Stage(r.kind, r.body);
  Audit(c, "priority_class.create", pc->name);
  return JsonReply(201, {{"name", pc->name}, {"value", pc->value}});
}

bool DaemonCore::SeesNode(const CallContext& c, const Node& n) const {
  if (c.principal->admin()) return true;
  for (JobId id : n.Jobs()) {
    if (state_->FindJob(id)->spec.tenant == c.principal->tenant) return true;
  }
  return false;
}

Json DaemonCore::NodeView(const CallContext& c, const Node& n, bool detail, bool devices) const {
  const GpuModel& m = state_->catalogue().model(n.flavor);
  int whole_free = 0, mig = 0, shared = 0, healthy = 0;
  for (const Gpu& g : n.gpus) {
    healthy += g.healthy;
    if (g.mode == GpuMode::kMig) ++mig;
    if (g.mode == GpuMode::kShared) ++shared;
    if (g.mode == GpuMode::kWhole && g.healthy && g.idle()) ++whole_free;
  }
  Json out = {{"name", n.name},
              {"flavor", m.name},
              {"condition", std::string(NodeConditionName(n.condition))},
              {"gpus", n.gpus.size()},
              {"healthy_gpus", healthy},
              {"mig_gpus", mig},
              {"shared_gpus", shared},
              {"free_whole_gpus", whole_free},
              {"block", n.block},
              {"nvlink_domain", n.nvlink_domain},
              {"labels", n.labels},
              {"dedicated_to", n.dedicated_to.valid() ? Json(state_->tenant(n.dedicated_to).name) : Json(nullptr)}};
  if (!n.condition_reason.empty()) out["condition_reason"] = n.condition_reason;
  if (detail) {
    Json jobs = Json::array();
    for (JobId id : n.Jobs()) {
      if (c.principal->Sees(state_->FindJob(id)->spec.tenant)) jobs.push_back(std::to_string(id.value()));
    }
    out["jobs"] = jobs;
  }
  if (detail || devices) out["devices"] = DevicesView(c, n);
  return out;
}

Json DaemonCore::OccupantView(const CallContext& c, JobId id) const {
  const Job& j = *state_->FindJob(id);
  // Another tenant's work shows as taken, never by whom.
  if (!c.principal->Sees(j.spec.tenant)) return {{"job", nullptr}, {"tenant", nullptr}};
  return {{"job", std::to_string(id.value())}, {"tenant", state_->tenant(j.spec.tenant).name}};
}

Json DaemonCore::DevicesView(const CallContext& c, const Node& n) const {
  const GpuModel& m = state_->catalogue().model(n.flavor);
  Json devices = Json::array();
  for (size_t i = 0; i < n.gpus.size(); ++i) {
    const Gpu& g = n.gpus[i];
    Json d = {{"index", i}, {"mode", std::string(GpuModeName(g.mode))}, {"healthy", g.healthy}};
    if (!g.healthy && !g.health_reason.empty()) d["health_reason"] = g.health_reason;
    // The node agent's refusal of the MIG layout the scheduler chose (operators only).
    if (auto a = agents_.find(n.id); a != agents_.end() && c.principal->admin()) {
      if (auto e = a->second.mig_error.find(static_cast<int>(i)); e != a->second.mig_error.end()) d["mig_error"] = e->second;
    }
    if (g.mode == GpuMode::kWhole) {
      d["occupant"] = g.occupant.valid() ? OccupantView(c, g.occupant) : Json(nullptr);
    } else if (g.mode == GpuMode::kMig) {
      Json slices = Json::array();
      for (int k = 0; k < g.layout.size(); ++k) {
        const MigInstance& inst = g.layout.at(k);
        const MigProfile& p = m.profiles[inst.profile];
        const JobId occ = g.instance_occupant[static_cast<size_t>(k)];
        slices.push_back({{"profile", p.name}, {"start", inst.start}, {"memory_slices", p.memory_slices},
                          {"occupant", occ.valid() ? OccupantView(c, occ) : Json(nullptr)}});
      }
      d["slices"] = slices;
    } else {
      Json clients = Json::array();
      for (const SharedOccupant& s : g.shared) {
        Json o = OccupantView(c, s.job);
        o["milli"] = s.milli;
        clients.push_back(o);
      }
      d["clients"] = clients;
    }
    devices.push_back(d);
  }
  return devices;
}

Reply DaemonCore::ListNodes(const CallContext& c, bool devices) {
  if (c.principal == nullptr) return Unauthenticated();
  Json items = Json::array();
  for (const Node& n : state_->nodes()) {
    if (!n.removed && SeesNode(c, n)) items.push_back(NodeView(c, n, false, devices));
  }
  return JsonReply(200, {{"items", items}});
}

Reply DaemonCore::GetNode(const CallContext& c, const std::string& name) {
  if (c.principal == nullptr) return Unauthenticated();
  Result<NodeId> id = state_->FindNode(name);
  if (!id.ok() || !SeesNode(c, state_->node(*id))) return Err(NotFound("no node '" + name + "'"));
  return JsonReply(200, NodeView(c, state_->node(*id), true));
}

Reply DaemonCore::NodeAction(const CallContext& c, const std::string& name, const std::string& action) {
  if (c.principal == nullptr) return Unauthenticated();
  Result<NodeId> id = state_->FindNode(name);
  if (!id.ok() || !SeesNode(c, state_->node(*id))) return Err(NotFound("no node '" + name + "'"));
  if (!c.principal->admin()) return Forbidden(action + " nodes");
  if (state_->node(*id).condition == NodeCondition::kRetired) {
    return Err(FailedPrecondition("node " + name + " is retired"));
  }
  const NodeCondition to = action == "uncordon" ? NodeCondition::kReady
                           : action == "drain"  ? NodeCondition::kDraining
                                                : NodeCondition::kCordoned;
  if (Status s = ApplyAndStage(NodeConditionChanged{*id, to, c.now}); !s.ok()) return Err(s.error());
  const int requeued =
      action == "drain" ? RequeueJobsOn(*id, c.now, RequeueCause::kNodeDrained, "node " + name + " was drained by " + c.principal->name) : 0;
  Audit(c, "node." + action, name);
  return JsonReply(200, {{"name", name}, {"condition", std::string(NodeConditionName(to))},
                         {"requeued_jobs", requeued}});
}

Reply DaemonCore::DeleteNode(const CallContext& c, const std::string& name) {
  if (c.principal == nullptr) return Unauthenticated();
  Result<NodeId> id = state_->FindNode(name);
  if (!id.ok() || !SeesNode(c, state_->node(*id))) return Err(NotFound("no node '" + name + "'"));
  if (!c.principal->admin()) return Forbidden("delete nodes");
  const Node& n = state_->node(*id);
  if (n.condition != NodeCondition::kDraining) {
    return Err(FailedPrecondition("node " + name + " is " + std::string(NodeConditionName(n.condition)) +
                                  ": drain it first (gpupool drain " + name + "), then delete it once it is empty"));
  }
  if (const std::vector<JobId> jobs = n.Jobs(); !jobs.empty()) {
    return Err(FailedPrecondition("node " + name + " still holds " + std::to_string(jobs.size()) +
                                  " job(s); delete it once they have left"));
  }
  if (Status s = ApplyAndStage(NodeRemoved{*id, c.now}); !s.ok()) return Err(s.error());
  Audit(c, "node.delete", name);
  return JsonReply(200, {{"name", name}, {"deleted", true}});
}

Reply DaemonCore::CreateToken(const CallContext& c, const std::string& body) {
  if (c.principal == nullptr) return Unauthenticated();
  Result<Json> parsed = ParseTokenRequest(body);
  if (!parsed.ok()) return Err(parsed.error());
  const Json& j = *parsed;
  for (const auto& [k, v] : j.items()) {
    if (k != "name" && k != "role" && k != "tenant") return Err(InvalidArgument("unknown field '" + k + "'"));
  }
  if (!j.contains("name") || !j["name"].is_string() || j["name"].get<std::string>().empty() ||
      !j.contains("role") || !j["role"].is_string()) {
    return Err(InvalidArgument("'name' and 'role' are required strings"));
  }
  if (j["name"].get<std::string>().size() > 128) return Err(InvalidArgument("'name' is longer than 128 characters"));
  Result<Role> role = ParseRole(j["role"].get<std::string>());
  if (!role.ok()) return Err(role.error());
  Principal p{j["name"].get<std::string>(), *role, TenantId(), ""};
  if (*role == Role::kNodeAgent && j.contains("tenant")) {
    return Err(InvalidArgument("a node-agent token has no tenant; its name is the node it acts for"));
  }
  if (*role != Role::kClusterAdmin && *role != Role::kNodeAgent) {
    if (!j.contains("tenant") || !j["tenant"].is_string()) return Err(InvalidArgument("'tenant' is required"));
    Result<TenantId> t = state_->FindTenant(j["tenant"].get<std::string>());
    if (!t.ok() || !c.principal->Sees(*t) || deleted_.count(*t)) return Err(NotFound("unknown tenant"));
    p.tenant = *t;
  }
  // Cluster admins make any token (node-agent ones too); tenant admins make member and viewer
  // tokens of their tenant.
  const bool allowed = c.principal->admin() ||
                       (c.principal->role == Role::kTenantAdmin &&
                        (*role == Role::kMember || *role == Role::kViewer));
  if (!allowed) return Forbidden("create this token");
  Result<std::string> secret = IssueToken(p, c.now);
  if (!secret.ok()) return Err(secret.error());
  Audit(c, "token.create", p.name);
  const std::string id = secret->substr(3, secret->find('_', 3) - 3);  // gp_<id>_<secret>
  return JsonReply(201, {{"id", id}, {"token", *secret}, {"name", p.name}, {"role", std::string(RoleName(p.role))}});
}

Reply DaemonCore::ListTokens(const CallContext& c) {
  if (c.principal == nullptr) return Unauthenticated();
  Json items = Json::array();
  for (const auto& [id, t] : tokens_.tokens()) {
    const bool mine = c.principal->admin() ||
                      (c.principal->role == Role::kTenantAdmin && t.principal.tenant == c.principal->tenant);
    if (!mine) continue;
    items.push_back({{"id", id},
                     {"name", t.principal.name},
                     {"role", std::string(RoleName(t.principal.role))},
                     {"tenant", t.principal.tenant.valid() ? state_->tenant(t.principal.tenant).name : ""},
                     {"revoked", t.revoked}});
  }
  return JsonReply(200, {{"items", items}});
}

Reply DaemonCore::RevokeToken(const CallContext& c, const std::string& id) {
  if (c.principal == nullptr) return Unauthenticated();
  auto it = tokens_.tokens().find(id);
  const bool mine = it != tokens_.tokens().end() &&
                    (c.principal->admin() || (c.principal->role == Role::kTenantAdmin &&
                                              it->second.principal.tenant == c.principal->tenant));
  if (!mine) return Err(NotFound("no token '" + id + "'"));
  if (Status s = tokens_.Revoke(id); !s.ok()) return Err(s.error());
  (void)Stage("token_revoked", Json({{"id", id}}).dump());
  Audit(c, "token.revoke", id);
  return JsonReply(200, {{"id", id}, {"revoked", true}});
}

Reply DaemonCore::ListAudit(const CallContext& c, const std::map<std::string, std::string>& query) {
  if (c.principal == nullptr) return Unauthenticated();
  if (c.principal->role != Role::kClusterAdmin && c.principal->role != Role::kTenantAdmin) {
    return Forbidden("read the audit log");
  }
  Result<PageQuery> page = DecodePageQuery(query, "audit");
  if (!page.ok()) return Err(page.error());
  // A tenant admin sees the entries of its tenant. Audit writes each entry as a compact dump,
  // so a line without `"tenant":"NAME"` is not one of them and is skipped unparsed; the
  // candidates are parsed and checked.
  const std::string tenant = c.principal->admin() ? "" : state_->tenant(c.principal->tenant).name;
  const std::string needle = "\"tenant\":" + Json(tenant).dump();
  // Entry n (from 1) is audit_[n - 1]; newest first, from the one before the cursor.
  uint64_t n = audit_.size();
  if (page->before) n = std::min<uint64_t>(n, *page->before - 1);
  Json items = Json::array();
  uint64_t last = 0;
  bool more = false;
  for (; n > 0; --n) {
    const std::string& line = audit_[n - 1];
    if (!c.principal->admin() && line.find(needle) == std::string::npos) continue;
    Json j = Json::parse(line, nullptr, false);
    if (j.is_discarded()) continue;
    if (!c.principal->admin() && j.value("tenant", "") != tenant) continue;
    if (page->limit && items.size() == static_cast<size_t>(*page->limit)) {
      more = true;
      break;
    }
    j["id"] = std::to_string(n);
    items.push_back(std::move(j));
    last = n;
  }
  return JsonReply(200, {{"items", items}, {"next_cursor", more ? Json(EncodeCursor("audit", last)) : Json(nullptr)}});
}

// Pending and active jobs per tenant, in one pass.
std::map<TenantId, std::pair<int, int>> DaemonCore::JobCounts(const State& s) {
  std::map<TenantId, std::pair<int, int>> out;
  for (JobId id : s.pending()) ++out[s.FindJob(id)->spec.tenant].first;
  for (JobId id : s.active()) ++out[s.FindJob(id)->spec.tenant].second;
  return out;
}

// --- reservations -----------------------------------------------------------------------


nlohmann::json DaemonCore::ReservationView(const Reservation& r) const {
  Json j = {{"id", std::to_string(r.id.value())},
            {"flavor", state_->catalogue().model(r.flavor).name},
            {"gpus", r.amount.ToGpus()},
            {"start", Rfc3339(r.start)},
            {"end", Rfc3339(r.end)},
            {"maintenance", r.maintenance},
            {"created", Rfc3339(r.created)}};
  if (r.tenant.valid()) j["tenant"] = state_->tenant(r.tenant).name;
  return j;
}

const Reservation* DaemonCore::VisibleReservation(const CallContext& c, const std::string& id) const {
  uint64_t n = 0;
  const auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), n);
  if (id.empty() || ec != std::errc() || end != id.data() + id.size()) return nullptr;
  const Reservation* r = state_->FindReservation(ReservationId(n));
  if (r == nullptr) return nullptr;
  if (!r->maintenance && !c.principal->Sees(r->tenant)) return nullptr;
  return r;
}

Reply DaemonCore::CreateReservation(const CallContext& c, const std::string& body) {
  if (c.principal == nullptr) return Unauthenticated();
  Result<ReservationRequest> req = DecodeReservationRequest(*state_, *c.principal, body);
  if (!req.ok()) return Err(req.error());
  if (req->maintenance && !c.principal->admin()) return Forbidden("book maintenance windows");
  if (!c.principal->Writes()) return Forbidden("reserve capacity");
  if (req->tenant.valid() && deleted_.count(req->tenant)) return Err(NotFound("unknown tenant"));
  Reservation r;
  r.id = state_->NextReservationId();
  r.tenant = req->tenant;
  r.flavor = req->flavor;
  r.amount = req->amount;
  r.start = req->start;
  r.end = req->end;
  r.maintenance = req->maintenance;
  r.created = c.now;
  // Check and book in one loop turn: nothing else runs between the calendar and the event.
  Calendar cal = BuildCalendar(*state_, r.flavor);
  if (Status booked = cal.Book(ToBooking(r)); !booked.ok()) return Err(booked.error());
  if (Status s = ApplyAndStage(ReservationCreated{r}); !s.ok()) return Err(s.error());
  Audit(c, r.maintenance ? "maintenance.create" : "reservation.create", std::to_string(r.id.value()));
  return JsonReply(201, ReservationView(r));
}

Reply DaemonCore::ListReservations(const CallContext& c) {
  if (c.principal == nullptr) return Unauthenticated();
  Json items = Json::array();
  for (const auto& [id, r] : state_->reservations()) {
    if (r.maintenance || c.principal->Sees(r.tenant)) items.push_back(ReservationView(r));
  }
  return JsonReply(200, {{"items", items}});
}

Reply DaemonCore::GetReservation(const CallContext& c, const std::string& id) {
  if (c.principal == nullptr) return Unauthenticated();
  const Reservation* r = VisibleReservation(c, id);
  if (r == nullptr) return Err(NotFound("no reservation '" + id + "'"));
  return JsonReply(200, ReservationView(*r));
}

Reply DaemonCore::CancelReservation(const CallContext& c, const std::string& id) {
  if (c.principal == nullptr) return Unauthenticated();
  const Reservation* r = VisibleReservation(c, id);
  if (r == nullptr) return Err(NotFound("no reservation '" + id + "'"));
  if (r->maintenance ? !c.principal->admin() : !c.principal->Writes()) return Forbidden("cancel this reservation");
  const ReservationId rid = r->id;
  const bool maintenance = r->maintenance;
  if (Status s = ApplyAndStage(ReservationCancelled{rid, c.now}); !s.ok()) return Err(s.error());
  Audit(c, maintenance ? "maintenance.cancel" : "reservation.cancel", id);
  return JsonReply(200, {{"id", id}, {"state", "cancelled"}});
}

Reply DaemonCore::Availability(const CallContext& c, const std::map<std::string, std::string>& query) {
  if (c.principal == nullptr) return Unauthenticated();
  Result<AvailabilityQuery> q = DecodeAvailabilityQuery(*state_, query);
  if (!q.ok()) return Err(q.error());
  const Calendar cal = BuildCalendar(*state_, q->flavor);
  Json out = {{"flavor", state_->catalogue().model(q->flavor).name}};
  if (q->earliest) {
    const Time after = std::max(q->after.value_or(c.now), c.now);
    const Time horizon = Time::FromMillis(after.millis() + Duration::Hours(24 * 366).millis());
    Result<std::optional<Time>> start = cal.EarliestStart(q->amount, q->duration, after, horizon);
    if (!start.ok()) return Err(start.error());
    out["gpus"] = q->amount.units() / GpuEq::kUnitsPerGpu;
    out["duration_s"] = q->duration.seconds();
    out["earliest_start"] = start->has_value() ? Json(Rfc3339(**start)) : Json(nullptr);
    return JsonReply(200, out);
  }
  Result<GpuEq> free = cal.Reservable(q->start, q->end);
  if (!free.ok()) return Err(free.error());
  out["start"] = Rfc3339(q->start);
  out["end"] = Rfc3339(q->end);
  out["reservable_gpus"] = free->units() / GpuEq::kUnitsPerGpu;  // whole GPUs only
  return JsonReply(200, out);
}

Reply DaemonCore::CalendarView(const CallContext& c, const std::map<std::string, std::string>& query) {
  if (c.principal == nullptr) return Unauthenticated();
  Result<CalendarQuery> q = DecodeCalendarQuery(*state_, query);
  if (!q.ok()) return Err(q.error());
  Result<std::vector<Calendar::Bucket>> buckets = BuildCalendar(*state_, q->flavor).Buckets(q->start, q->end, q->step);
  if (!buckets.ok()) return Err(buckets.error());
  Json items = Json::array();
  for (const Calendar::Bucket& k : *buckets) {
    items.push_back({{"start", Rfc3339(k.start)},
                     {"end", Rfc3339(k.end)},
                     {"capacity", k.capacity.ToGpus()},
                     {"guaranteed", k.guaranteed.ToGpus()},
                     {"reserved", k.reserved.ToGpus()},
                     {"maintenance", k.maintenance.ToGpus()},
                     {"free", k.free.ToGpus()}});
  }
  return JsonReply(200, {{"flavor", state_->catalogue().model(q->flavor).name}, {"step_s", q->step.seconds()}, {"items", items}});
}

Reply DaemonCore::Summary(const CallContext& c) {
  if (c.principal == nullptr) return Unauthenticated();
  int pending = 0, running = 0;
  for (JobId id : state_->pending()) pending += c.principal->Sees(state_->FindJob(id)->spec.tenant);
  for (JobId id : state_->active()) running += c.principal->Sees(state_->FindJob(id)->spec.tenant);
  int nodes = 0, gpus = 0;  // retired on-demand nodes are gone
  for (const Node& n : state_->nodes()) {
    if (n.condition == NodeCondition::kRetired) continue;
    ++nodes;
    gpus += static_cast<int>(n.gpus.size());
  }
  // Who the caller is, so a client (the console) can pick its views without a second call.
  Json me = {{"name", c.principal->name}, {"role", std::string(RoleName(c.principal->role))}};
  me["tenant"] = c.principal->tenant.valid() ? Json(state_->tenant(c.principal->tenant).name) : Json(nullptr);
  return JsonReply(200, {{"nodes", nodes}, {"gpus", gpus},
                         {"pending_jobs", pending}, {"active_jobs", running},
                         {"scheduling_cycles", cycles_}, {"me", me}});
}

void DaemonCore::Tick(Time now, bool simulate_executor) {
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
    for (const Event& e : PlanToEvents(last_plan_, now)) GP_CHECK(ApplyAndStage(e).ok());
    RecordReasons(*state_, last_plan_);
  }
  if (provider_) BurstTick(now);
  if (!agents_.empty()) CheckHeartbeats(now);
}

}  // namespace gpupool
