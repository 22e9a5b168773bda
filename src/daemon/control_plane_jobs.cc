// ControlPlane's job routes: submit, get, list, cancel; the job as the API shows it.
#include "daemon/control_plane.h"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

#include "api/decode.h"
#include "api/page.h"
#include "daemon/log.h"
#include "daemon/reply.h"
#include "policy/calendar/calendars.h"
#include "policy/priority/queue_policy.h"
#include "policy/quota/quota.h"
#include "scheduler/schedule.h"
#include "store/codec.h"

namespace gpupool {
namespace {

using namespace reply;

std::optional<JobState> ParseJobState(const std::string& name) {
  for (JobState s : {JobState::kPending, JobState::kAdmitted, JobState::kRunning, JobState::kSucceeded,
                     JobState::kFailed, JobState::kCancelled}) {
    if (JobStateName(s) == name) return s;
  }
  return std::nullopt;
}

// The job as the API shows it to `caller`; with its events (GET /v1/jobs/{id}) or without (lists).
Json JobJson(const State& s, const JobHistory& history, const Principal& caller, const Job& j, bool events,
             Time now) {
  const ReplicaShape& sh = j.spec.shape;
  const GpuModel& m = s.catalogue().model(sh.flavor);
  Json res = {{"flavor", m.name}};
  if (!j.spec.flavors.empty()) {
    Json list = Json::array();
    for (FlavorId f : j.spec.flavors) list.push_back(s.catalogue().model(f).name);
    res["flavors"] = list;
  }
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
  if (j.state == JobState::kPending || j.state == JobState::kRunning) {
    // What queue policies order by (policy/priority/queue_policy.h): GPUs x time run over
    // every attempt, and GPUs x (estimate - time run) while there is an estimate.
    Json service = {{"attained_gpu_s", std::llround(AttainedGpuSeconds(j, s.catalogue(), now))},
                    {"ran_s", (j.ran + (j.state == JobState::kRunning && now > j.started ? now - j.started
                                                                                          : Duration())).seconds()}};
    if (!j.spec.estimated_duration.is_infinite()) {
      service["remaining_gpu_s"] = std::llround(RemainingGpuSeconds(j, s.catalogue(), now));
    }
    out["service"] = std::move(service);
  }
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

Reply ControlPlane::SubmitJob(const CallContext& c, const std::string& body, const std::string& key) {
  if (c.principal == nullptr) return Unauthenticated();
  if (key.size() > 128) return Err(InvalidArgument("Idempotency-Key is longer than 128 characters"));
  if (!ValidUtf8(key)) return Err(InvalidArgument("Idempotency-Key is not valid UTF-8"));
  // Keys are scoped to the token (as payment APIs scope them to the API key).
  const std::string idem = key.empty() ? "" : c.principal->token_id + "\n" + key;
  js_->ExpireIdempotency(c.now);
  // The day is checked at lookup too: with a clock that stepped back, the queue may hold an
  // entry past its day behind a younger one.
  if (std::optional<JobId> id = idem.empty() ? std::nullopt : js_->IdempotentJob(idem, c.now)) {
    std::string shown = "succeeded";
    if (const Job* j = state().FindJob(*id)) {
      shown = JobStateName(j->state);
    } else if (Result<std::optional<Json>> archived = ArchivedJobView(c, id->value(), false); !archived.ok()) {
      return Err(archived.error());
    } else if (*archived) {
      shown = (*archived)->value("state", shown);  // finished, and out of memory since
    }
    return JsonReply(201, {{"id", std::to_string(id->value())}, {"state", shown}, {"replayed", true}});
  }
  Result<JobSpec> spec = DecodeJobRequest(state(), *c.principal, body);
  if (!spec.ok()) return Err(spec.error());
  if (!c.principal->WritesIn(spec->tenant)) return Forbidden("submit jobs in tenant " + state().tenant(spec->tenant).name);
  if (js_->deleted().count(spec->tenant)) return Err(NotFound("unknown tenant"));
  if (const uint32_t most = state().tenant(spec->tenant).limits.max_pending_jobs;
      most > 0 && state().pending_jobs(spec->tenant) >= most) {
    // 429, as for any rate the caller must slow down to (the body says which limit).
    return Reply{429, ErrorBody(Error{ErrorCode::kResourceExhausted,
                                      "tenant " + state().tenant(spec->tenant).name + " has " + std::to_string(most) +
                                          " jobs pending, its maximum (limits.max_pending_jobs): wait for some to "
                                          "start or cancel some"})};
  }
  if (spec->reservation.valid()) {
    const Reservation& r = *state().FindReservation(spec->reservation);  // ValidateSpec checked
    if (r.end <= c.now) {
      return Err(FailedPrecondition("reservation " + std::to_string(r.id.value()) + " ended at " +
                                    Rfc3339(r.end)));
    }
  }
  const JobSubmitted e{state().NextJobId(), *spec, c.now};
  if (Status s = ApplyAndStage(e, idem); !s.ok()) return Err(s.error());
  Audit(c, "job.submit", std::to_string(e.id.value()));
  return JsonReply(201, {{"id", std::to_string(e.id.value())}, {"state", "pending"}});
}

const Job* ControlPlane::VisibleJob(const CallContext& c, const std::string& id) const {
  Result<uint64_t> n = ParseId(id);
  if (!n.ok()) return nullptr;
  const Job* j = state().FindJob(JobId(*n));
  if (j == nullptr || !c.principal->Sees(j->spec.tenant)) return nullptr;
  return j;
}

Json ControlPlane::JobView(const Principal& caller, const Job& j, bool events, Time now) const {
  return JobJson(state(), history(), caller, j, events, now);
}

Reply ControlPlane::GetJob(const CallContext& c, const std::string& id) {
  if (c.principal == nullptr) return Unauthenticated();
  const Job* j = VisibleJob(c, id);
  if (j != nullptr) {
    Json view = JobJson(state(), history(), *c.principal, *j, true, c.now);
    if (std::optional<std::string> why = StartHeldReason(*j, c.now)) view["start_held"] = *why;
    return JsonReply(200, view);
  }
  // Out of memory: a finished job past the retention window, from the store's history.
  if (Result<uint64_t> n = ParseId(id); n.ok()) {
    Result<std::optional<Json>> archived = ArchivedJobView(c, *n, true);
    if (!archived.ok()) return Err(archived.error());
    if (*archived) return JsonReply(200, **archived);
  }
  return Err(NotFound("no job '" + id + "'"));
}

Reply ControlPlane::ListJobs(const CallContext& c, const std::map<std::string, std::string>& query) {
  if (c.principal == nullptr) return Unauthenticated();
  Result<PageQuery> page = DecodePageQuery(query, "jobs", {"tenant", "state"});
  if (!page.ok()) return Err(page.error());
  const auto param = [&query](const char* key) {
    const auto it = query.find(key);
    return it == query.end() ? std::string() : it->second;
  };
  const std::string tenant = param("tenant"), st = param("state");
  if (!st.empty() && !ParseJobState(st)) {
    return Err(InvalidArgument("unknown state '" + st + "': pending, admitted, running, succeeded, failed or cancelled"));
  }
  TenantId filter;
  if (!tenant.empty()) {
    Result<TenantId> t = state().FindTenant(tenant);
    if (!t.ok() || !c.principal->Sees(*t)) return Err(NotFound("unknown tenant '" + tenant + "'"));
    filter = *t;
  }
  // Newest first, merging memory and the store's history (finished jobs past the retention
  // window) by id. Ids only grow, so the jobs older than the cursor are the map's entries before
  // it: walk back from there until the page is full and one more match shows there is a next.
  const std::map<JobId, Job>& jobs = state().jobs();
  auto it = page->before ? jobs.lower_bound(JobId(*page->before)) : jobs.end();
  const auto next_in_memory = [&]() -> const Job* {
    while (it != jobs.begin()) {
      const Job& j = (--it)->second;
      if (!c.principal->Sees(j.spec.tenant)) continue;
      if (filter.valid() && j.spec.tenant != filter) continue;
      if (!st.empty() && JobStateName(j.state) != st) continue;
      return &j;
    }
    return nullptr;
  };
  std::vector<std::pair<int64_t, std::string>> archived;
  if (st.empty() || IsTerminal(*ParseJobState(st))) {
    ArchiveQuery q{static_cast<int64_t>(page->before.value_or(0)), tenant, st, page->limit ? *page->limit + 1 : 0};
    if (!c.principal->admin() && tenant.empty()) q.tenant = state().tenant(c.principal->tenant).name;
    Result<std::vector<std::pair<int64_t, std::string>>> read = journal_->ArchivedJobs(q);
    if (!read.ok()) return Err(read.error());
    archived = std::move(read).value();
  }
  size_t ai = 0;
  const Job* mem = next_in_memory();
  Json items = Json::array();
  uint64_t last = 0;  // the last job returned: the cursor names only what the caller was shown
  bool more = false;
  while (mem != nullptr || ai < archived.size()) {
    if (page->limit && items.size() == static_cast<size_t>(*page->limit)) {
      more = true;
      break;
    }
    if (mem != nullptr && (ai == archived.size() || mem->id.value() > static_cast<uint64_t>(archived[ai].first))) {
      items.push_back(JobJson(state(), history(), *c.principal, *mem, false, c.now));
      last = mem->id.value();
      mem = next_in_memory();
      continue;
    }
    Json row = Json::parse(archived[ai].second, nullptr, false);
    last = static_cast<uint64_t>(archived[ai].first);
    ++ai;
    if (!row.is_discarded()) items.push_back(std::move(row["view"]));
  }
  return JsonReply(200, {{"items", items}, {"next_cursor", more ? Json(EncodeCursor("jobs", last)) : Json(nullptr)}});
}

Reply ControlPlane::CancelJob(const CallContext& c, const std::string& id) {
  if (c.principal == nullptr) return Unauthenticated();
  const Job* j = VisibleJob(c, id);
  if (j == nullptr) return Err(NotFound("no job '" + id + "'"));
  if (!c.principal->WritesIn(j->spec.tenant)) return Forbidden("cancel jobs of tenant " + state().tenant(j->spec.tenant).name);
  if (IsTerminal(j->state)) return Err(FailedPrecondition("job already " + std::string(JobStateName(j->state))));
  if (Status s = ApplyAndStage(JobFinished{j->id, JobState::kCancelled, c.now, "by " + c.principal->name}); !s.ok()) {
    return Err(s.error());
  }
  Audit(c, "job.cancel", id);
  return JsonReply(200, {{"id", id}, {"state", "cancelled"}});
}

}  // namespace gpupool
