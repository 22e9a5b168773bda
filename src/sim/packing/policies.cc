#include "sim/packing/policies.h"

#include <algorithm>
#include <cmath>

namespace gpupool::packing {

constexpr int64_t kMaxSpecCpu = 128000;  // the simulator's normalisation constants
constexpr int64_t kMaxSpecGpu = 8000;

GpuPick BestFitPick(const NodeState& n, const OpenbPod& p) {
  if (p.num_gpu == 0) return {};
  if (p.gpu_milli < kMilliPerGpu) {
    GpuPick pick;
    pick.count = 1;
    pick.gpu[0] = static_cast<int8_t>(BestFitGpu(n, p.gpu_milli));
    return pick;
  }
  return LowestFreeGpus(n, p.num_gpu);
}

namespace {


class RandomPolicy final : public PackPolicy {
 public:
  explicit RandomPolicy(uint64_t seed) : rng_(seed * 0x9e3779b97f4a7c15ull + 1) {}
  std::string_view name() const override { return "random"; }
  int ChooseNode(const std::vector<int>& feasible) override {
    return feasible[Below(rng_, feasible.size())];
  }
  int64_t Score(int, const NodeState& n, const OpenbPod& p, GpuPick& pick) override {
    if (p.num_gpu == 1 && p.gpu_milli < kMilliPerGpu) {
      // Uniform over the GPUs with room.
      std::vector<int> fit;
      for (int g = 0; g < n.gpus; ++g) {
        if (n.idle[g] >= p.gpu_milli) fit.push_back(g);
      }
      pick.count = 1;
      pick.gpu[0] = static_cast<int8_t>(fit[Below(rng_, fit.size())]);
    } else {
      pick = BestFitPick(n, p);
    }
    return 0;
  }

 private:
  std::mt19937_64 rng_;
};

class DotProdPolicy final : public PackPolicy {
 public:
  std::string_view name() const override { return "dotprod"; }
  int64_t Score(int, const NodeState& n, const OpenbPod& p, GpuPick& pick) override {
    pick = BestFitPick(n, p);
    const double node_cpu = static_cast<double>(n.cpu_left) / kMaxSpecCpu;
    const double node_gpu = static_cast<double>(n.IdleTotal()) / kMaxSpecGpu;
    const double pod_cpu = static_cast<double>(p.cpu_milli) / kMaxSpecCpu;
    const double pod_gpu = static_cast<double>(p.GpuMilliTotal()) / kMaxSpecGpu;
    const double d = (node_cpu * pod_cpu + node_gpu * pod_gpu) / 2.0;
    return static_cast<int64_t>(100.0 * (1.0 - d));
  }
};

class ClusteringPolicy final : public PackPolicy {
 public:
  std::string_view name() const override { return "clustering"; }
  int64_t Score(int, const NodeState& n, const OpenbPod& p, GpuPick& pick) override {
    pick = BestFitPick(n, p);
    const int tag = AffinityTag(p);
    if (tag < 0) return 0;
    const int64_t base = (25 * (kMaxSpecGpu - n.IdleTotal())) / kMaxSpecGpu;
    int tags = 0;
    for (int32_t c : n.tags) tags += c > 0;
    if (n.tags[tag] > 0) return base + (tags == 1 ? 75 : 50);
    if (tags == 0) return base + 25;
    return base;
  }
};

class PackingPolicy final : public PackPolicy {
 public:
  std::string_view name() const override { return "packing"; }
  int64_t Score(int, const NodeState& n, const OpenbPod& p, GpuPick& pick) override {
    pick = BestFitPick(n, p);
    if (p.num_gpu == 0) return 0;
    const int free = n.FullyFree();
    if (free == n.gpus) return std::max(33 - free, free);
    std::array<int, kMaxGpusPerNode> order{};
    for (int g = 0; g < n.gpus; ++g) order[g] = g;
    std::stable_sort(order.begin(), order.begin() + n.gpus,
                     [&](int a, int b) { return n.idle[a] < n.idle[b]; });
    int taken = 0, whole = 0;
    int64_t r = 0;
    for (int i = 0; i < n.gpus && taken < p.num_gpu; ++i) {
      const int g = order[i];
      if (n.idle[g] < p.gpu_milli) continue;
      ++taken;
      whole += n.idle[g] == kMilliPerGpu;
      r += n.idle[g] * 100 / kMilliPerGpu;
    }
    if (whole > 0) return std::max(50 - whole, 33);
    return std::max<int64_t>(100 - r / 10, 50);
  }
};

class BestFitPolicy final : public PackPolicy {
 public:
  std::string_view name() const override { return "bestfit"; }
  int64_t Score(int, const NodeState& n, const OpenbPod& p, GpuPick& pick) override {
    pick = BestFitPick(n, p);
    const double s = 0.5 * static_cast<double>(n.cpu_left - p.cpu_milli) / kMaxSpecCpu +
                     0.5 * static_cast<double>(n.IdleTotal() - p.GpuMilliTotal()) / kMaxSpecGpu;
    return static_cast<int64_t>((1.0 - s) * 100.0);
  }
};

// FGD keeps each node's current fragmentation, recomputed only when the node changes.
class FgdPolicy : public PackPolicy {
 public:
  explicit FgdPolicy(const PolicyContext& ctx) : types_(*ctx.types) {
    for (const NodeState& n : *ctx.nodes) frag_.push_back(NodeFrag(n, types_));
  }
  std::string_view name() const override { return "fgd"; }
  int64_t Score(int node, const NodeState& n, const OpenbPod& p, GpuPick& pick) override {
    return FgdScore(n, frag_[node], p, types_, pick);
  }
  void Placed(int node, const NodeState& after) override { frag_[node] = NodeFrag(after, types_); }

 protected:
  const std::vector<TypicalPod>& types_;
  std::vector<double> frag_;
};

}  // namespace

const std::vector<std::string>& PackPolicyNames() {
  static const std::vector<std::string> names = {"random",  "dotprod", "clustering", "packing",
                                                 "bestfit", "fgd",     "gpupool"};
  return names;
}

std::unique_ptr<PackPolicy> MakeGpupoolPackPolicy(const PolicyContext& ctx);  // gpupool_policy.cc

Result<std::unique_ptr<PackPolicy>> MakePackPolicy(std::string_view name, const PolicyContext& ctx) {
  if (name == "random") return std::unique_ptr<PackPolicy>(new RandomPolicy(ctx.seed));
  if (name == "dotprod") return std::unique_ptr<PackPolicy>(new DotProdPolicy());
  if (name == "clustering") return std::unique_ptr<PackPolicy>(new ClusteringPolicy());
  if (name == "packing") return std::unique_ptr<PackPolicy>(new PackingPolicy());
  if (name == "bestfit") return std::unique_ptr<PackPolicy>(new BestFitPolicy());
  if (name == "fgd") return std::unique_ptr<PackPolicy>(new FgdPolicy(ctx));
  if (name == "gpupool") return MakeGpupoolPackPolicy(ctx);
  std::string known;
  for (const std::string& n : PackPolicyNames()) known += (known.empty() ? "" : ", ") + n;
  return InvalidArgument("unknown packing policy '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace gpupool::packing
