// gpupool's packing policy: FGD's fragmentation gradient, changed where the measurements say
// FGD loses allocation (docs/design/simulator.md, "Our policy"):
//  1. every pod type of the original list counts, not just the most common 95% (FGD's cut
//     drops the rare 2-, 4- and 8-GPU types, whose failures cost the most GPUs);
//  2. a type can use a node only if its memory fits too: in the openb runs most late failures
//     are nodes with free GPUs and CPU but no memory, which FGD's score cannot see;
//  3. the gradient is compared in 200-milli-GPU buckets and ties go to the run's node order,
//     which makes near-equal choices first-fit (it packs early nodes and keeps later ones
//     whole); comparing exact gradients measured worse;
//  4. CPU-only pods go to the nodes with the least idle GPU first, where their CPU and memory
//     take nothing a GPU pod needs.
// GPUs inside a node: a fraction takes the GPU with the best bucket (lowest index on ties);
// whole GPUs are the lowest free ones, as in every policy.
#include <cmath>

#include "sim/packing/policies.h"

namespace gpupool::packing {
namespace {

constexpr double kBucketMilli = 200.0;

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
    int64_t bucket = INT64_MIN;
    if (p.num_gpu == 1 && p.gpu_milli < kMilliPerGpu) {
      for (int g = 0; g < n.gpus; ++g) {
        if (n.idle[g] < p.gpu_milli) continue;
        bool seen = false;  // GPUs with equal free milli give equal scores
        for (int h = 0; h < g && !seen; ++h) seen = n.idle[h] == n.idle[g];
        if (seen) continue;
        after.idle = n.idle;
        after.idle[g] -= p.gpu_milli;
        const int64_t b = Bucket(model_.Frag(after) - frag_[node]);
        if (b > bucket) {
          bucket = b;
          pick.count = 1;
          pick.gpu[0] = static_cast<int8_t>(g);
        }
      }
    } else {
      pick = LowestFreeGpus(n, p.num_gpu);
      for (int i = 0; i < pick.count; ++i) after.idle[pick.gpu[i]] -= p.gpu_milli;
      bucket = Bucket(model_.Frag(after) - frag_[node]);
    }
    if (p.num_gpu == 0) return -n.IdleTotal() * (int64_t{1} << 20) + bucket;
    return bucket;
  }

  void Placed(int node, const NodeState& after) override {
    frag_[node] = model_.Frag(after);
  }

 private:
  // Higher is better: minus the fragmentation growth, in buckets, rounded to nearest.
  static int64_t Bucket(double growth) {
    return -static_cast<int64_t>(std::floor(growth / kBucketMilli + 0.5));
  }

  FragModel model_;
  std::vector<double> frag_;
};

}  // namespace

std::unique_ptr<PackPolicy> MakeGpupoolPackPolicy(const PolicyContext& ctx) {
  return std::make_unique<GpupoolPackPolicy>(ctx);
}

}  // namespace gpupool::packing
