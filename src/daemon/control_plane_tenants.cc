// ControlPlane's tenant and priority-class routes, and the guarantee check.
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

Reply ControlPlane::ListTenants(const CallContext& c) {
  if (c.principal == nullptr) return Unauthenticated();
  Json items = Json::array();
  const QuotaBook book(state(), c.now);  // one book and one pass over the jobs for the whole list
  const auto counts = JobCounts(state());
  const std::vector<GuaranteeCheck> over = GuaranteeOvercommits(state(), c.now);
  for (const Tenant& t : state().tenants()) {
    if (c.principal->Sees(t.id) && !js_->deleted().count(t.id)) items.push_back(TenantView(t, book, counts, over));
  }
  return JsonReply(200, {{"items", items}});
}

const Tenant* ControlPlane::VisibleTenant(const CallContext& c, const std::string& name) const {
  Result<TenantId> t = state().FindTenant(name);
  if (!t.ok() || js_->deleted().count(*t) || !c.principal->Sees(*t)) return nullptr;
  return &state().tenant(*t);
}

Json ControlPlane::TenantView(const Tenant& t, Time now) const {
  return TenantView(t, QuotaBook(state(), now), JobCounts(state()), GuaranteeOvercommits(state(), now));
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

Status ControlPlane::CheckGuarantees(const CallContext& c, const Tenant& t, bool allow_overcommit) {
  const std::vector<GuaranteeCheck> over = GuaranteeOverruns(state(), t, c.now);
  if (over.empty()) return Ok();
  std::string text;
  for (const GuaranteeCheck& g : over) text += (text.empty() ? "" : "; ") + OverrunText(state(), g, true);
  if (!allow_overcommit) {
    return Error{ErrorCode::kConflict, text + "; to promise more than the pool holds, send \"allow_overcommit\": true"};
  }
  Audit(c, "tenant.overcommit", t.name + ": " + text);
  Log("warn", "guarantees above capacity, allowed by the request", {{"tenant", t.name}, {"detail", text}});
  return Ok();
}

Json ControlPlane::TenantView(const Tenant& t, const QuotaBook& book,
                            const std::map<TenantId, std::pair<int, int>>& counts,
                            const std::vector<GuaranteeCheck>& overcommits) const {
  const Catalogue& cat = state().catalogue();
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
    if (const FlavorQuota* q = t.quota(g.flavor); q && q->guaranteed > GpuEq()) over.push_back(OverrunText(state(), g, false));
  }
  Json out = {{"name", t.name},
              {"weight", t.weight_milli / 1000.0},
              {"quotas", quotas},
              {"limits", limits},
              {"allow_gpu_cotenancy", t.allow_gpu_cotenancy},
              {"required_labels", t.required_labels},
              {"allowed_labels", t.allowed_labels},
              {"queue_policy", std::string(QueueOrderName(OrderOf(config_.queue, t)))},
              {"queue_policy_source", t.queue_policy ? "tenant" : "scheduler"},
              {"usage", usage},
              {"pending_jobs", pending},
              {"active_jobs", active}};
  if (!over.empty()) out["overcommitted"] = over;
  return out;
}

Status ControlPlane::StageTenant(const Tenant& t) {
  return Commit(TenantPut{t});
}

Reply ControlPlane::GetTenant(const CallContext& c, const std::string& name) {
  if (c.principal == nullptr) return Unauthenticated();
  const Tenant* t = VisibleTenant(c, name);
  if (t == nullptr) return Err(NotFound("no tenant '" + name + "'"));
  return JsonReply(200, TenantView(*t, c.now));
}

Reply ControlPlane::CreateTenant(const CallContext& c, const std::string& body) {
  if (c.principal == nullptr) return Unauthenticated();
  if (!c.principal->admin()) return Forbidden("create tenants");
  bool allow_overcommit = false;
  Result<Tenant> t = DecodeTenantRequest(state(), body, nullptr, &allow_overcommit);
  if (!t.ok()) return Err(t.error());
  Result<TenantId> existing = state().FindTenant(t->name);
  if (existing.ok() && !js_->deleted().count(*existing)) {
    return Err({ErrorCode::kAlreadyExists, "tenant '" + t->name + "' exists"});
  }
  if (existing.ok()) t->id = *existing;
  if (Status s = CheckGuarantees(c, *t, allow_overcommit); !s.ok()) return Err(s.error());
  if (Status s = StageTenant(*t); !s.ok()) return Err(s.error());
  Audit(c, "tenant.create", t->name);
  return JsonReply(201, TenantView(state().tenant(*state().FindTenant(t->name)), c.now));
}

