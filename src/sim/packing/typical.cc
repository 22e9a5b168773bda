#include "sim/packing/typical.h"

#include <algorithm>
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
  for (TypicalPod& t : v) t.p = static_cast<double>(t.count) / static_cast<double>(kept);
  return v;
}

}  // namespace gpupool::packing
