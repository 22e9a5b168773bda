#include "policy/placement/policies.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <string>
#include <tuple>

#include "policy/placement/pairing.h"

namespace gpupool {

GpuEq Fragmentation(const NodeClassView& c, const TaskShape& t, bool mig_reconfig) {
  GpuEq total_free, usable;
  int free_whole = 0;
  for (int i = 0; i < c.n; ++i) {
    total_free += FreeEq(*c.model, c.keys[i]);
    if (t.kind == ShapeKind::kWholeGpus) {
      free_whole += c.keys[i].whole_free();
    } else {
      usable += UsableBy(*c.model, c.keys[i], t, mig_reconfig);
    }
  }
  if (t.kind == ShapeKind::kWholeGpus) {
    if (free_whole < t.gpus) return total_free;
    return total_free - GpuEq::Gpus(free_whole);
  }
  return total_free - usable;
}

int64_t PlacementPolicy::Value(const NodeClassView& c) const {
  int64_t v = 0;
  int free_whole = 0;
  for (int i = 0; i < c.n; ++i) {
    v += KeyValue(c.flavor, *c.model, c.keys[i]);
    free_whole += c.keys[i].whole_free();
  }
  return v + WholeTerm(c.flavor, free_whole);
}

namespace {

// FGD. For a node class c and the mix {(t, w_t)}:
//   Value(c) = sum_t w_t * Fragmentation(c, t)
// Fragmentation of a non-whole type is free(c) - sum_g usable_t(g); of a whole type needing k
// GPUs it is free(c) - 7000 * m when m >= k free whole GPUs, else free(c). Hence
//   KeyValue(g)  = W * free(g) - sum over non-whole t of w_t * usable_t(g),   W = sum_t w_t
//   WholeTerm(m) = -7000 * m * sum over whole t with k <= m of w_t
class FgdPolicy final : public PlacementPolicy {
 public:
  FgdPolicy(WorkloadMix mix, bool reconfig) : mix_(std::move(mix)), reconfig_(reconfig) {
    for (const auto& [f, types] : mix_.by_flavor) {
      Weights& w = weights_[f];
      for (const TaskType& t : types) {
        w.total += t.weight;
        if (t.shape.kind == ShapeKind::kWholeGpus) {
          if (w.whole_upto.size() <= t.shape.gpus) w.whole_upto.resize(t.shape.gpus + 1, 0);
          w.whole_upto[t.shape.gpus] += t.weight;
        }
      }
      for (size_t m = 1; m < w.whole_upto.size(); ++m) w.whole_upto[m] += w.whole_upto[m - 1];
    }
  }
  std::string_view name() const override { return "fgd"; }

  int64_t KeyValue(FlavorId f, const GpuModel& model, GpuKey key) const override {
    auto [it, fresh] = key_cache_.try_emplace({f.value(), key.bits()}, 0);
    if (!fresh) return it->second;
    auto types = mix_.by_flavor.find(f);
    if (types == mix_.by_flavor.end()) return 0;
    int64_t v = weights_.at(f).total * FreeEq(model, key).units();
    for (const TaskType& t : types->second) {
      if (t.shape.kind == ShapeKind::kWholeGpus) continue;
      v -= t.weight * UsableBy(model, key, t.shape, reconfig_).units();
    }
    it->second = v;
    return v;
  }
  int64_t WholeTerm(FlavorId f, int free_whole) const override {
    auto it = weights_.find(f);
    if (it == weights_.end() || it->second.whole_upto.empty()) return 0;
    const std::vector<int64_t>& upto = it->second.whole_upto;
    const int64_t w = upto[std::min<size_t>(free_whole, upto.size() - 1)];
    return -GpuEq::kUnitsPerGpu * free_whole * w;
  }
  int64_t Score(int64_t before, int64_t after) const override { return after - before; }
  bool ScoresDifferences() const override { return true; }
  // W: the mix's weight for a flavor (0 without one).
  int64_t TotalWeight(FlavorId f) const {
    auto it = weights_.find(f);
    return it == weights_.end() ? 0 : it->second.total;
  }

 private:
  struct Weights {
    int64_t total = 0;
    std::vector<int64_t> whole_upto;  // [m] = sum of weights of whole types needing <= m GPUs
  };
  struct KeyHash {
    size_t operator()(const std::pair<uint16_t, uint64_t>& k) const {
      return std::hash<uint64_t>()(k.second * 31 + k.first);
    }
  };
  WorkloadMix mix_;
  bool reconfig_;
  std::map<FlavorId, Weights> weights_;
  mutable std::unordered_map<std::pair<uint16_t, uint64_t>, int64_t, KeyHash> key_cache_;
};

// gpupool: FGD's value plus, per partly used shared GPU, the milli-GPUs it is likely to waste
// for good (GapWaste, learned from the flavor's recent fractions), weighted kPairingWeight
// times the mix's total weight so that both terms are in FGD's units:
//   KeyValue(g) = FGD.KeyValue(g) + kPairingWeight * W * 7 * Waste(free milli of g)
// A free or flex GPU wastes nothing; whole GPUs and MIG keep FGD's value, so whole-GPU and MIG
// placements score as under fgd, and a fraction's score adds the change in expected waste.
class GpupoolPolicy final : public PlacementPolicy {
 public:
  GpupoolPolicy(WorkloadMix mix, bool reconfig) : fgd_(mix, reconfig) {
    for (auto& [f, requests] : mix.fractions) pairing_.emplace(f, GapWaste(std::move(requests)));
  }
  std::string_view name() const override { return "gpupool"; }
  int64_t KeyValue(FlavorId f, const GpuModel& model, GpuKey key) const override {
    int64_t v = fgd_.KeyValue(f, model, key);
    if (key.mode() != KeyMode::kShared || key.flex()) return v;
    const int64_t w = fgd_.TotalWeight(f);
    if (w == 0) return v;
    auto it = pairing_.find(f);
    const double waste = it == pairing_.end() ? kNone(static_cast<int>(key.free_milli()))
                                              : it->second(static_cast<int>(key.free_milli()));
    return v + static_cast<int64_t>(std::llround(static_cast<double>(kPairingWeight * w) *
                                                 (GpuEq::kUnitsPerGpu / 1000) * waste));
  }
  int64_t WholeTerm(FlavorId f, int free_whole) const override { return fgd_.WholeTerm(f, free_whole); }
  int64_t Score(int64_t before, int64_t after) const override { return after - before; }
  bool ScoresDifferences() const override { return true; }

