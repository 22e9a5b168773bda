// Queue policies: the order of a tenant's pending jobs within a priority class (fair share
// between tenants and priority between classes are unchanged), and, for the preemptive ones,
// which of the tenant's running jobs of the same class a pending job may preempt.
//
//   fifo  submission order (the default).
//   las   least attained service, Tiresias' discretised 2D-LAS: a job's attained service is
//         GPUs x time run (every attempt); `las_thresholds_gpu_s` cut it into queues 0, 1, ...;
//         lower queues first, FIFO within one. Needs no estimate. Preemptive across queues.
//   srsf  shortest remaining service first: GPUs x (estimate - time run). Jobs without an
//         estimate come last. Preemptive: a running job with more remaining service yields.
//   sjf   shortest job first: GPUs x estimate; never preempts.
//
// Starvation bound (every policy): a job submitted `starvation_after` ago or more is starved.
// Starved jobs come before every other job of their tenant and class, in submission order, and
// are never the victim of a queue preemption; under las and srsf a starved job may preempt the
// tenant's running jobs of its class that are not starved. So no job is overtaken by later,
// shorter work for longer than `starvation_after`. Queue preemption obeys the class: only
// preemptible jobs, only after their minimum runtime (PreemptionConfig), and at most
// `max_preemptions_per_cycle` victims a cycle. A preempted job keeps its attained service
// (Job::ran) and resumes from it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "model/state.h"

namespace gpupool {

// QueueOrder, QueueOrderName and ParseQueueOrder are in model/tenant.h (a tenant names one).
inline bool Preemptive(QueueOrder o) { return o == QueueOrder::kLas || o == QueueOrder::kSrsf; }

struct QueuePolicyConfig {
  QueueOrder order = QueueOrder::kFifo;  // a tenant's queue_policy overrides it
  // las: queue k holds attained service in [t[k-1], t[k]) GPU-seconds; strictly increasing.
  std::vector<int64_t> las_thresholds_gpu_s = {3'600, 36'000, 360'000};
  Duration starvation_after = Duration::Hours(24 * 7);
  int max_preemptions_per_cycle = 8;
};
Status Validate(const QueuePolicyConfig& cfg);

// The policy of `tenant`'s queue: its own, else the scheduler's.
QueueOrder OrderOf(const QueuePolicyConfig& cfg, const Tenant& tenant);

// GPUs x time run, over every attempt (Job::ran) and the current one, in GPU-seconds.
double AttainedGpuSeconds(const Job& job, const Catalogue& cat, Time now);
// GPUs x (estimate - time run), at least 0; +infinity without an estimate.
double RemainingGpuSeconds(const Job& job, const Catalogue& cat, Time now);
int LasQueue(const QueuePolicyConfig& cfg, double attained_gpu_s);
bool Starved(const QueuePolicyConfig& cfg, const Job& job, Time now);

// Where a pending job stands under `order`: starved jobs first, then lower rank (0 for fifo,
// the queue for las, GPU-seconds for srsf and sjf); submission and id break ties (QueueKey).
struct QueueRank {
  bool starved = false;
  double rank = 0;
};
QueueRank RankOf(const QueuePolicyConfig& cfg, QueueOrder order, const Job& job, const Catalogue& cat, Time now);

// Whether pending `job` may preempt running `victim` of its tenant and priority class under
// `order` (the class's preemptibility and minimum runtime are the scheduler's to check).
bool QueueMayPreempt(const QueuePolicyConfig& cfg, QueueOrder order, const Job& job, const Job& victim,
                     const Catalogue& cat, Time now);
// Among a job's queue victims, the one to take first: the most remaining (srsf) or attained
// (las) service; larger is taken first.
double VictimRank(QueueOrder order, const Job& victim, const Catalogue& cat, Time now);

// The next instant after `now` at which `job`'s place in the order under `order` changes by
// itself, with nothing submitted or finished: a running job crossing its next las threshold, a
// pending job becoming starved. Never for fifo and when nothing will change. An event-driven
// simulator wakes the scheduler then, as the daemon's tick would.
Time NextOrderChange(const QueuePolicyConfig& cfg, QueueOrder order, const Job& job, const Catalogue& cat, Time now);

// For people: "srsf: 3 jobs ahead, with less remaining service", "las queue 2 (12.5 GPU-h
// attained): 4 jobs ahead", "starved (waiting since ...): first in its class".
std::string DescribePosition(const QueuePolicyConfig& cfg, QueueOrder order, const Job& job, const Catalogue& cat,
                             Time now, size_t ahead);

}  // namespace gpupool
