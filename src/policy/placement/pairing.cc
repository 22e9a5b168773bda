#include "policy/placement/pairing.h"

#include <algorithm>
#include <bitset>
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

std::vector<std::vector<int>> MinimumBinSlack(std::vector<int> requests) {
  std::erase_if(requests, [](int r) { return r <= 0 || r > kMilli; });
  std::map<int, int, std::greater<>> left;  // size -> requests of it not yet packed, largest first
  for (int r : requests) ++left[r];
  std::vector<std::vector<int>> gpus;
  std::vector<std::pair<int, int>> kinds;  // (size, count) of what is left, largest first
  std::vector<std::bitset<kMilli + 1>> reach;  // reach[j][t]: t is a sum of kinds j.. within counts
  std::vector<int> take;
  while (!left.empty()) {
    const int big = left.begin()->first;
    if (--left.begin()->second == 0) left.erase(left.begin());
    const int room = kMilli - big;
    kinds.assign(left.begin(), left.end());
    const size_t n = kinds.size();
    reach.assign(n + 1, {});
    reach[n][0] = true;
    for (size_t j = n; j-- > 0;) {
      const auto [size, count] = kinds[j];
      reach[j] = reach[j + 1];
      for (int k = 1; k <= count && k * size <= room; ++k) reach[j] |= reach[j + 1] << static_cast<size_t>(k * size);
    }
    int fill = room;
    while (!reach[0][fill]) --fill;
    // The most of each size in turn, largest first, that still lets the rest reach the fill.
    take.assign(n, 0);
    for (size_t j = 0, rest = fill; j < n; ++j) {
      const auto [size, count] = kinds[j];
      int k = std::min<int>(count, static_cast<int>(rest) / size);
      while (!reach[j + 1][rest - k * size]) --k;
      take[j] = k;
      rest -= k * size;
    }
    // The same fill again while its requests, and the anchor as the largest, are left.
    std::vector<int> gpu = {big};
    for (size_t j = 0; j < n; ++j) gpu.insert(gpu.end(), take[j], kinds[j].first);
    while (true) {
      gpus.push_back(gpu);
      for (size_t j = 0; j < n; ++j) {
        if (take[j] > 0 && (left[kinds[j].first] -= take[j]) == 0) left.erase(kinds[j].first);
      }
      // Again only with `big` still the largest left and, besides the anchor, every take there.
      if (left.empty() || left.begin()->first != big) break;
      bool again = true;
      for (size_t j = 0; j < n && again; ++j) {
        auto it = left.find(kinds[j].first);
        again = take[j] == 0 || (it != left.end() && it->second >= take[j] + (kinds[j].first == big));
      }
      if (!again) break;
      if (--left.begin()->second == 0) left.erase(left.begin());
    }
  }
  return gpus;
}

GapWaste::GapWaste() : waste_(kMilli + 1) {
  for (int r = 0; r < kMilli; ++r) waste_[static_cast<size_t>(r)] = r;
}

GapWaste::GapWaste(std::vector<int> requests) {
  std::erase_if(requests, [](int r) { return r <= 0 || r >= kMilli; });
  // A scheduler builds its policy every cycle, mostly from the same requests: the last table
  // learned on this thread is kept, keyed by the sorted requests.
  std::sort(requests.begin(), requests.end());
  thread_local std::vector<int> last_requests;
  thread_local std::vector<double> last_waste;
  if (!last_waste.empty() && requests == last_requests) {
    waste_ = last_waste;
    return;
  }
  last_requests = requests;
  std::vector<double> sum(kMilli + 1, 0.0), weight(kMilli + 1, 0.0);
  for (const std::vector<int>& gpu : MinimumBinSlack(std::move(requests))) {
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
  last_waste = waste_;
}

}  // namespace gpupool
