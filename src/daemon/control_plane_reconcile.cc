// ControlPlane's chargeback reconciled with an executor's accounting (reconcile.h;
// docs/design/executors.md, "Accounting"): GET /v1/usage/reconcile, for cluster admins. The
// executor reads its backend's accounting on its own thread (Slurm: sacct, every
// accounting_poll_s); this compares the last read with the ledger, so nothing here waits on it.
#include <nlohmann/json.hpp>

#include "api/decode.h"
#include "daemon/control_plane.h"
#include "daemon/reconcile.h"
#include "daemon/reply.h"
#include "policy/calendar/calendar.h"

namespace gpupool {

using namespace reply;
using Json = nlohmann::json;

namespace {

Json Epoch(int64_t s) { return s == 0 ? Json(nullptr) : Json(Rfc3339(Time::FromSeconds(s))); }

Json RunJson(const executor::AccountedRun& r) {
  Json j = {{"id", r.backend_id}, {"account", r.account}, {"state", r.state},
            {"submit", Epoch(r.submit_s)}, {"start", Epoch(r.start_s)}, {"end", Epoch(r.end_s)},
            {"gpus", r.gpus}};
  if (r.start_s != 0 && r.end_s != 0) j["run_s"] = r.end_s - r.start_s;
  if (r.submit_s != 0 && r.end_s != 0) j["held_s"] = r.end_s - r.submit_s;
  return j;
}

}  // namespace

Reply ControlPlane::ReconcileUsage(const CallContext& c, const std::map<std::string, std::string>& query) {
  if (c.principal == nullptr) return Unauthenticated();
  if (!c.principal->admin()) return Forbidden("reconcile usage with an executor's accounting");
  for (const auto& [key, _] : query) {
    if (key != "executor" && key != "from" && key != "to" && key != "tolerance_s") {
      return Err(InvalidArgument("unknown parameter '" + key + "' (known: executor, from, to, tolerance_s)"));
    }
  }
  const ExecutorSlot* slot = nullptr;
  std::string names;
  for (const ExecutorSlot& s : executors_) names += (names.empty() ? "" : ", ") + s.executor->name();
  auto e = query.find("executor");
  if (e == query.end()) {
    if (executors_.size() != 1) {
      return Err(InvalidArgument(executors_.empty() ? "no executor is configured: nothing to reconcile with"
                                                    : "which executor: executor=NAME (" + names + ")"));
    }
    slot = &executors_.front();
  } else {
    for (const ExecutorSlot& s : executors_) {
      if (s.executor->name() == e->second) slot = &s;
    }
    if (slot == nullptr) {
      return Err(NotFound("no executor '" + e->second + "'" + (names.empty() ? "" : " (configured: " + names + ")")));
    }
  }
  const executor::Accounting acct = slot->executor->Accounted();
  if (acct.read_ms == 0) {
    return Err({ErrorCode::kFailedPrecondition,
                "executor " + slot->executor->name() + " has no accounting to compare with" +
                    (acct.error.empty() ? " (set its 'sacct', or wait for the first read)" : ": " + acct.error)});
  }
  ReconcileQuery q;
  q.now = c.now;
  q.accounting_read = Time::FromMillis(acct.read_ms);
  q.account_is_tenant = acct.account_is_tenant;
  q.from = Time::FromSeconds(acct.from_s);
  q.to = c.now;
  for (auto [key, field] : {std::pair{"from", &q.from}, std::pair{"to", &q.to}}) {
    if (auto it = query.find(key); it != query.end()) {
      Result<Time> t = ParseRfc3339(it->second);
      if (!t.ok()) return Err(InvalidArgument(std::string("'") + key + "': " + t.error().message));
      *field = *t;
    }
  }
  if (!(q.from < q.to)) return Err(InvalidArgument("'from' must be before 'to'"));
  if (q.from < Time::FromSeconds(acct.from_s)) {
    return Err(InvalidArgument("'from' is before " + Rfc3339(Time::FromSeconds(acct.from_s)) +
                               ", the start of the accounting the executor reads (accounting_window_days)"));
  }
  if (auto it = query.find("tolerance_s"); it != query.end()) {
    char* end = nullptr;
    const long long v = std::strtoll(it->second.c_str(), &end, 10);
    if (it->second.empty() || *end != '\0' || v < 0 || v > 86'400) {
      return Err(InvalidArgument("'tolerance_s' must be a whole number of seconds from 0 to 86400"));
    }
    q.tolerance = Duration::Seconds(v);
  }
  std::vector<UsageInterval> intervals = ledger().Snapshot(c.now);
  Result<std::vector<UsageInterval>> archived = ArchivedUsage(q.from, c.now);
  if (!archived.ok()) return Err(archived.error());
  intervals.insert(intervals.end(), archived->begin(), archived->end());
  std::vector<std::string> tenant_names;
  for (const Tenant& t : state().tenants()) tenant_names.push_back(t.name);
  std::set<uint64_t> jobs;
  for (const auto& [j, _] : slot->handed) jobs.insert(j.value());
  const std::vector<ReconcileLine> lines = Reconcile(intervals, acct.runs, jobs, tenant_names, q);

  Json items = Json::array();
  std::map<std::string, int> counts = {{"match", 0}, {"mismatch", 0}, {"missing_in_backend", 0},
                                       {"missing_in_ledger", 0}, {"pending", 0}};
  for (const ReconcileLine& l : lines) {
    const std::string status(ReconcileStatusName(l.status));
    ++counts[status];
    Json item = {{"job", std::to_string(l.job)}, {"status", status}, {"problems", l.problems}};
    if (l.ledger) {
      item["tenant"] = l.tenant.value() < tenant_names.size() ? tenant_names[l.tenant.value()] : "";
      item["ledger"] = {{"start", Rfc3339(l.ledger->start)},
                        {"end", l.ledger->open ? Json(nullptr) : Json(Rfc3339(l.ledger->end))},
                        {"gpus", l.ledger->gpus},
                        {"charged_s", static_cast<double>((l.ledger->end - l.ledger->start).millis()) / 1000.0}};
    }
    Json runs = Json::array();
    for (const executor::AccountedRun& r : l.runs) runs.push_back(RunJson(r));
    item["backend"] = std::move(runs);
    items.push_back(std::move(item));
  }
  Json summary = Json::object();
  for (const auto& [k, v] : counts) summary[k] = v;
  Json body = {{"executor", slot->executor->name()},
               {"from", Rfc3339(q.from)},
               {"to", Rfc3339(q.to)},
               {"tolerance_s", q.tolerance.millis() / 1000},
               {"accounting_read_at", Rfc3339(q.accounting_read)},
               {"summary", summary},
               {"items", items}};
  if (!acct.error.empty()) body["accounting_error"] = acct.error;
  return JsonReply(200, body);
}

}  // namespace gpupool
