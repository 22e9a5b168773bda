// Chargeback reconciled with an executor's accounting (reconcile.h).
#include "daemon/reconcile.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "policy/calendar/calendar.h"

namespace gpupool {

namespace {

struct Span {
  Time start, end;
};

// A backend job's life, [submit, end]. Accounting keeps whole seconds, so a life is taken to
// reach the end of its last second.
Span Life(const executor::AccountedRun& r, Time now) {
  const Time start = Time::FromSeconds(r.submit_s != 0 ? r.submit_s : r.start_s);
  return {start, r.end_s != 0 ? Time::FromSeconds(r.end_s + 1) : std::max(now, start)};
}

int64_t OverlapMs(Span a, Span b) { return (std::min(a.end, b.end) - std::max(a.start, b.start)).millis(); }

// Whether a span falls in the window: it overlaps it, or it is an instant within it (a stint or
// a job that began and ended within one millisecond, a job submitted just now).
bool InWindow(Span s, Span window) {
  return OverlapMs(s, window) > 0 || (s.start >= window.start && s.start < window.end);
}

std::string Seconds(Duration d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f s", static_cast<double>(d.millis()) / 1000.0);
  return buf;
}

}  // namespace

std::string_view ReconcileStatusName(ReconcileStatus s) {
  switch (s) {
    case ReconcileStatus::kMatch: return "match";
    case ReconcileStatus::kMismatch: return "mismatch";
    case ReconcileStatus::kMissingBackend: return "missing_in_backend";
    case ReconcileStatus::kMissingLedger: return "missing_in_ledger";
    case ReconcileStatus::kPending: return "pending";
  }
  return "?";
}

std::vector<ReconcileLine> Reconcile(const std::vector<UsageInterval>& intervals,
                                     const std::vector<executor::AccountedRun>& runs, const std::set<uint64_t>& jobs,
                                     const std::vector<std::string>& tenant_names, const ReconcileQuery& q) {
  const Span window{q.from, q.to};
  // The jobs in question: those handed to the executor, and those its accounting names.
  std::map<uint64_t, std::vector<const UsageInterval*>> by_job;
  std::map<uint64_t, std::vector<const executor::AccountedRun*>> runs_of;
  for (const executor::AccountedRun& r : runs) {
    if (InWindow(Life(r, q.now), window)) runs_of[r.job].push_back(&r);
  }
  for (const UsageInterval& u : intervals) {
    if (jobs.count(u.job.value()) || runs_of.count(u.job.value())) by_job[u.job.value()].push_back(&u);
  }
  for (const auto& [job, _] : runs_of) by_job.try_emplace(job);

  std::vector<ReconcileLine> lines;
  for (auto& [job, ivs] : by_job) {
    std::sort(ivs.begin(), ivs.end(), [](const UsageInterval* a, const UsageInterval* b) { return a->start < b->start; });
    // Stints: contiguous intervals merged (a job's charge may change kind while it holds its GPUs).
    struct Stint {
      ReconcileStint s;
      TenantId tenant;
      std::vector<const executor::AccountedRun*> runs;
    };
    std::vector<Stint> stints;
    for (const UsageInterval* u : ivs) {
      if (!stints.empty() && !(stints.back().s.end < u->start)) {
        ReconcileStint& s = stints.back().s;
        s.end = std::max(s.end, u->end);
        s.open = s.open || u->open;
        s.gpus = std::max(s.gpus, u->eq.ToGpus());
        continue;
      }
      stints.push_back({ReconcileStint{u->start, u->end, u->open, u->eq.ToGpus()}, u->tenant, {}});
    }
    std::erase_if(stints, [&](const Stint& s) { return !InWindow({s.s.start, s.s.end}, window); });
    // Each backend job goes to the stint it overlaps (within the tolerance either side) whose
    // admission is nearest its submission: gpupool submits when it admits.
    std::vector<const executor::AccountedRun*> unpaired;
    for (const executor::AccountedRun* r : runs_of[job]) {
      const Span life = Life(*r, q.now);
      Stint* best = nullptr;
      Duration best_gap = Duration::Infinite();
      for (Stint& s : stints) {
        if (OverlapMs({s.s.start - q.tolerance, s.s.end + q.tolerance}, life) <= 0) continue;
        const Duration gap = life.start < s.s.start ? s.s.start - life.start : life.start - s.s.start;
        if (gap < best_gap) best = &s, best_gap = gap;
      }
      if (best != nullptr) {
        best->runs.push_back(r);
      } else {
        unpaired.push_back(r);
      }
    }
    for (Stint& st : stints) {
      ReconcileLine line;
      line.job = job;
      line.tenant = st.tenant;
      line.ledger = st.s;
      for (const executor::AccountedRun* r : st.runs) line.runs.push_back(*r);
      const std::string tenant = st.tenant.value() < tenant_names.size() ? tenant_names[st.tenant.value()] : "";
      if (st.runs.empty()) {
        // An admission withdrawn within the tolerance (a drain or a cancel right after it) may
        // never have reached the backend: nothing ran, and the charge differs from nothing by
        // less than the tolerance, as a duration would.
        const bool brief = !st.s.open && st.s.end - st.s.start <= q.tolerance;
        line.status = brief ? ReconcileStatus::kMatch
                      : st.s.start + q.tolerance >= q.accounting_read ? ReconcileStatus::kPending
                                                                      : ReconcileStatus::kMissingBackend;
        if (line.status == ReconcileStatus::kMissingBackend) {
          line.problems.push_back("charged from " + Rfc3339(st.s.start) + " with no backend job");
        }
        lines.push_back(std::move(line));
        continue;
      }
      if (st.runs.size() > 1) {
        line.problems.push_back(std::to_string(st.runs.size()) + " backend jobs for one admission");
      }
      const executor::AccountedRun& r = *st.runs.front();
      const double gpus = static_cast<double>(r.gpus);
      // A job cancelled before it started was allocated nothing: its GPUs are not compared.
      if (r.start_s != 0 && std::fabs(gpus - st.s.gpus) > 1e-9) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "GPUs: %g charged, %d allocated by the backend", st.s.gpus, r.gpus);
        line.problems.push_back(buf);
      }
      if (q.account_is_tenant && r.account != tenant) {
        line.problems.push_back("account: '" + r.account + "' in the backend, tenant '" + tenant + "' in gpupool");
      }
      const Span life = Life(r, q.now);
      if (r.end_s == 0 && !st.s.open && st.s.end + q.tolerance < q.accounting_read) {
        line.problems.push_back("the charge ended at " + Rfc3339(st.s.end) + "; the backend job was still " + r.state);
      } else if (r.end_s != 0 && st.s.open && life.end + q.tolerance < q.now) {
        line.problems.push_back("the backend job ended at " + Rfc3339(life.end) + " (" + r.state +
                                "); gpupool still charges it");
      } else if (r.end_s != 0 && !st.s.open) {
        const Duration charged = st.s.end - st.s.start, held = Duration::Seconds(r.end_s) - Duration::Seconds(r.submit_s != 0 ? r.submit_s : r.start_s);
        const Duration diff = charged < held ? held - charged : charged - held;
        if (q.tolerance < diff) {
          line.problems.push_back("duration: " + Seconds(charged) + " charged, " + Seconds(held) +
                                  " from submission to end in the backend");
        }
      }
      line.status = line.problems.empty() ? ReconcileStatus::kMatch : ReconcileStatus::kMismatch;
      lines.push_back(std::move(line));
    }
    for (const executor::AccountedRun* r : unpaired) {
      ReconcileLine line;
      line.job = job;
      line.status = ReconcileStatus::kMissingLedger;
      line.runs.push_back(*r);
      line.problems.push_back("backend job " + r->backend_id + " (" + r->state + ") has no charge in gpupool");
      lines.push_back(std::move(line));
    }
  }
  return lines;
}

}  // namespace gpupool
