#include "sim/packing/frag.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

namespace gpupool::packing {

std::vector<TypicalPod> TypicalPods(const std::vector<OpenbPod>& original, double coverage) {
  std::map<std::tuple<int64_t, int, int, std::string>, TypicalPod> groups;
  for (const OpenbPod& p : original) {
    TypicalPod& t = groups[{p.cpu_milli, p.gpu_milli, p.num_gpu, p.spec}];
    t.cpu_milli = p.cpu_milli;
    t.gpu_milli = p.gpu_milli;
    t.num_gpu = p.num_gpu;
    t.models = p.models;
    t.spec = p.spec;
    ++t.count;
  }
  std::vector<TypicalPod> v;
  for (auto& [key, t] : groups) v.push_back(t);
  std::sort(v.begin(), v.end(), [](const TypicalPod& a, const TypicalPod& b) {
    if (a.count != b.count) return a.count > b.count;
    return std::tie(a.cpu_milli, a.gpu_milli, a.num_gpu, a.spec) >
           std::tie(b.cpu_milli, b.gpu_milli, b.num_gpu, b.spec);
  });
  const double need = coverage * static_cast<double>(original.size());
  int64_t kept = 0;
  size_t n = 0;
  while (n < v.size() && static_cast<double>(kept) < need) kept += v[n++].count;
  v.resize(n);
  for (TypicalPod& t : v) t.p = static_cast<double>(t.count) / static_cast<double>(kept);
  return v;
}

namespace {

// Fragmentation of one (cpu_left, idle[]) state w.r.t. every type.
double Frag(const NodeState& n, int64_t cpu_left, const int32_t* idle,
            const std::vector<TypicalPod>& types) {
  int64_t total = 0;
  for (int g = 0; g < n.gpus; ++g) total += idle[g];
  if (total == 0) return 0;
  double frag = 0;
  for (const TypicalPod& t : types) {
    const bool host = t.gpu_milli > 0 && (t.models == 0 || ((t.models >> n.model) & 1)) &&
                      cpu_left >= t.cpu_milli;
    if (!host) {
      frag += t.p * static_cast<double>(total);
      continue;
    }
    int fit = 0;
    int64_t small = 0;
    for (int g = 0; g < n.gpus; ++g) {
      if (idle[g] >= t.gpu_milli) {
        ++fit;
      } else {
        small += idle[g];
      }
    }
    frag += t.p * static_cast<double>(fit >= t.num_gpu ? small : total);
  }
  return frag;
}

int64_t SigmoidScore(double f0, double f1) {
  const double x = (f0 - f1) / 1000.0;
  return static_cast<int64_t>(100.0 / (1.0 + std::exp(-x)));
}

}  // namespace

double NodeFrag(const NodeState& n, const std::vector<TypicalPod>& types) {
  return Frag(n, n.cpu_left, n.idle.data(), types);
}

int64_t FgdScore(const NodeState& n, double f0, const OpenbPod& p,
                 const std::vector<TypicalPod>& types, GpuPick& pick) {
  std::array<int32_t, kMaxGpusPerNode> idle = n.idle;
  const int64_t cpu = n.cpu_left - p.cpu_milli;
  if (p.num_gpu == 1 && p.gpu_milli < kMilliPerGpu) {
    int64_t best = -1;
    int best_gpu = -1;
    for (int g = 0; g < n.gpus; ++g) {
      if (n.idle[g] < p.gpu_milli) continue;
      // GPUs with the same idle milli give the same score; the first index wins ties anyway.
      bool seen = false;
      for (int h = 0; h < g && !seen; ++h) seen = n.idle[h] == n.idle[g];
      if (seen) continue;
      idle[g] -= p.gpu_milli;
      const int64_t s = SigmoidScore(f0, Frag(n, cpu, idle.data(), types));
      idle[g] += p.gpu_milli;
      if (s > best) {
        best = s;
        best_gpu = g;
      }
    }
    pick.count = 1;
    pick.gpu[0] = static_cast<int8_t>(best_gpu);
    return best;
  }
  pick = LowestFreeGpus(n, p.num_gpu);
  for (int i = 0; i < pick.count; ++i) idle[pick.gpu[i]] -= p.gpu_milli;
  return SigmoidScore(f0, Frag(n, cpu, idle.data(), types));
}

}  // namespace gpupool::packing