 private:
  static inline const GapWaste kNone{};
  FgdPolicy fgd_;
  std::map<FlavorId, GapWaste> pairing_;
};

class FreeCapacityPolicy : public PlacementPolicy {
 public:
  int64_t KeyValue(FlavorId, const GpuModel& model, GpuKey key) const override {
    return FreeEq(model, key).units();
  }
  int64_t WholeTerm(FlavorId, int) const override { return 0; }
};

class BestFitPolicy final : public FreeCapacityPolicy {
 public:
  std::string_view name() const override { return "bestfit"; }
  int64_t Score(int64_t, int64_t after) const override { return after; }
};

class SpreadPolicy final : public FreeCapacityPolicy {
 public:
  std::string_view name() const override { return "spread"; }
  int64_t Score(int64_t, int64_t after) const override { return -after; }
};

class FirstFitPolicy final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "firstfit"; }
  int64_t KeyValue(FlavorId, const GpuModel&, GpuKey) const override { return 0; }
  int64_t WholeTerm(FlavorId, int) const override { return 0; }
  int64_t Score(int64_t, int64_t) const override { return 0; }
  bool ScoresDifferences() const override { return true; }
};

}  // namespace

const std::vector<std::string_view>& PlacementPolicyNames() {
  static const std::vector<std::string_view> names = {"fgd", "bestfit", "spread", "firstfit", "gpupool"};
  return names;
}

Result<std::unique_ptr<PlacementPolicy>> MakePlacementPolicy(std::string_view name,
                                                             WorkloadMix mix, bool mig_reconfig) {
  std::unique_ptr<PlacementPolicy> p;
  if (name == "fgd") {
    p = std::make_unique<FgdPolicy>(std::move(mix), mig_reconfig);
  } else if (name == "bestfit") {
    p = std::make_unique<BestFitPolicy>();
  } else if (name == "spread") {
    p = std::make_unique<SpreadPolicy>();
  } else if (name == "firstfit") {
    p = std::make_unique<FirstFitPolicy>();
  } else if (name == "gpupool") {
    p = std::make_unique<GpupoolPolicy>(std::move(mix), mig_reconfig);
  } else {
    std::string known;
    for (std::string_view n : PlacementPolicyNames()) known += (known.empty() ? "" : ", ") + std::string(n);
    return InvalidArgument("unknown placement policy '" + std::string(name) + "' (known: " +
                           known + ")");
  }
  return p;
}

WorkloadMix WorkloadMixOf(const State& state, size_t max_types) {
  std::map<FlavorId, std::vector<TaskType>> acc;
  auto add = [&](const Job& j) {
    const ReplicaShape& s = j.spec.shape;
    if (s.gpuless()) return;  // uses no GPU: no fragmentation to weigh
    TaskShape t{s.kind, s.gpus, s.mig_profile, s.milli, s.gpu_memory_mib};
    if (s.kind == ShapeKind::kWholeGpus) t.mig_profile = 0, t.milli = 0, t.memory_mib = 0;
    std::vector<TaskType>& v = acc[s.flavor];
    auto it = std::find_if(v.begin(), v.end(), [&](const TaskType& x) { return x.shape == t; });
    if (it == v.end()) {
      v.push_back({t, j.spec.replicas});
    } else {
      it->weight += j.spec.replicas;
    }
  };
  // The pending and active sets, not jobs(): that one grows with history.
  for (JobId id : state.pending()) add(*state.FindJob(id));
  for (JobId id : state.active()) add(*state.FindJob(id));
  WorkloadMix mix;
  for (auto& [f, v] : acc) {
    auto key = [](const TaskShape& s) {
      return std::tuple(static_cast<int>(s.kind), s.gpus, s.mig_profile, s.milli, s.memory_mib);
    };
    std::sort(v.begin(), v.end(), [&](const TaskType& a, const TaskType& b) {
      if (a.weight != b.weight) return a.weight > b.weight;
      return key(a.shape) < key(b.shape);
    });
    if (v.size() > max_types) v.resize(max_types);
    mix.by_flavor[f] = std::move(v);
  }
  return mix;
}

std::map<FlavorId, std::vector<int>> RecentFractions(const State& state, size_t window) {
  std::map<FlavorId, std::vector<int>> out;
  size_t seen = 0;
  for (auto it = state.jobs().rbegin(); it != state.jobs().rend() && seen < window; ++it, ++seen) {
    const ReplicaShape& s = it->second.spec.shape;
    if (s.kind != ShapeKind::kGpuFraction) continue;
    std::vector<int>& v = out[s.flavor];
    v.insert(v.end(), it->second.spec.replicas, s.milli);
  }
  return out;
}

}  // namespace gpupool