Reply ControlPlane::UpdateTenant(const CallContext& c, const std::string& name, const std::string& body) {
  if (c.principal == nullptr) return Unauthenticated();
  const Tenant* t = VisibleTenant(c, name);
  if (t == nullptr) return Err(NotFound("no tenant '" + name + "'"));
  if (!c.principal->admin()) return Forbidden("change tenants");
  bool allow_overcommit = false;
  Result<Tenant> updated = DecodeTenantRequest(state(), body, t, &allow_overcommit);
  if (!updated.ok()) return Err(updated.error());
  if (Status s = CheckGuarantees(c, *updated, allow_overcommit); !s.ok()) return Err(s.error());
  if (Status s = StageTenant(*updated); !s.ok()) return Err(s.error());
  Audit(c, "tenant.update", name);
  return JsonReply(200, TenantView(state().tenant(updated->id), c.now));
}

Reply ControlPlane::DeleteTenant(const CallContext& c, const std::string& name) {
  if (c.principal == nullptr) return Unauthenticated();
  const Tenant* t = VisibleTenant(c, name);
  if (t == nullptr) return Err(NotFound("no tenant '" + name + "'"));
  if (!c.principal->admin()) return Forbidden("delete tenants");
  for (const auto* ids : {&state().pending(), &state().active()}) {
    for (JobId id : *ids) {
      if (state().FindJob(id)->spec.tenant == t->id) {
        return Err(FailedPrecondition("tenant '" + name + "' has pending or active jobs; cancel them first"));
      }
    }
  }
  // Its reservations would go on counting as guarantee: they are cancelled first, by the caller.
  for (const auto& [rid, res] : state().reservations()) {
    if (res.tenant == t->id && c.now < res.end) {
      return Err(FailedPrecondition("tenant '" + name + "' holds reservation " + std::to_string(rid.value()) +
                                    " (until " + Rfc3339(res.end) + "); cancel it first"));
    }
  }
  // A tombstone: the id stays (jobs and the ledger refer to it); no quota, no tokens, hidden.
  if (Status s = Commit(TenantDeleted{t->id}); !s.ok()) return Err(s.error());
  Audit(c, "tenant.delete", name);
  return JsonReply(200, {{"name", name}, {"deleted", true}});
}

Reply ControlPlane::ListPriorityClasses(const CallContext& c) {
  if (c.principal == nullptr) return Unauthenticated();
  Json items = Json::array();
  for (const PriorityClass& pc : state().priority_classes()) {
    Json item = {{"name", pc.name}, {"value", pc.value}, {"preemptible", pc.preemptible},
                 {"may_borrow", pc.may_borrow}, {"grace_period_s", pc.grace_period.seconds()},
                 {"default", pc.is_default}};
    // The minimum runtime before preemption: the class's own, or the scheduler's.
    item["min_runtime_s"] = pc.min_runtime.value_or(config_.preemption.min_runtime).seconds();
    items.push_back(std::move(item));
  }
  return JsonReply(200, {{"items", items}});
}

Reply ControlPlane::CreatePriorityClass(const CallContext& c, const std::string& body) {
  if (c.principal == nullptr) return Unauthenticated();
  if (!c.principal->admin()) return Forbidden("create priority classes");
  Result<PriorityClass> pc = DecodePriorityClassRequest(body);
  if (!pc.ok()) return Err(pc.error());
  if (state().FindPriorityClass(pc->name).ok()) {
    return Err({ErrorCode::kAlreadyExists, "priority class '" + pc->name + "' exists"});
  }
  if (Status s = Commit(PriorityClassAdded{*pc}); !s.ok()) return Err(s.error());
  Audit(c, "priority_class.create", pc->name);
  return JsonReply(201, {{"name", pc->name}, {"value", pc->value}});
}

}  // namespace gpupool
