// Tenants, their per-flavor quotas, job limits, and priority classes. See DESIGN.md §3 and
// docs/design/quota.md for the borrowing and lending rules these numbers feed.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/ids.h"
#include "core/quantity.h"
#include "core/result.h"
#include "core/time.h"

namespace gpupool {

struct FlavorQuota {
  GpuEq guaranteed;
  std::optional<GpuEq> borrow_limit;  // how far above guaranteed; none = no cap
  std::optional<GpuEq> lend_limit;    // how much unused guarantee others may borrow; none = all
};

// Per-tenant defaults and maxima for one job (like Kubernetes LimitRanges). Zero = no limit.
struct JobLimits {
  uint16_t max_replicas = 0;
  GpuEq max_job_gpu_eq;  // replicas x per-replica GPU-equivalents
  Duration default_duration = Duration::Infinite();
  Duration max_duration = Duration::Infinite();
  // Jobs of the tenant pending at once (requeued ones included): a submit beyond it is refused,
  // so that one tenant cannot grow the daemon's memory and journal without bound. 0: no limit.
  uint32_t max_pending_jobs = kDefaultMaxPendingJobs;
  static constexpr uint32_t kDefaultMaxPendingJobs = 100000;
};

// The order of a tenant's queue within a priority class (policy/priority/queue_policy.h).
enum class QueueOrder : uint8_t { kFifo, kLas, kSrsf, kSjf };
std::string_view QueueOrderName(QueueOrder o);
Result<QueueOrder> ParseQueueOrder(std::string_view name);

struct Tenant {
  TenantId id;
  std::string name;
  int64_t weight_milli = 1000;  // share of idle capacity among borrowers; 1000 = weight 1
  std::map<FlavorId, FlavorQuota> quotas;
  JobLimits limits;
  // Time-sliced GPUs have no memory or fault isolation: a shared GPU holds jobs of two tenants
  // only if both allow it.
  bool allow_gpu_cotenancy = false;
  std::vector<std::string> required_labels;  // sorted "key=value"; nodes must carry all
  // Sorted "key=value": the labels a job's node_selector may ask for with In or Exists (as
  // Kubernetes' PodNodeSelector whitelist); empty: any. NotIn and DoesNotExist only narrow.
  std::vector<std::string> allowed_labels;
  std::optional<QueueOrder> queue_policy;  // unset: the scheduler's queue_policy
  // Exponentially decayed past usage in GPU-equivalent-seconds, as of decayed_usage_at.
  double decayed_usage = 0;
  Time decayed_usage_at;

  const FlavorQuota* quota(FlavorId f) const {
    auto it = quotas.find(f);
    return it == quotas.end() ? nullptr : &it->second;
  }
};

struct PriorityClass {
  PriorityClassId id;
  std::string name;
  int32_t value = 0;       // higher runs first and may preempt lower (same tenant)
  bool preemptible = true;
  bool may_borrow = true;  // false: admitted within the guarantee only
  Duration grace_period = Duration::Seconds(30);  // SIGTERM to SIGKILL on preemption
  // How long a job of this class runs before it may be preempted (KAI's preempt-min-runtime,
  // Slurm's PreemptExemptTime); unset: the scheduler's preemption.min_runtime.
  std::optional<Duration> min_runtime;
  // The class of jobs that name none (Kubernetes' globalDefault); at most one class is.
  bool is_default = false;
};

}  // namespace gpupool
