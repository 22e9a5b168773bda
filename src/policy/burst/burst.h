// Burst to on-demand (DESIGN.md §6): the pure planner that decides which waiting jobs get
// on-demand nodes, which on-demand nodes go back, and what they cost. The machinery that talks
// to providers is src/burst; the rules and the arithmetic are in docs/design/burst.md.
//
// PlanBurst reads the state, the tenants' burst policies, the providers' offers and the fleet of
// on-demand nodes the caller tracks, and returns a BurstDecision. It reads no clock and does no
// I/O: the same inputs give the same decision, byte for byte, whatever the order of `fleet`.
//
// Money is in micro-currency (1 currency unit = 1,000,000 micros), prices per GPU-hour, as in
// accounting's PriceList. Costs are exact integers: gpus x price x milliseconds / 3,600,000,
// rounded UP to the micro, so spend is never under-counted; they saturate at INT64_MAX.
//
// Thread-safety: free functions over values; nothing shared.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/ids.h"
#include "core/result.h"
#include "core/time.h"
#include "model/catalogue.h"
#include "model/node.h"
#include "model/state.h"

namespace gpupool {

// Every on-demand node carries kOnDemandLabel (model/node.h; MakeBurstNode).
// Same bound as accounting's PriceList: 1e6 currency units per GPU-hour.
inline constexpr int64_t kMaxBurstMicrosPerGpuHour = 1'000'000'000'000;

// One tenant's burst policy.
struct BurstPolicy {
  std::vector<FlavorId> flavors;  // flavors the tenant may burst on
  int max_gpus = 0;               // GPUs on its live + in-flight on-demand nodes, all flavors
  int64_t budget_micros = 0;      // spend allowed per budget window
  // The budget window is the period holding `now`, aligned to the epoch:
  // [floor(now / period) * period, + period).
  Duration period = Duration::Hours(24);
  Duration max_wait = Duration::Minutes(10);      // burst once a job waited longer than this
  Duration idle_timeout = Duration::Minutes(10);  // release a node idle this long
};

// What a provider sells for one flavor.
struct OnDemandOffer {
  FlavorId flavor;
  int gpus_per_node = 8;                  // 1..16, all whole GPUs
  int64_t micros_per_gpu_hour = 0;        // 0..kMaxBurstMicrosPerGpuHour
  Duration provisioning_delay;            // request to ready (what the simulated provider waits)
  int64_t cpu_milli = 0, memory_mib = 0;  // per node; 0 = not tracked
  int max_nodes = 0;                      // provider capacity for the flavor, all tenants together
  std::vector<std::string> labels;  // extra "key=value" labels its nodes carry (e.g. cuda=12.4)
};

// Errors (kInvalidArgument) name the bad field. PlanBurst REQUIRES policies and offers that
// pass these.
Status ValidateBurstPolicy(const BurstPolicy& p, const Catalogue& catalogue);
Status ValidateOffer(const OnDemandOffer& o, const Catalogue& catalogue);

// One on-demand node as the daemon or simulator tracks it, from request to release.
// Owned by the caller; the planner only reads it (TrackBurstUse writes last_busy).
struct BurstNode {
  std::string request_id;  // the provider's id; unique in the fleet
  TenantId tenant;
  FlavorId flavor;
  int gpus = 0;
  int64_t micros_per_gpu_hour = 0;  // the offer's price when requested
  JobId for_job;                    // the job it was provisioned for
  Time requested;
  std::optional<Time> ready;     // billing starts here
  NodeId node;                   // valid once it joined the state
  std::optional<Time> released;  // billing ends here
  // The last instant a job was seen on the node (TrackBurstUse), or when the caller saw the
  // last job leave. The node is idle since max(last_busy, ready).
  Time last_busy;

