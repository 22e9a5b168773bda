#include "policy/fair_share/fair_share.h"

#include <algorithm>

namespace gpupool {

double BorrowedDominantShare(const QuotaBook& book, const Tenant& t, size_t flavors) {
  double dominant = 0.0;
  for (size_t i = 0; i < flavors; ++i) {
    const FlavorId f(static_cast<uint16_t>(i));
    const GpuEq cap = book.capacity(f);
    if (cap <= GpuEq()) continue;
    const double share = static_cast<double>(book.borrowed(t.id, f).units()) /
                         static_cast<double>(cap.units());
    dominant = std::max(dominant, share);
  }
  return dominant * 1000.0 / static_cast<double>(t.weight_milli);
}

std::vector<double> HistoryShares(const State& state, const std::vector<double>& decayed_usage) {
  std::vector<double> out(state.tenants().size(), 0.0);
  double total = 0.0;
  for (double u : decayed_usage) total += u;
  if (total <= 0.0) return out;
  for (const Tenant& t : state.tenants()) {
    out[t.id.value()] =
        decayed_usage[t.id.value()] / total * 1000.0 / static_cast<double>(t.weight_milli);
  }
  return out;
}

double FairShareKey(const FairShareConfig& cfg, double dominant, double history) {
  return (1.0 - cfg.usage_blend) * dominant + cfg.usage_blend * history;
}

}  // namespace gpupool
