// Weighted dominant-resource fairness over what tenants borrow, optionally blended with decayed
// past usage (docs/design/fair_share.md).
//
//   dominant(t) = max over flavors f of borrowed(t, f) / capacity(f), divided by weight(t)
//   history(t)  = decayed_usage(t) / weight(t) / sum over tenants of decayed_usage
//   key(t)      = (1 - blend) * dominant(t) + blend * history(t)
// Lower keys are served first; ties break on the tenant id. With blend = 0 this is Mesos-style
// weighted DRF on borrowed capacity; blend > 0 adds the memory that KAI's time-based fair share
// and Kueue's admission fair sharing give.
#pragma once

#include <vector>

#include "policy/quota/quota.h"

namespace gpupool {

struct FairShareConfig {
  double usage_blend = 0.0;  // in [0, 1]
};

// Dominant borrowed share of one tenant, weighted.
double BorrowedDominantShare(const QuotaBook& book, const Tenant& t, size_t flavors);

// Per-tenant history term, indexed by tenant id; all zero when nobody has used anything.
std::vector<double> HistoryShares(const State& state, const std::vector<double>& decayed_usage);

double FairShareKey(const FairShareConfig& cfg, double dominant, double history);

}  // namespace gpupool
