// Scheduler configuration: which policies and how much work per cycle. Validated once, at
// start-up: an unknown policy name is an error there, not a log line later (STYLE.md habit 6).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/result.h"
#include "core/time.h"
#include "policy/fair_share/fair_share.h"
#include "policy/placement/policies.h"
#include "policy/priority/queue_policy.h"

namespace gpupool {

struct PreemptionConfig {
  bool enabled = true;
  Duration min_runtime = Duration::Minutes(5);  // a victim must have run this long
  int max_attempts_per_cycle = 64;              // pending jobs that may try preemption
  int max_victims = 64;                         // per preemptor
};

struct BackfillConfig {
  bool enabled = true;
  int max_holds = 8;  // blocked jobs per cycle that hold the capacity they wait for
};

// How a job that accepts several flavors (JobSpec::flavors) picks among those with room:
//   kOrder  the first in the job's order (Kueue's flavor fungibility)
//   kBest   the one where the placement policy scores the job's placement best, ties to the
//           lower node id (the FGD paper's "any of these models": the best node over them all)
// Either way, when none has room without preemption, the first flavor is the one preempted for.
enum class FlavorChoice : uint8_t { kOrder, kBest };

struct SchedulerConfig {
  std::string placement = "gpupool";  // FGD with CPU, stranding and pairing (policies.h)
  FlavorChoice flavor_choice = FlavorChoice::kOrder;
  QueuePolicyConfig queue;  // the order inside each tenant's queue (policy/priority/queue_policy.h)
  FairShareConfig fair_share;
  PreemptionConfig preemption;
  BackfillConfig backfill;
  bool mig_reconfigure = true;  // re-partition idle MIG GPUs when a profile fits nowhere
  // Search MIG and fraction options over GPU states (KeyIndex) when the policy allows it. Same
  // plans as the node-class search, faster; off only to test that equivalence.
  bool key_search = true;
  size_t max_workload_types = 64;
  // placement gpupool: the pairing table is learned from the fractions among the last this
  // many submitted jobs (RecentFractions), so it follows the mix as it changes.
  size_t pairing_window = 1000;
  // placement random: the seed of its draws (the same seed and state, the same plan).
  uint64_t placement_seed = 0;
  // The workload the fgd and gpupool policies weigh, given instead of the one read from the
  // state (pending and active jobs; for gpupool, its recent fractions when this has none): the
  // packing experiment gives its pod list's typical pods. Null in the daemon.
  std::shared_ptr<const WorkloadMix> workload;
};

Status Validate(const SchedulerConfig& cfg);

}  // namespace gpupool
