#include "policy/placement/baselines.h"

#include <algorithm>
#include <array>

namespace gpupool {
namespace {

// Per-node scores of the paper's simulator are "higher is better" integers; the core's are
// lower-is-better, so each is negated. The value -FreeEq(g)^2 makes the tightest GPU that fits
// a fraction the smallest change, which is the GPU each baseline's node then gives it.
class SharesPolicy : public PlacementPolicy {
 public:
  int64_t KeyValue(FlavorId, const GpuModel& model, GpuKey key, Level) const override {
    const int64_t free = FreeEq(model, key).units();
    return -free * free;
  }
  int64_t WholeTerm(FlavorId, int, Level) const override { return 0; }
  int64_t Score(FlavorId, int64_t before, int64_t after) const override { return after - before; }
  bool ScoresNodes(FlavorId) const override { return true; }
  // No useful bound: the score depends on each member's free CPU, tags or draw.
  int64_t NodeScoreBound(FlavorId, const TaskShape&, int64_t, int64_t, int64_t) const override {
    return INT64_MIN;
  }

 protected:
  static double CpuShare(int64_t milli) {
    return milli == INT64_MAX ? 0.0 : static_cast<double>(milli) / 128000.0;  // INT64_MAX: untracked
  }
  static double GpuShare(int64_t milli) { return static_cast<double>(milli) / 8000.0; }
  static int64_t IdleOf(const HostMove& m, int g) {
    return FreeEq(*m.model, m.keys[g]).units() / (GpuEq::kUnitsPerGpu / 1000);
  }
};

//   d = (cpu_free share x cpu share + idle share x gpu share) / 2,   score -int(100 (1 - d))
class DotProdPolicy final : public SharesPolicy {
 public:
  std::string_view name() const override { return "dotprod"; }
  int64_t NodeScore(FlavorId, const TaskShape&, int64_t, int64_t, const HostMove& m) const override {
    const double d = (CpuShare(m.cpu_free) * CpuShare(m.cpu_milli) + GpuShare(m.idle_milli) * GpuShare(m.gpu_milli)) / 2.0;
    return -static_cast<int64_t>(100.0 * (1.0 - d));
  }
};

//   r = (cpu left share + idle left share) / 2,   score -int(100 (1 - r))
// The daemon's `bestfit` sees GPUs only, exactly.
class BestFitHostPolicy final : public SharesPolicy {
 public:
  std::string_view name() const override { return "bestfit_host"; }
  int64_t NodeScore(FlavorId, const TaskShape&, int64_t, int64_t, const HostMove& m) const override {
    const double cpu_left = m.cpu_free == INT64_MAX ? 0.0 : CpuShare(m.cpu_free - m.cpu_milli);
    const double r = 0.5 * cpu_left + 0.5 * GpuShare(m.idle_milli - m.gpu_milli);
    return -static_cast<int64_t>((1.0 - r) * 100.0);
  }
};

// A uniform draw over the nodes that fit: each node's score is a 63-bit hash of (seed, the
// replica, the node), and the lowest wins. On the node, a fraction takes a GPU drawn the same
// way from those with room (the paper's uniform choice); whole GPUs, the first free ones.
class RandomPolicy final : public SharesPolicy {
 public:
  explicit RandomPolicy(uint64_t seed) : seed_(Mix(seed ^ 0x6a09e667f3bcc909ull)) {}
  std::string_view name() const override { return "random"; }
  bool ScoresHostOnly(FlavorId) const override { return false; }
  int64_t NodeScore(FlavorId, const TaskShape&, int64_t, int64_t, const HostMove& m) const override {
    return static_cast<int64_t>(Draw(m, 0) >> 1);
  }
  bool DrawsGpus() const override { return true; }
  uint64_t GpuDraw(const HostMove& m, int g) const override { return Draw(m, static_cast<uint64_t>(g) + 1); }

 private:
  uint64_t Draw(const HostMove& m, uint64_t what) const {
    return Mix(seed_ ^ Mix(m.salt ^ Mix((uint64_t{m.node} << 8) ^ what)));
  }
  static uint64_t Mix(uint64_t x) {  // splitmix64's finaliser
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
  }
  uint64_t seed_;
};

// GpuClustering: with base = int(25 x used share of the node's GPUs), for a replica of GPUs
//   the node runs only its tag              base + 75
//   it runs its tag and others               base + 50
//   it runs nothing tagged                   base + 25
//   it runs other tags only                  base
// and 0 for a replica of no GPU. "Used" is of the paper's 8-GPU node: 8000 milli less the idle.
class ClusteringPolicy final : public SharesPolicy {
 public:
  std::string_view name() const override { return "clustering"; }
  bool ScoresHostOnly(FlavorId) const override { return false; }
  bool UsesTags() const override { return true; }
  int64_t NodeScore(FlavorId, const TaskShape& t, int64_t, int64_t, const HostMove& m) const override {
    const uint16_t tag = AffinityTag(t);
    if (tag == 0) return 0;
    const int64_t base = 25 * (8000 - m.idle_milli) / 8000;
    const int tags = __builtin_popcount(m.tags);
    if ((m.tags & tag) != 0) return -(base + (tags == 1 ? 75 : 50));
    if (tags == 0) return -(base + 25);
    return -base;
  }
};

// GpuPacking, from the node's GPUs before the replica, each with its idle milli:
//   every GPU fully idle                   max(33 - n, n)  with n the node's GPUs
//   else, of the GPUs the replica would take (the least idle that fit, as many as it asks),
//     w > 0 of them fully idle             max(50 - w, 33)
//     none fully idle                      max(100 - r / 10, 50)   r = sum of idle x 100 / 1000
// and 0 for a replica of no GPU: partly used GPUs first, then partly used nodes, then free ones.
class PackingPolicy final : public SharesPolicy {
 public:
  std::string_view name() const override { return "packing"; }
  int64_t NodeScore(FlavorId, const TaskShape& t, int64_t before, int64_t after, const HostMove& m) const override {
    if (t.kind == ShapeKind::kMigProfile) return Score(FlavorId(), before, after);
    if (m.gpu_milli == 0) return 0;
    std::array<int64_t, 64> idle{};
    const int n = std::min(m.gpus, static_cast<int>(idle.size()));
    int free = 0;
    for (int g = 0; g < n; ++g) {
      idle[g] = IdleOf(m, g);
      free += idle[g] >= 1000;
    }
    if (free == n) return -std::max(33 - free, free);
    std::sort(idle.begin(), idle.begin() + n);
    const int want = t.kind == ShapeKind::kWholeGpus ? t.gpus : 1;
    const int64_t need = t.kind == ShapeKind::kWholeGpus ? 1000 : t.milli;
    int taken = 0, whole = 0;
    int64_t r = 0;
    for (int g = 0; g < n && taken < want; ++g) {
      if (idle[g] < need) continue;
      ++taken;
      whole += idle[g] >= 1000;
      r += idle[g] * 100 / 1000;
    }
    if (whole > 0) return -std::max(50 - whole, 33);
    return -std::max<int64_t>(100 - r / 10, 50);
  }
};

}  // namespace

std::unique_ptr<PlacementPolicy> MakeBaselinePolicy(std::string_view name, uint64_t seed) {
  if (name == "dotprod") return std::make_unique<DotProdPolicy>();
  if (name == "bestfit_host") return std::make_unique<BestFitHostPolicy>();
  if (name == "random") return std::make_unique<RandomPolicy>(seed);
  if (name == "clustering") return std::make_unique<ClusteringPolicy>();
  if (name == "packing") return std::make_unique<PackingPolicy>();
  return nullptr;
}

}  // namespace gpupool
