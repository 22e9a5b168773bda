#include "daemon/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <sstream>

#include "daemon/log.h"
#include "policy/quota/quota.h"

namespace gpupool {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;

prometheus::Histogram::BucketBoundaries LatencyBuckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};
}

}  // namespace

Metrics::Metrics() : registry_(std::make_shared<prometheus::Registry>()) {
  auto& r = *registry_;
  guaranteed_ = &BuildGauge().Name("gpupool_tenant_guaranteed_gpu_eq")
                     .Help("Guaranteed GPU-equivalents per tenant and flavor").Register(r);
  allocated_ = &BuildGauge().Name("gpupool_tenant_allocated_gpu_eq")
                    .Help("GPU-equivalents held by the tenant's admitted and running jobs").Register(r);
  borrowed_ = &BuildGauge().Name("gpupool_tenant_borrowed_gpu_eq")
                   .Help("Allocated GPU-equivalents above the tenant's guarantee").Register(r);
  pending_ = &BuildGauge().Name("gpupool_tenant_pending_jobs")
                  .Help("Jobs waiting, per tenant and flavor").Register(r);
  running_ = &BuildGauge().Name("gpupool_tenant_active_jobs")
                  .Help("Admitted or running jobs, per tenant and flavor").Register(r);
  preemptions_ = &BuildCounter().Name("gpupool_tenant_preemptions_total")
                      .Help("Jobs of the tenant preempted, by kind (reclaim, priority)").Register(r);
  requests_ = &BuildCounter().Name("gpupool_api_requests_total")
                   .Help("API requests by route and status").Register(r);
  cycle_seconds_ = &BuildHistogram().Name("gpupool_scheduling_cycle_seconds")
                        .Help("Wall time of one scheduling cycle").Register(r);
  request_seconds_ = &BuildHistogram().Name("gpupool_api_request_seconds")
                          .Help("API latency from request to reply, including the durable write")
                          .Register(r);
  flush_seconds_ = &BuildHistogram().Name("gpupool_journal_flush_seconds")
                        .Help("Wall time of one group commit to the journal").Register(r);
  flush_records_ = &BuildCounter().Name("gpupool_journal_records_total")
                        .Help("Records appended to the journal").Register(r);
  flush_failures_ = &BuildCounter().Name("gpupool_journal_flush_failures_total")
                         .Help("Failed group commits (their requests were answered 503)").Register(r);
  abandoned_ = &BuildCounter().Name("gpupool_batches_abandoned_total")
                    .Help("Batches abandoned because a handler threw or refused after changing state (a bug)")
                    .Register(r);
  history_damaged_ = &BuildGauge().Name("gpupool_history_damaged")
                          .Help("1 if the last scrub of the history file (journal-history.db) found damage, else 0")
                          .Register(r);
  history_scrub_seconds_ = &BuildGauge().Name("gpupool_history_scrub_seconds")
                                .Help("How long the last scrub of the history file took").Register(r);
  connections_ = &BuildGauge().Name("gpupool_http_connections")
                      .Help("HTTP connections per listener: open now (state=open), and since start accepted, "
                            "refused (429, over a connection limit), timed_out, rejected (400/413/431 before a "
                            "handler)")
                      .Register(r);
  shortfall_ = &BuildGauge().Name("gpupool_guarantee_shortfall_gpu_eq")
                    .Help("Guarantees plus reservations in force minus the healthy capacity of the shared pool, "
                          "per flavor (0 when covered); alert when > 0")
                    .Register(r);
}

Metrics::~Metrics() = default;