  // Live: ready, joined the state, not released. In flight: not released and not live (a ready
  // node that has not joined yet counts as in flight).
  bool live() const { return ready.has_value() && node.valid() && !released.has_value(); }
  bool in_flight() const { return !released.has_value() && !live(); }
};

// What the daemon asks a provider for: `nodes` nodes of one flavor for one tenant, which with
// the room already there or coming hold the whole gang of `for_job`.
struct ProvisionRequest {
  TenantId tenant;
  FlavorId flavor;
  int nodes = 0;
  int gpus_per_node = 0;
  JobId for_job;
  // Filled in by the caller of a provider (the planner leaves them empty), on its own thread, so
  // that a provider needs nothing from the caller's state (docs/design/burst.md, Providers):
  std::string tenant_name;  // the tenant's name, GPUPOOL_TENANT; empty: the id in decimal
  std::string request_id;   // the id to answer with (set by AsyncProvider); empty: make one
  friend bool operator==(const ProvisionRequest&, const ProvisionRequest&) = default;
};

struct BurstDecision {
  std::vector<ProvisionRequest> provision;  // in job order (priority, submitted, id)
  // Ascending; the caller requeues their jobs (a budget stop: each is past the end it was
  // charged for, or has no estimate).
  std::vector<NodeId> release;
  // One line for each job past its max_wait that could not burst, in job order.
  std::vector<std::pair<JobId, std::string>> reasons;
  // Each live on-demand node with a price: the time until which its tenant's budget pays for it
  // (now for a node that takes no new job). Schedule places a job there only if it is expected
  // to end by then (its `deadlines`), so every job on an on-demand node fits the budget.
  std::map<NodeId, Time> deadlines;
};

// --- cost ------------------------------------------------------------------------------------
// gpus x micros_per_gpu_hour x d, rounded up to the micro; 0 for d <= 0; saturates.
int64_t CostMicros(int64_t gpus, int64_t micros_per_gpu_hour, Duration d);
// The node's billed cost so far: [ready, released], or [ready, now] while not released; 0 before
// it is ready. A release after `now` is cut at `now`.
int64_t NodeCostMicros(const BurstNode& node, Time now);
// The tenant's spend inside [window_start, now]: each node's billed interval clipped to it,
// costed and rounded up per node, summed (saturating).
int64_t SpentMicros(const std::vector<BurstNode>& fleet, TenantId tenant, Time window_start,
                    Time now);
// floor(now / period) * period, also for times before the epoch. REQUIRES: period > 0.
Time BudgetWindowStart(Time now, Duration period);

// --- planning --------------------------------------------------------------------------------
// Sets last_busy = now on every live node of the fleet that some job holds a part of. Call it
// once per cycle (and after applying the cycle's plan) before PlanBurst: idle time is then
// measured to within one cycle. A caller that knows the exact time the last job left a node
// may set last_busy itself instead.
void TrackBurstUse(const State& s, std::vector<BurstNode>& fleet, Time now);

// The decision for this instant; the rules are in docs/design/burst.md. Call it after the
// cycle's scheduling plan has been applied, so that pending() holds only jobs the pool could
// not place. REQUIRES: valid policies and offers; request ids unique in the fleet.
BurstDecision PlanBurst(const State& s, const std::map<TenantId, BurstPolicy>& policies,
                        const std::map<FlavorId, OnDemandOffer>& offers,
                        const std::vector<BurstNode>& fleet, Time now);
// PlanBurst(...).deadlines without the reasons: what Schedule needs, computed just before the
// cycle (after nodes that are ready joined). Same REQUIRES.
std::map<NodeId, Time> OnDemandDeadlines(const State& s,
                                         const std::map<TenantId, BurstPolicy>& policies,
                                         const std::map<FlavorId, OnDemandOffer>& offers,
                                         const std::vector<BurstNode>& fleet, Time now);

// The Node for a ready on-demand node: offer.gpus_per_node whole GPUs of the offer's flavor,
// dedicated to the tenant, labels = offer.labels + kOnDemandLabel, the offer's host resources.
// To describe a node the provider reported (ProvisionedNode), pass an offer carrying its
// numbers. REQUIRES: ValidateOffer(offer, catalogue).ok().
Node MakeBurstNode(const Catalogue& catalogue, const OnDemandOffer& offer, TenantId tenant,
                   std::string name);

}  // namespace gpupool
