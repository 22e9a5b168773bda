// gpupool's packing policy: FGD's fragmentation gradient, kept exact instead of squashed into a
// truncated sigmoid (which makes most nodes tie at 50), with best fit (least idle GPU milli
// left, then least CPU left) as the tie-break before the node priority.
// docs/design/simulator.md gives the reasoning and the measurements.
#include <cmath>

#include "sim/packing/policies.h"

namespace gpupool::packing {
namespace {

class GpupoolPackPolicy final : public PackPolicy {
 public:
  explicit GpupoolPackPolicy(const PolicyContext& ctx) : types_(*ctx.types) {
    for (const NodeState& n : *ctx.nodes) frag_.push_back(NodeFrag(n, types_));
  }
  std::string_view name() const override { return "gpupool"; }

  int64_t Score(int node, const NodeState& n, const OpenbPod& p, GpuPick& pick) override {
    // Candidates: each distinct GPU state a fraction could take, or the lowest free GPUs.
    std::array<int32_t, kMaxGpusPerNode> idle = n.idle;
    NodeState after = n;
    after.cpu_left -= p.cpu_milli;
    double best = INFINITY;
    if (p.num_gpu == 1 && p.gpu_milli < kMilliPerGpu) {
      for (int g = 0; g < n.gpus; ++g) {
        if (n.idle[g] < p.gpu_milli) continue;
        bool seen = false;
        for (int h = 0; h < g && !seen; ++h) seen = n.idle[h] == n.idle[g];
        if (seen) continue;
        after.idle = idle;
        after.idle[g] -= p.gpu_milli;
        const double d = NodeFrag(after, types_) - frag_[node];
        // Among equal gradients prefer the fuller GPU (best fit inside the node).
        const double key = d * 2000.0 + n.idle[g];
        if (key < best) {
          best = key;
          pick.count = 1;
          pick.gpu[0] = static_cast<int8_t>(g);
        }
      }
    } else {
      pick = LowestFreeGpus(n, p.num_gpu);
      for (int i = 0; i < pick.count; ++i) after.idle[pick.gpu[i]] -= p.gpu_milli;
      best = (NodeFrag(after, types_) - frag_[node]) * 2000.0;
    }
    // Higher is better: minus the gradient, in 1/1000 milli, then best fit on what is left.
    const int64_t gradient = -static_cast<int64_t>(std::llround(best));
    const int64_t left = (n.IdleTotal() - p.GpuMilliTotal());
    return gradient * 16384 - left;
  }
  void Placed(int node, const NodeState& after) override { frag_[node] = NodeFrag(after, types_); }

 private:
  const std::vector<TypicalPod>& types_;
  std::vector<double> frag_;
};

}  // namespace

std::unique_ptr<PackPolicy> MakeGpupoolPackPolicy(const PolicyContext& ctx) {
  return std::make_unique<GpupoolPackPolicy>(ctx);
}

}  // namespace gpupool::packing
