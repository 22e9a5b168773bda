#include "daemon/job_history.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "policy/calendar/calendar.h"

namespace gpupool {

using Json = nlohmann::json;

std::string_view HistoryTypeName(HistoryType t, JobState outcome) {
  switch (t) {
    case HistoryType::kSubmitted: return "submitted";
    case HistoryType::kAdmitted: return "admitted";
    case HistoryType::kStarted: return "started";
    case HistoryType::kPreempted: return "preempted";
    case HistoryType::kRequeued: return "requeued";
    case HistoryType::kFinished: return JobStateName(outcome);
  }
  return "?";
}

void JobHistory::Add(JobId job, HistoryEntry e) {
  Log& log = jobs_[job];
  if (log.entries.size() == kMaxEntries) {
    log.entries.erase(log.entries.begin() + static_cast<long>(kKeepFirst));
    ++log.dropped;
  }
  log.entries.push_back(std::move(e));
}

void JobHistory::Observe(const State& after, const Event& ev) {
  HistoryEntry e;
  JobId job;
  if (const auto* s = std::get_if<JobSubmitted>(&ev)) {
    job = s->id;
    e = {.at = s->at, .type = HistoryType::kSubmitted};
  } else if (const auto* a = std::get_if<JobAdmitted>(&ev)) {
    job = a->id;
    e = {.at = a->at, .type = HistoryType::kAdmitted, .admitted_as = a->kind};
    for (const ReplicaPlacement& rp : a->placement) {
      if (std::find(e.nodes.begin(), e.nodes.end(), rp.node) == e.nodes.end()) e.nodes.push_back(rp.node);
    }
  } else if (const auto* st = std::get_if<JobStarted>(&ev)) {
    job = st->id;
    e = {.at = st->at, .type = HistoryType::kStarted};
  } else if (const auto* p = std::get_if<JobPreempted>(&ev)) {
    job = p->id;
    const Job* by = after.FindJob(p->by);
    e = {.at = p->at, .type = HistoryType::kPreempted, .by = p->by,
         .by_tenant = by ? by->spec.tenant : TenantId(), .preempt_kind = p->kind};
  } else if (const auto* l = std::get_if<JobLost>(&ev)) {
    job = l->id;
    e = {.at = l->at, .type = HistoryType::kRequeued, .cause = l->cause, .detail = l->detail};
  } else if (const auto* f = std::get_if<JobFinished>(&ev)) {
    job = f->id;
    e = {.at = f->at, .type = HistoryType::kFinished, .outcome = f->outcome, .detail = f->detail};
  } else {
    return;  // not a job's event
  }
  Add(job, std::move(e));
}

const std::vector<HistoryEntry>& JobHistory::Of(JobId job) const {
  static const std::vector<HistoryEntry> kNone;
  auto it = jobs_.find(job);
  return it == jobs_.end() ? kNone : it->second.entries;
}

uint64_t JobHistory::dropped(JobId job) const {
  auto it = jobs_.find(job);
  return it == jobs_.end() ? 0 : it->second.dropped;
}

std::optional<HistoryEntry> JobHistory::LastSetback(JobId job) const {
  const std::vector<HistoryEntry>& entries = Of(job);
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    if (it->type == HistoryType::kAdmitted) return std::nullopt;
    if (it->type == HistoryType::kPreempted || it->type == HistoryType::kRequeued) return *it;
  }
  return std::nullopt;
}

std::string JobHistory::Message(const State& state, const Principal& caller, const HistoryEntry& e) {
  switch (e.type) {
    case HistoryType::kSubmitted: return "submitted";
    case HistoryType::kAdmitted: {
      std::string on;
      for (NodeId n : e.nodes) on += (on.empty() ? "" : ", ") + state.node(n).name;
      return "admitted as " + std::string(AdmissionKindName(e.admitted_as)) + " on " + on;
    }
    case HistoryType::kStarted: return "started";
    case HistoryType::kPreempted: {
      const bool sees = e.by_tenant.valid() && caller.Sees(e.by_tenant);
      const std::string tenant = e.by_tenant.valid() ? state.tenant(e.by_tenant).name : "?";
      if (e.preempt_kind == PreemptKind::kQueue) {
        return "preempted by job " + std::to_string(e.by.value()) +
               " of the same tenant and priority (queue: its queue policy runs shorter or less-served work first; "
               "this job keeps the service it attained)";
      }
      if (e.preempt_kind == PreemptKind::kPriority) {
        // Priority preemption stays inside one tenant: the caller who sees this job sees it.
        return "preempted by job " + std::to_string(e.by.value()) +
               " of higher priority (priority: the same tenant's more important work needed the room)";
      }
      if (!sees) return "preempted by a job of another tenant (reclaim: that tenant took back its guarantee)";
      return "preempted by job " + std::to_string(e.by.value()) + " of tenant " + tenant + " (reclaim: tenant " +
             tenant + " took back its guarantee)";
    }
    case HistoryType::kRequeued:
      return "requeued (" + std::string(RequeueCauseName(e.cause)) + ")" + (e.detail.empty() ? "" : ": " + e.detail);
    case HistoryType::kFinished:
      // "cancelled by alice", "failed: replica 1 on n-2 exited with code 3"
      if (e.detail.empty()) return std::string(JobStateName(e.outcome));
      return std::string(JobStateName(e.outcome)) + (e.detail.rfind("by ", 0) == 0 ? " " : ": ") + e.detail;
  }
  return "?";
}

Json JobHistory::View(const State& state, const Principal& caller, JobId job) const {
  Json out = Json::array();
  const std::vector<HistoryEntry>& entries = Of(job);
  for (size_t i = 0; i < entries.size(); ++i) {
    const HistoryEntry& e = entries[i];
    if (i == kKeepFirst && dropped(job) > 0) {
      out.push_back({{"at", Rfc3339(e.at)}, {"type", "dropped"},
                     {"message", std::to_string(dropped(job)) + " earlier events not kept"}});
    }
    Json j = {{"at", Rfc3339(e.at)},
              {"type", std::string(HistoryTypeName(e.type, e.outcome))},
              {"message", Message(state, caller, e)}};
    if (e.type == HistoryType::kAdmitted) {
      Json nodes = Json::array();
      for (NodeId n : e.nodes) nodes.push_back(state.node(n).name);
      j["nodes"] = nodes;
    }
    if (e.type == HistoryType::kPreempted) {
      j["reason"] = std::string(PreemptKindName(e.preempt_kind));
      const bool sees = e.by_tenant.valid() && caller.Sees(e.by_tenant);
      j["by"] = sees ? Json({{"job", std::to_string(e.by.value())}, {"tenant", state.tenant(e.by_tenant).name}})
                     : Json(nullptr);
    }
    if (e.type == HistoryType::kRequeued) j["reason"] = std::string(RequeueCauseName(e.cause));
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace gpupool
