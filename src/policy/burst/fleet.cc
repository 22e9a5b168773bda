// The burst policy's arithmetic and checks around the planner: validation, cost and spend, the
// budget window, TrackBurstUse, MakeBurstNode (docs/design/burst.md, "Cost").
#include "policy/burst/burst.h"

#include <algorithm>

#include "policy/burst/internal.h"

namespace gpupool {

using namespace burst_internal;

Status ValidateBurstPolicy(const BurstPolicy& p, const Catalogue& catalogue) {
  for (FlavorId f : p.flavors) {
    if (!KnownFlavor(f, catalogue)) return InvalidArgument("burst policy: unknown flavor");
  }
  if (p.max_gpus < 0) return InvalidArgument("burst policy: max_gpus must be >= 0");
  if (p.budget_micros < 0) return InvalidArgument("burst policy: budget must be >= 0");
  if (p.period <= Duration()) return InvalidArgument("burst policy: period must be positive");
  if (p.max_wait < Duration()) return InvalidArgument("burst policy: max_wait must be >= 0");
  if (p.idle_timeout < Duration()) {
    return InvalidArgument("burst policy: idle_timeout must be >= 0");
  }
  return Ok();
}

Status ValidateOffer(const OnDemandOffer& o, const Catalogue& catalogue) {
  if (!KnownFlavor(o.flavor, catalogue)) return InvalidArgument("on-demand offer: unknown flavor");
  const std::string& name = catalogue.model(o.flavor).name;
  if (o.gpus_per_node < 1 || o.gpus_per_node > 16) {
    return InvalidArgument("on-demand offer " + name + ": gpus_per_node must be 1 to 16");
  }
  if (o.micros_per_gpu_hour < 0 || o.micros_per_gpu_hour > kMaxBurstMicrosPerGpuHour) {
    return InvalidArgument("on-demand offer " + name + ": price out of range");
  }
  if (o.provisioning_delay < Duration() || o.provisioning_delay.is_infinite()) {
    return InvalidArgument("on-demand offer " + name + ": provisioning delay out of range");
  }
  if (o.cpu_milli < 0 || o.memory_mib < 0 || o.max_nodes < 0) {
    return InvalidArgument("on-demand offer " + name + ": cpu, memory and max_nodes must be >= 0");
  }
  for (const std::string& l : o.labels) {
    if (l.find('=') == std::string::npos) {
      return InvalidArgument("on-demand offer " + name + ": label '" + l + "' is not key=value");
    }
  }
  return Ok();
}

int64_t CostMicros(int64_t gpus, int64_t micros_per_gpu_hour, Duration d) {
  if (gpus <= 0 || micros_per_gpu_hour <= 0 || d.millis() <= 0) return 0;
  if (d.is_infinite()) return kMaxMicros;
  const Int128 rate = Int128{gpus} * micros_per_gpu_hour;  // < 2^126
  if (rate > kMaxInt128 / d.millis()) return kMaxMicros;
  const Int128 product = rate * d.millis();
  return Saturate((product + kMillisPerHour - 1) / kMillisPerHour);  // rounded up
}

int64_t NodeCostMicros(const BurstNode& node, Time now) {
  if (!node.ready.has_value()) return 0;
  const Time end = node.released.has_value() ? std::min(*node.released, now) : now;
  if (end <= *node.ready) return 0;
  return CostMicros(node.gpus, node.micros_per_gpu_hour, end - *node.ready);
}

int64_t SpentMicros(const std::vector<BurstNode>& fleet, TenantId tenant, Time window_start,
                    Time now) {
  Int128 sum = 0;
  for (const BurstNode& b : fleet) {
    if (b.tenant != tenant || !b.ready.has_value()) continue;
    const Time from = std::max(*b.ready, window_start);
    const Time to = b.released.has_value() ? std::min(*b.released, now) : now;
    if (to > from) sum += CostMicros(b.gpus, b.micros_per_gpu_hour, to - from);
  }
  return Saturate(sum);
}

Time BudgetWindowStart(Time now, Duration period) {
  GP_CHECK(period > Duration()) << "budget period must be positive";
  const int64_t p = period.millis();
  int64_t q = now.millis() / p;
  if (now.millis() % p < 0) --q;  // floor, also before the epoch
  return Time::FromMillis(q * p);
}

void TrackBurstUse(const State& s, std::vector<BurstNode>& fleet, Time now) {
  for (BurstNode& b : fleet) {
    if (!b.live() || b.node.value() >= s.nodes().size()) continue;
    if (!Idle(s.node(b.node))) b.last_busy = std::max(b.last_busy, now);
  }
}

Node MakeBurstNode(const Catalogue& catalogue, const OnDemandOffer& offer, TenantId tenant,
                   std::string name) {
  GP_CHECK(ValidateOffer(offer, catalogue).ok()) << "on-demand offer for node " << name;
  Node n;
  n.name = std::move(name);
  n.flavor = offer.flavor;
  n.gpus.assign(static_cast<size_t>(offer.gpus_per_node), Gpu{});
  n.dedicated_to = tenant;
  n.labels = offer.labels;
  n.labels.emplace_back(kOnDemandLabel);
  std::sort(n.labels.begin(), n.labels.end());
  n.labels.erase(std::unique(n.labels.begin(), n.labels.end()), n.labels.end());
  n.cpu_milli = offer.cpu_milli;
  n.memory_mib = offer.memory_mib;
  return n;
}

}  // namespace gpupool