void Metrics::AfterCycle(const State& state, Time now, const Plan* plan, double cycle_seconds) {
  const QuotaBook book(state, now);
  const Catalogue& cat = state.catalogue();
  std::set<std::string> short_now;
  for (const GuaranteeShortfall& s : GuaranteeShortfalls(state, book)) {
    const std::string name = cat.model(s.flavor).name;
    short_now.insert(name);
    shortfall_->Add({{"flavor", name}}).Set((s.guaranteed - s.capacity).ToGpus());
    if (!short_flavors_.count(name)) {
      Log("error", "healthy capacity is below the guarantees: guaranteed work may wait",
          {{"flavor", name}, {"guaranteed", ToString(s.guaranteed)}, {"capacity", ToString(s.capacity)}});
    }
  }
  for (const std::string& name : short_flavors_) {
    if (short_now.count(name)) continue;
    shortfall_->Add({{"flavor", name}}).Set(0);
    Log("info", "healthy capacity covers the guarantees again", {{"flavor", name}});
  }
  short_flavors_ = std::move(short_now);
  std::map<std::pair<TenantId, FlavorId>, std::pair<int, int>> jobs;  // pending, active
  for (JobId id : state.pending()) {
    const Job& j = *state.FindJob(id);
    ++jobs[{j.spec.tenant, j.spec.shape.flavor}].first;
  }
  for (JobId id : state.active()) {
    const Job& j = *state.FindJob(id);
    ++jobs[{j.spec.tenant, j.spec.shape.flavor}].second;
  }
  std::set<std::pair<std::string, std::string>> present;
  for (const Tenant& t : state.tenants()) {
    for (size_t f = 0; f < cat.size(); ++f) {
      const FlavorId fid(static_cast<uint16_t>(f));
      const auto counts = jobs.find({t.id, fid});
      if (!book.has_quota(t.id, fid) && counts == jobs.end()) continue;
      present.insert({t.name, cat.model(fid).name});
      const prometheus::Labels labels{{"tenant", t.name}, {"flavor", cat.model(fid).name}};
      guaranteed_->Add(labels).Set(book.guaranteed(t.id, fid).ToGpus());
      allocated_->Add(labels).Set(book.usage(t.id, fid).ToGpus());
      borrowed_->Add(labels).Set(book.borrowed(t.id, fid).ToGpus());
      pending_->Add(labels).Set(counts == jobs.end() ? 0 : counts->second.first);
      running_->Add(labels).Set(counts == jobs.end() ? 0 : counts->second.second);
    }
  }
  for (const auto& [tenant, flavor] : gauge_labels_) {
    if (present.count({tenant, flavor})) continue;
    const prometheus::Labels labels{{"tenant", tenant}, {"flavor", flavor}};
    for (prometheus::Family<prometheus::Gauge>* g : {guaranteed_, allocated_, borrowed_, pending_, running_}) {
      g->Remove(&g->Add(labels));
    }
  }
  gauge_labels_ = std::move(present);
  if (plan == nullptr) return;
  cycle_seconds_->Add({}, LatencyBuckets()).Observe(cycle_seconds);
  for (const PreemptDecision& p : plan->preemptions) {
    const Job* victim = state.FindJob(p.victim);
    if (victim == nullptr) continue;
    preemptions_
        ->Add({{"tenant", state.tenant(victim->spec.tenant).name},
               {"flavor", cat.model(victim->spec.shape.flavor).name},
               {"kind", p.kind == PreemptKind::kReclaim ? "reclaim" : "priority"}})
        .Increment();
  }
}

void Metrics::ObserveRequest(const std::string& route, int status, double seconds) {
  requests_->Add({{"route", route}, {"status", std::to_string(status)}}).Increment();
  request_seconds_->Add({{"route", route}}, LatencyBuckets()).Observe(seconds);
}

void Metrics::ObserveFlush(size_t records, double seconds, bool ok) {
  flush_seconds_->Add({}, LatencyBuckets()).Observe(seconds);
  flush_records_->Add({}).Increment(static_cast<double>(records));
  if (!ok) flush_failures_->Add({}).Increment();
}

void Metrics::ObserveAbandonedBatch() { abandoned_->Add({}).Increment(); }

void Metrics::ObserveHistoryScrub(bool damaged, double seconds) {
  history_damaged_->Add({}).Set(damaged ? 1 : 0);
  history_scrub_seconds_->Add({}).Set(seconds);
}

void Metrics::SetConnections(const std::string& listener, const Connections& c) {
  for (const auto& [state, v] : {std::pair<const char*, int64_t>{"open", c.open}, {"accepted", c.accepted},
                                 {"refused", c.refused}, {"timed_out", c.timed_out}, {"rejected", c.rejected}}) {
    connections_->Add({{"listener", listener}, {"state", state}}).Set(static_cast<double>(v));
  }
}

std::string Metrics::Render() const {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry_->Collect());
  return out.str();
}

}  // namespace gpupool
