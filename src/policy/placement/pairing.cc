#include "policy/placement/pairing.h"

#include <algorithm>
#include <functional>
#include <map>
#include <utility>

namespace gpupool {
namespace {
constexpr int kMilli = 1000;
}  // namespace

std::vector<std::vector<int>> BestFitDecreasing(std::vector<int> requests) {
  std::sort(requests.begin(), requests.end(), std::greater<>());
  std::vector<std::vector<int>> gpus;
  std::multimap<int, size_t> by_room;  // free milli -> GPU
  for (int r : requests) {
    auto it = by_room.lower_bound(r);  // the fullest GPU that still fits
    size_t g;
    int room;
    if (it == by_room.end()) {
      g = gpus.size();
      gpus.emplace_back();
      room = kMilli;
    } else {
      g = it->second;
      room = it->first;
      by_room.erase(it);
    }
    gpus[g].push_back(r);
    by_room.emplace(room - r, g);
  }
  return gpus;
}

GapWaste::GapWaste() : waste_(kMilli + 1) {
  for (int r = 0; r < kMilli; ++r) waste_[static_cast<size_t>(r)] = r;
}

GapWaste::GapWaste(std::vector<int> requests) {
  std::erase_if(requests, [](int r) { return r <= 0 || r >= kMilli; });
  std::vector<double> sum(kMilli + 1, 0.0), weight(kMilli + 1, 0.0);
  for (const std::vector<int>& gpu : BestFitDecreasing(std::move(requests))) {
    int used = 0;
    std::map<int, int> count;  // request -> pods of it on this GPU
    for (int r : gpu) {
      used += r;
      ++count[r];
    }
    const double waste = kMilli - used;
    // Every subset of the GPU's pods, as sub-multisets: taking k of the n pods of one request
    // stands for C(n, k) subsets.
    const std::vector<std::pair<int, int>> kinds(count.begin(), count.end());
    std::vector<int> take(kinds.size(), 0);
    while (true) {
      int taken = 0;
      double subsets = 1;
      for (size_t i = 0; i < kinds.size(); ++i) {
        taken += take[i] * kinds[i].first;
        for (int j = 0; j < take[i]; ++j) subsets = subsets * (kinds[i].second - j) / (j + 1);
      }
      sum[static_cast<size_t>(kMilli - taken)] += subsets * waste;
      weight[static_cast<size_t>(kMilli - taken)] += subsets;
      size_t i = 0;  // next sub-multiset, as a mixed-radix counter
      while (i < kinds.size() && take[i] == kinds[i].second) take[i++] = 0;
      if (i == kinds.size()) break;
      ++take[i];
    }
  }
  waste_.resize(kMilli + 1);
  for (int r = 0; r <= kMilli; ++r) {
    waste_[static_cast<size_t>(r)] = weight[static_cast<size_t>(r)] > 0
                                         ? sum[static_cast<size_t>(r)] / weight[static_cast<size_t>(r)]
                                         : static_cast<double>(r);
  }
  waste_[kMilli] = 0;
}

}  // namespace gpupool
