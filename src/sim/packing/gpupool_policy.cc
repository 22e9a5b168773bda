// gpupool's packing policy: FGD's fragmentation gradient, changed where the measurements say
// FGD loses allocation (docs/design/simulator.md, "Our policy"):
//  1. every pod type of the original list counts, not just the most common 95%: FGD's cut drops
//     the rare 2-, 4- and 8-GPU types, whose failures cost the most GPUs;
//  2. a type can use a node only if its memory fits too: in the openb runs most late failures
//     are nodes with free GPUs and CPU but no memory, which FGD's score cannot see;
//  3. CPU-only pods go first to the nodes with the least idle GPU, where their CPU and memory
//     take nothing a GPU pod needs;
//  4. how the gradient is compared: for fractions as FGD does (int(100 sigmoid(-growth/1000)),
//     which treats growths within about 40 milli as equal); for whole-GPU pods in 200-milli
//     buckets. Ties go to the run's node order, which makes near-equal choices first-fit. Exact
//     gradients measured worse than both.
// GPUs inside a node: a fraction takes the GPU with the best score (lowest index on ties);
// whole GPUs are the lowest free ones, as in every policy.
#include <cmath>

#include "sim/packing/policies.h"

namespace gpupool::packing {
namespace {

constexpr double kWholeBucketMilli = 200.0;

class GpupoolPackPolicy final : public PackPolicy {
 public:
  explicit GpupoolPackPolicy(const PolicyContext& ctx)
      : model_(TypicalPods(*ctx.originals, /*coverage=*/1.0), /*memory=*/true) {
    for (const NodeState& n : *ctx.nodes) frag_.push_back(model_.Frag(n));
  }
  std::string_view name() const override { return "gpupool"; }

  int64_t Score(int node, const NodeState& n, const OpenbPod& p, GpuPick& pick) override {
    NodeState after = n;
    after.cpu_left -= p.cpu_milli;
    after.mem_left -= p.memory_mib;
    if (p.num_gpu == 1 && p.gpu_milli < kMilliPerGpu) {
      int64_t best = INT64_MIN;
      for (int g = 0; g < n.gpus; ++g) {
        if (n.idle[g] < p.gpu_milli) continue;
        bool seen = false;  // GPUs with equal free milli give equal scores
        for (int h = 0; h < g && !seen; ++h) seen = n.idle[h] == n.idle[g];
        if (seen) continue;
        after.idle = n.idle;
        after.idle[g] -= p.gpu_milli;
        const double growth = model_.Frag(after) - frag_[node];
        const int64_t s = static_cast<int64_t>(100.0 / (1.0 + std::exp(growth / 1000.0)));
        if (s > best) {
          best = s;
          pick.count = 1;
          pick.gpu[0] = static_cast<int8_t>(g);
        }
      }
      return best;
    }
    pick = LowestFreeGpus(n, p.num_gpu);
    for (int i = 0; i < pick.count; ++i) after.idle[pick.gpu[i]] -= p.gpu_milli;
    const double growth = model_.Frag(after) - frag_[node];
    const int64_t bucket = -static_cast<int64_t>(std::floor(growth / kWholeBucketMilli + 0.5));
    if (p.num_gpu == 0) return -n.IdleTotal() * (int64_t{1} << 20) + bucket;
    return bucket;
  }

  void Placed(int node, const NodeState& after) override { frag_[node] = model_.Frag(after); }

 private:
  FragModel model_;
  std::vector<double> frag_;
};

}  // namespace

std::unique_ptr<PackPolicy> MakeGpupoolPackPolicy(const PolicyContext& ctx) {
  return std::make_unique<GpupoolPackPolicy>(ctx);
}

}  // namespace gpupool::packing
