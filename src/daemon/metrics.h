// Prometheus metrics of the daemon (prometheus-cpp core, rendered by its TextSerializer on the
// daemon's own HTTP server, on the API listener).
//
// Per tenant and flavor: guaranteed, allocated and borrowed GPU-equivalents, pending jobs and
// preemptions; histograms of scheduling-cycle and API latency; journal flushes.
// Thread-safety: prometheus-cpp metrics are safe to update from any thread; AfterCycle runs on
// the loop thread, ObserveRequest, SetConnections and Render on HTTP threads.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <utility>

#include "scheduler/plan.h"

namespace prometheus {
class Registry;
template <typename T> class Family;
class Gauge;
class Counter;
class Histogram;
}  // namespace prometheus

namespace gpupool {

class Metrics {
 public:
  Metrics();
  ~Metrics();

  // After each loop iteration: refreshes the per-tenant gauges from `state` and counts the
  // plan's preemptions (nullptr: no cycle ran).
  // Guarantees are those in force at `now` (reservations included), as the scheduler sees them.
  // Also the capacity alert (DESIGN.md §7): gpupool_guarantee_shortfall_gpu_eq per flavor, and
  // an error log line when a flavor's healthy capacity falls below its guarantees plus the
  // reservations in force (and an info line when it recovers).
  void AfterCycle(const State& state, Time now, const Plan* plan, double cycle_seconds);
  void ObserveRequest(const std::string& route, int status, double seconds);
  void ObserveFlush(size_t records, double seconds, bool ok);
  void ObserveAbandonedBatch();  // a handler threw or refused after it changed state (loop.cc)
  // A scrub of the history file ended (server.cc): damaged or not, and how long it took.
  // Thread-safe, as every call here is.
  void ObserveHistoryScrub(bool damaged, double seconds);
  // The HTTP front end's connection figures for one listener ("api", "agents"): open now, and
  // since start accepted, refused (429 at accept), timed out, and rejected before a handler.
  struct Connections {
    int64_t open = 0, accepted = 0, refused = 0, timed_out = 0, rejected = 0;
  };
  void SetConnections(const std::string& listener, const Connections& c);
  std::string Render() const;

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Gauge>* guaranteed_;
  prometheus::Family<prometheus::Gauge>* allocated_;
  prometheus::Family<prometheus::Gauge>* borrowed_;
  prometheus::Family<prometheus::Gauge>* pending_;
  prometheus::Family<prometheus::Gauge>* running_;
  prometheus::Family<prometheus::Counter>* preemptions_;
  prometheus::Family<prometheus::Counter>* requests_;
  prometheus::Family<prometheus::Histogram>* cycle_seconds_;
  prometheus::Family<prometheus::Histogram>* request_seconds_;
  prometheus::Family<prometheus::Histogram>* flush_seconds_;
  prometheus::Family<prometheus::Counter>* flush_records_;
  prometheus::Family<prometheus::Counter>* flush_failures_;
  prometheus::Family<prometheus::Counter>* abandoned_;
  prometheus::Family<prometheus::Gauge>* history_damaged_;
  prometheus::Family<prometheus::Gauge>* history_scrub_seconds_;
  prometheus::Family<prometheus::Gauge>* connections_;        // by listener and state (open, ...)
  prometheus::Family<prometheus::Gauge>* shortfall_;  // per flavor: guarantees - healthy capacity
  std::set<std::string> short_flavors_;               // flavors short at the last cycle
  // (tenant, flavor) label pairs the gauges carry now; a pair that drops out (tenant deleted,
  // quota removed, last job gone) is removed so that its old values do not linger.
  std::set<std::pair<std::string, std::string>> gauge_labels_;
};

}  // namespace gpupool
