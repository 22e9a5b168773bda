#include "sim/packing/state.h"

#include <algorithm>

#include "core/check.h"

namespace gpupool::packing {

int64_t NodeState::IdleTotal() const {
  int64_t t = 0;
  for (int g = 0; g < gpus; ++g) t += idle[g];
  return t;
}

int NodeState::FullyFree() const {
  int f = 0;
  for (int g = 0; g < gpus; ++g) f += idle[g] == kMilliPerGpu;
  return f;
}

bool Fits(const NodeState& n, const OpenbPod& p) {
  if (n.cpu_left < p.cpu_milli || n.mem_left < p.memory_mib || n.pods + 1 > kMaxPodsPerNode) {
    return false;
  }
  if (p.num_gpu == 0) return true;
  if (p.models != 0 && !((p.models >> n.model) & 1)) return false;
  if (p.gpu_milli < kMilliPerGpu) {
    for (int g = 0; g < n.gpus; ++g) {
      if (n.idle[g] >= p.gpu_milli) return true;
    }
    return false;
  }
  return n.FullyFree() >= p.num_gpu;
}

GpuPick LowestFreeGpus(const NodeState& n, int count) {
  GpuPick pick;
  for (int g = 0; g < n.gpus && pick.count < count; ++g) {
    if (n.idle[g] == kMilliPerGpu) pick.gpu[pick.count++] = static_cast<int8_t>(g);
  }
  return pick;
}

int BestFitGpu(const NodeState& n, int milli) {
  int best = -1;
  for (int g = 0; g < n.gpus; ++g) {
    if (n.idle[g] >= milli && (best < 0 || n.idle[g] < n.idle[best])) best = g;
  }
  return best;
}

int AffinityTag(const OpenbPod& p) {
  if (p.num_gpu == 0) return -1;
  if (p.gpu_milli < kMilliPerGpu) return 0;
  return p.num_gpu;
}

void Place(NodeState& n, const OpenbPod& p, const GpuPick& pick) {
  // A policy's pick must be the pod's GPU count, on distinct GPUs with room.
  GP_CHECK(pick.count == p.num_gpu) << "pick of " << pick.count << " GPUs for " << p.name;
  for (int i = 0; i < pick.count; ++i) {
    const int g = pick.gpu[i];
    GP_CHECK(g >= 0 && g < n.gpus && n.idle[g] >= p.gpu_milli) << "bad GPU pick for " << p.name;
    for (int j = 0; j < i; ++j) GP_CHECK(pick.gpu[j] != g);
  }
  n.cpu_left -= p.cpu_milli;
  n.mem_left -= p.memory_mib;
  ++n.pods;
  for (int i = 0; i < pick.count; ++i) n.idle[pick.gpu[i]] -= p.gpu_milli;
  const int tag = AffinityTag(p);
  if (tag >= 0) ++n.tags[tag];
}

std::vector<NodeState> EmptyNodes(const OpenbTrace& trace) {
  std::vector<const OpenbNode*> by_name;
  for (const OpenbNode& n : trace.nodes) by_name.push_back(&n);
  std::sort(by_name.begin(), by_name.end(),
            [](const OpenbNode* a, const OpenbNode* b) { return a->name < b->name; });
  std::vector<NodeState> out;
  for (const OpenbNode* n : by_name) {
    NodeState s;
    s.model = n->model;
    s.gpus = n->gpus;
    s.cpu_left = n->cpu_milli;
    s.mem_left = n->memory_mib;
    for (int g = 0; g < n->gpus; ++g) s.idle[g] = kMilliPerGpu;
    out.push_back(s);
  }
  return out;
}

uint64_t Below(std::mt19937_64& rng, uint64_t n) {
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do {
    x = rng();
  } while (x >= limit);
  return x % n;
}

}  // namespace gpupool::packing
