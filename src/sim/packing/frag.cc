#include "sim/packing/frag.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

namespace gpupool::packing {

std::vector<TypicalPod> TypicalPods(const std::vector<OpenbPod>& original, double coverage,
                                    bool by_demand) {
  std::map<std::tuple<int64_t, int, int, std::string>, TypicalPod> groups;
  for (const OpenbPod& p : original) {
    TypicalPod& t = groups[{p.cpu_milli, p.gpu_milli, p.num_gpu, p.spec}];
    t.cpu_milli = p.cpu_milli;
    t.gpu_milli = p.gpu_milli;
    t.num_gpu = p.num_gpu;
    t.models = p.models;
    t.spec = p.spec;
    t.memory_mib += p.memory_mib;  // a sum until the division below
    ++t.count;
  }
  std::vector<TypicalPod> v;
  for (auto& [key, t] : groups) {
    t.memory_mib /= t.count;
    v.push_back(t);
  }
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
  if (!by_demand) {
    for (TypicalPod& t : v) t.p = static_cast<double>(t.count) / static_cast<double>(kept);
    return v;
  }
  double demand = 0;
  for (const TypicalPod& t : v) demand += static_cast<double>(t.count) * t.gpu_milli * t.num_gpu;
  for (TypicalPod& t : v) {
    t.p = demand > 0 ? static_cast<double>(t.count) * t.gpu_milli * t.num_gpu / demand : 0;
  }
  return v;
}

namespace {

// Fragmentation of one (cpu_left, idle[]) state w.r.t. every type.
double Frag(const NodeState& n, int64_t cpu_left, int64_t mem_left, const int32_t* idle,
            const std::vector<TypicalPod>& types, bool memory) {
  int64_t total = 0;
  for (int g = 0; g < n.gpus; ++g) total += idle[g];
  if (total == 0) return 0;
  double frag = 0;
  for (const TypicalPod& t : types) {
    const bool host = t.gpu_milli > 0 && (t.models == 0 || ((t.models >> n.model) & 1)) &&
                      cpu_left >= t.cpu_milli && (!memory || mem_left >= t.memory_mib);
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

double NodeFrag(const NodeState& n, const std::vector<TypicalPod>& types, bool memory) {
  return Frag(n, n.cpu_left, n.mem_left, n.idle.data(), types, memory);
}

FragModel::FragModel(std::vector<TypicalPod> types, bool memory)
    : types_(std::move(types)), memory_(memory) {
  for (size_t i = 0; i < types_.size(); ++i) {
    const TypicalPod& t = types_[i];
    if (t.gpu_milli == 0) {
      cpu_only_p_ += t.p;
      continue;
    }
    auto it = std::find_if(groups_.begin(), groups_.end(), [&](const Group& g) {
      return g.gpu_milli == t.gpu_milli && g.num_gpu == t.num_gpu;
    });
    if (it == groups_.end()) {
      groups_.push_back({t.gpu_milli, t.num_gpu, {}});
      it = groups_.end() - 1;
    }
    it->members.push_back(i);
  }
}

double FragModel::Frag(const NodeState& n) const {
  int64_t total = 0;
  for (int g = 0; g < n.gpus; ++g) total += n.idle[g];
  if (total == 0) return 0;
  const double g_total = static_cast<double>(total);
  double frag = cpu_only_p_ * g_total;
  for (const Group& grp : groups_) {
    int fit = 0;
    int64_t small = 0;
    for (int g = 0; g < n.gpus; ++g) {
      if (n.idle[g] >= grp.gpu_milli) {
        ++fit;
      } else {
        small += n.idle[g];
      }
    }
    const double usable_frag = fit >= grp.num_gpu ? static_cast<double>(small) : g_total;
    for (size_t i : grp.members) {
      const TypicalPod& t = types_[i];
      const bool host = (t.models == 0 || ((t.models >> n.model) & 1)) &&
                        n.cpu_left >= t.cpu_milli && (!memory_ || n.mem_left >= t.memory_mib);
      frag += t.p * (host ? usable_frag : g_total);
    }
  }
  return frag;
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
      const int64_t s = SigmoidScore(f0, Frag(n, cpu, n.mem_left, idle.data(), types, false));
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
  return SigmoidScore(f0, Frag(n, cpu, n.mem_left, idle.data(), types, false));
}

}  // namespace gpupool::packing
