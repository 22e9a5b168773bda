#include "policy/placement/policies.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <unordered_map>
#include <string>
#include <tuple>

#include "policy/placement/baselines.h"
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
    if (t.gpus == 0 || free_whole < t.gpus) return total_free;
    return total_free - GpuEq::Gpus(free_whole);
  }
  return total_free - usable;
}

int64_t PlacementPolicy::Value(const NodeClassView& c) const {
  int64_t v = 0;
  int free_whole = 0;
  for (int i = 0; i < c.n; ++i) {
    v += KeyValue(c.flavor, *c.model, c.keys[i], c.level);
    free_whole += c.keys[i].whole_free();
  }
  return v + WholeTerm(c.flavor, free_whole, c.level);
}

namespace {

// Per-flavor data of a policy, looked up by the flavor's dense id (the scoring paths ask for
// it once per node scored; a std::map lookup was a fifth of their time).
template <typename T>
class FlavorTable {
 public:
  T& operator[](FlavorId f) {
    if (f.value() >= slots_.size()) slots_.resize(size_t{f.value()} + 1);
    std::optional<T>& s = slots_[f.value()];
    if (!s) s.emplace();
    return *s;
  }
  const T* find(FlavorId f) const {
    return f.value() < slots_.size() && slots_[f.value()] ? &*slots_[f.value()] : nullptr;
  }

 private:
  std::vector<std::optional<T>> slots_;
};

// FGD. For a node class c and the mix {(t, w_t)}:
//   Value(c) = sum_t w_t * Fragmentation(c, t)
// Fragmentation of a non-whole type is free(c) - sum_g usable_t(g); of a whole type needing k
// GPUs it is free(c) - 7000 * m when m >= k free whole GPUs, else free(c); of a type the node
// lacks the CPU for, or of one that needs no GPU, all of free(c). At host level L the types
// that fit are those whose CPU is at most the L-th smallest distinct CPU request (types of no
// CPU always). Hence, with W = sum_t w_t over all types,
//   KeyValue(g, L)  = W * free(g) - sum over non-whole t fitting at L of w_t * usable_t(g)
//   WholeTerm(m, L) = -7000 * m * sum over whole t fitting at L with 1 <= k <= m of w_t
class FgdPolicy final : public PlacementPolicy {
 public:
  // More distinct CPU requests than this are merged into the heaviest ones (each type then
  // counts as needing the next of them up), so classes multiply by at most this many.
  static constexpr size_t kMaxThresholds = 32;

  FgdPolicy(WorkloadMix mix, bool reconfig) : mix_(std::move(mix)), reconfig_(reconfig) {
    for (const auto& [f, types] : mix_.by_flavor) {
      Weights& w = weights_[f];
      std::map<int64_t, int64_t> by_cpu;  // distinct CPU requests of GPU types, by weight
      for (const TaskType& t : types) {
        w.total += t.weight;
        if (!Gpuless(t) && t.cpu_milli > 0) by_cpu[t.cpu_milli] += t.weight;
      }
      w.thresholds = Thresholds(by_cpu);
      const size_t levels = w.thresholds.size() + 1;
      w.whole_upto.assign(levels, {});
      for (const TaskType& t : types) {
        w.need.push_back(Need(w.thresholds, t));
        if (Gpuless(t) || t.shape.kind != ShapeKind::kWholeGpus) continue;
        for (size_t l = w.need.back(); l < levels; ++l) {
          std::vector<int64_t>& upto = w.whole_upto[l];
          if (upto.size() <= t.shape.gpus) upto.resize(t.shape.gpus + 1, 0);
          upto[t.shape.gpus] += t.weight;
        }
      }
      for (std::vector<int64_t>& upto : w.whole_upto) {
        for (size_t m = 1; m < upto.size(); ++m) upto[m] += upto[m - 1];
      }
    }
  }
  std::string_view name() const override { return "fgd"; }

  int HostLevels(FlavorId f) const override {
    const Weights* w = weights_.find(f);
    return w == nullptr ? 1 : static_cast<int>(w->thresholds.size()) + 1;
  }
  Level HostLevel(FlavorId f, int64_t cpu_free) const override {
    const Weights* w = weights_.find(f);
    if (w == nullptr) return kAllFit;
    const std::vector<int64_t>& thr = w->thresholds;
    return static_cast<Level>(std::upper_bound(thr.begin(), thr.end(), cpu_free) - thr.begin());
  }

  int64_t KeyValue(FlavorId f, const GpuModel& model, GpuKey key, Level level) const override {
    auto types = mix_.by_flavor.find(f);
    if (types == mix_.by_flavor.end()) return 0;
    const Weights& w = *weights_.find(f);
    level = std::min<Level>(level, static_cast<Level>(w.thresholds.size()));
    auto [it, fresh] = key_cache_.try_emplace({key.bits(), f.value(), level}, 0);
    if (!fresh) return it->second;
    int64_t v = w.total * FreeEq(model, key).units();
    for (size_t i = 0; i < types->second.size(); ++i) {
      const TaskType& t = types->second[i];
      if (t.shape.kind == ShapeKind::kWholeGpus || w.need[i] > level) continue;
      v -= t.weight * UsableBy(model, key, t.shape, reconfig_).units();
    }
    it->second = v;
    return v;
  }
  int64_t WholeTerm(FlavorId f, int free_whole, Level level) const override {
    const Weights* w8 = weights_.find(f);
    if (w8 == nullptr) return 0;
    const std::vector<std::vector<int64_t>>& by_level = w8->whole_upto;
    const std::vector<int64_t>& upto = by_level[std::min<size_t>(level, by_level.size() - 1)];
    if (upto.empty()) return 0;
    const int64_t w = upto[std::min<size_t>(free_whole, upto.size() - 1)];
    return -GpuEq::kUnitsPerGpu * free_whole * w;
  }
  // The paper's comparison: int(100 sigmoid(-growth / 1000)) with the growth of expected
  // fragmentation in milli-GPUs (the value over W, in GpuEq units of 7 per milli), negated so
  // that lower is better. Growths within about 40 milli score equal and go to the lowest node.
  int64_t Score(FlavorId f, int64_t before, int64_t after) const override {
    if (TotalWeight(f) == 0) return after - before;
    return -static_cast<int64_t>(100.0 / (1.0 + std::exp(GrowthMilli(f, before, after) / 1000.0)));
  }
  // A value change as growth of expected fragmentation, in milli-GPUs. REQUIRES: TotalWeight(f) > 0.
  double GrowthMilli(FlavorId f, int64_t before, int64_t after) const {
    return static_cast<double>(after - before) /
           (static_cast<double>(TotalWeight(f)) * (GpuEq::kUnitsPerGpu / 1000));
  }
  bool ScoresDifferences() const override { return true; }
  // W: the mix's weight for a flavor (0 without one).
  int64_t TotalWeight(FlavorId f) const {
    const Weights* w = weights_.find(f);
    return w == nullptr ? 0 : w->total;
  }

 private:
  struct Weights {
    int64_t total = 0;
    std::vector<int64_t> thresholds;  // distinct CPU requests, ascending
    std::vector<uint8_t> need;        // by type: the lowest level it fits at
    // [L][m] = sum of weights of whole types fitting at level L that need 1..m GPUs
    std::vector<std::vector<int64_t>> whole_upto;
  };
  struct CacheKey {
    uint64_t bits;
    uint16_t flavor;
    Level level;
    friend bool operator==(const CacheKey&, const CacheKey&) = default;
  };
  struct KeyHash {
    size_t operator()(const CacheKey& k) const {
      return std::hash<uint64_t>()(k.bits * 31 + (uint64_t{k.flavor} << 8 | k.level));
    }
  };
  static bool Gpuless(const TaskType& t) {
    return t.shape.kind == ShapeKind::kWholeGpus && t.shape.gpus == 0;
  }
  // The heaviest kMaxThresholds CPU requests, and always the largest, ascending.
  static std::vector<int64_t> Thresholds(const std::map<int64_t, int64_t>& by_cpu) {
    std::vector<std::pair<int64_t, int64_t>> v(by_cpu.begin(), by_cpu.end());
    if (v.size() > kMaxThresholds) {
      const std::pair<int64_t, int64_t> largest = v.back();
      v.pop_back();
      std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
      v.resize(kMaxThresholds - 1);
      v.push_back(largest);
    }
    std::vector<int64_t> out;
    for (const auto& [cpu, weight] : v) out.push_back(cpu);
    std::sort(out.begin(), out.end());
    return out;
  }
  // The number of thresholds a node must meet to host the type: that of the smallest threshold
  // at or above its CPU, counting from 1 (0 for a type of no CPU or of no GPU).
  static uint8_t Need(const std::vector<int64_t>& thr, const TaskType& t) {
    if (Gpuless(t) || t.cpu_milli <= 0) return 0;
    return static_cast<uint8_t>(std::lower_bound(thr.begin(), thr.end(), t.cpu_milli) - thr.begin() + 1);
  }
  WorkloadMix mix_;
  bool reconfig_;
  FlavorTable<Weights> weights_;
  mutable std::unordered_map<CacheKey, int64_t, KeyHash> key_cache_;
};

// gpupool: FGD's value plus, per partly used shared GPU, the milli-GPUs it is likely to waste
// for good (GapWaste, learned from the flavor's recent fractions), weighted kPairingWeight
// times the mix's total weight so that both terms are in FGD's units:
//   KeyValue(g) = FGD.KeyValue(g) + kPairingWeight * W * 7 * Waste(free milli of g)
// A free or flex GPU wastes nothing; whole GPUs and MIG keep FGD's value, so whole-GPU and MIG
// placements score as under fgd, and a fraction's score adds the change in expected waste.
//
// When the mix asks for CPU or memory, nodes are scored one by one with the packing
// experiment's stranding term (sim/packing/gpupool_policy.cc): a node's idle GPUs are only as
// usable as its CPU and memory let them be at the mix's CPU and memory per GPU milli,
//   U(idle, cpu, mem) = max(0, min(idle, cpu / cpu_per_milli, mem / mem_per_milli))
//   stranded = U(before) - U(after) - the replica's own GPU milli
// (negative when the replica is leaner than the mix and the node short of CPU or memory), and
// with G the value's growth in milli-GPUs (FGD's gradient plus 16 x pairing):
//   fraction      -int(100 sigmoid(-(G / 4 + stranded) / 1000))   1/4 on FGD, 4 on pairing
//   whole GPUs    round((G + stranded) / 200)
//   no GPU        round(stranded / 1000) first, then round(G / 200)
//   MIG           FGD's score
class GpupoolPolicy final : public PlacementPolicy {
 public:
  GpupoolPolicy(WorkloadMix mix, bool reconfig) : fgd_(mix, reconfig) {
    for (auto& [f, requests] : mix.fractions) pairing_[f] = GapWaste(std::move(requests));
    for (const auto& [f, types] : mix.by_flavor) {
      double cpu = 0, mem = 0, milli = 0;
      for (const TaskType& t : types) {
        const double w = static_cast<double>(t.weight);
        const double g = t.shape.kind == ShapeKind::kWholeGpus ? 1000.0 * t.shape.gpus
                         : t.shape.kind == ShapeKind::kGpuFraction ? t.shape.milli : 0.0;
        if (g == 0) continue;  // the GPU pods' CPU and memory per GPU, as the experiment's
        cpu += w * static_cast<double>(t.cpu_milli);
        mem += w * static_cast<double>(t.memory_mib);
        milli += w * g;
      }
      if (milli > 0 && (cpu > 0 || mem > 0)) host_[f] = {cpu / milli, mem / milli};
    }
  }
  std::string_view name() const override { return "gpupool"; }
  int HostLevels(FlavorId f) const override { return fgd_.HostLevels(f); }
  Level HostLevel(FlavorId f, int64_t cpu_free) const override { return fgd_.HostLevel(f, cpu_free); }
  int64_t KeyValue(FlavorId f, const GpuModel& model, GpuKey key, Level level) const override {
    int64_t v = fgd_.KeyValue(f, model, key, level);
    if (key.mode() != KeyMode::kShared || key.flex()) return v;
    const int64_t w = fgd_.TotalWeight(f);
    if (w == 0) return v;
    const GapWaste* pairing = pairing_.find(f);
    const double waste = (pairing == nullptr ? kNone : *pairing)(static_cast<int>(key.free_milli()));
    return v + static_cast<int64_t>(std::llround(static_cast<double>(kPairingWeight * w) *
                                                 (GpuEq::kUnitsPerGpu / 1000) * waste));
  }
  int64_t WholeTerm(FlavorId f, int free_whole, Level level) const override {
    return fgd_.WholeTerm(f, free_whole, level);
  }
  int64_t Score(FlavorId f, int64_t before, int64_t after) const override { return fgd_.Score(f, before, after); }
  bool ScoresDifferences() const override { return true; }
  bool ScoresNodes(FlavorId f) const override { return host_.find(f) != nullptr; }

  int64_t NodeScore(FlavorId f, const TaskShape& t, int64_t before, int64_t after,
                    const HostMove& m) const override {
    const PerMilli* host = host_.find(f);
    if (host == nullptr || fgd_.TotalWeight(f) == 0 || t.kind == ShapeKind::kMigProfile) {
      return Score(f, before, after);
    }
    const PerMilli& pm = *host;
    auto usable = [&](double idle, int64_t cpu, int64_t mem) {
      double u = idle;
      if (pm.cpu > 0 && cpu != kUnlimited) u = std::min(u, static_cast<double>(cpu) / pm.cpu);
      if (pm.mem > 0 && mem != kUnlimited) u = std::min(u, static_cast<double>(mem) / pm.mem);
      return std::max(0.0, u);
    };
    auto less = [](int64_t have, int64_t take) { return have == kUnlimited ? have : have - take; };
    const double idle = static_cast<double>(m.idle_milli), g = static_cast<double>(m.gpu_milli);
    const double stranded = usable(idle, m.cpu_free, m.mem_free) -
                            usable(idle - g, less(m.cpu_free, m.cpu_milli), less(m.mem_free, m.memory_mib)) - g;
    return Form(t, fgd_.GrowthMilli(f, before, after), stranded);
  }
  // Stranding is never below minus the replica's own GPU milli (U only shrinks), nor below 0
  // for a replica of no GPU, and each form grows with it.
  int64_t NodeScoreBound(FlavorId f, const TaskShape& t, int64_t before, int64_t after,
                         int64_t gpu_milli) const override {
    if (host_.find(f) == nullptr || fgd_.TotalWeight(f) == 0 || t.kind == ShapeKind::kMigProfile) {
      return Score(f, before, after);
    }
    return Form(t, fgd_.GrowthMilli(f, before, after), -static_cast<double>(gpu_milli));
  }

 private:
  static constexpr int64_t kUnlimited = INT64_MAX;  // Session::kUntracked
  // The score forms, from the growth G and the stranding, both in milli-GPUs.
  static int64_t Form(const TaskShape& t, double growth, double stranded) {
    auto bucket = [](double milli, double width) { return static_cast<int64_t>(std::floor(milli / width + 0.5)); };
    if (t.kind == ShapeKind::kGpuFraction) {
      return -static_cast<int64_t>(100.0 / (1.0 + std::exp((growth / 4 + stranded) / 1000.0)));
    }
    if (t.gpus == 0) return bucket(stranded, 1000) * (int64_t{1} << 32) + bucket(growth, 200);
    return bucket(growth + stranded, 200);
  }
  struct PerMilli {
    double cpu = 0, mem = 0;
  };
  static inline const GapWaste kNone{};
  FgdPolicy fgd_;
  FlavorTable<GapWaste> pairing_;
  FlavorTable<PerMilli> host_;  // the mix's CPU and memory per GPU milli, if it asks any
};

class FreeCapacityPolicy : public PlacementPolicy {
 public:
  int64_t KeyValue(FlavorId, const GpuModel& model, GpuKey key, Level) const override {
    return FreeEq(model, key).units();
  }
  int64_t WholeTerm(FlavorId, int, Level) const override { return 0; }
};

class BestFitPolicy final : public FreeCapacityPolicy {
 public:
  std::string_view name() const override { return "bestfit"; }
  int64_t Score(FlavorId, int64_t, int64_t after) const override { return after; }
};

class SpreadPolicy final : public FreeCapacityPolicy {
 public:
  std::string_view name() const override { return "spread"; }
  int64_t Score(FlavorId, int64_t, int64_t after) const override { return -after; }
};

class FirstFitPolicy final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "firstfit"; }
  int64_t KeyValue(FlavorId, const GpuModel&, GpuKey, Level) const override { return 0; }
  int64_t WholeTerm(FlavorId, int, Level) const override { return 0; }
  int64_t Score(FlavorId, int64_t, int64_t) const override { return 0; }
  bool ScoresDifferences() const override { return true; }
};

}  // namespace

const std::vector<std::string_view>& PlacementPolicyNames() {
  static const std::vector<std::string_view> names = {"fgd",     "bestfit",      "spread", "firstfit",   "gpupool",
                                                      "dotprod", "bestfit_host", "random", "clustering", "packing"};
  return names;
}

Result<std::unique_ptr<PlacementPolicy>> MakePlacementPolicy(std::string_view name, WorkloadMix mix,
                                                             bool mig_reconfig, uint64_t seed) {
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
  } else if (std::unique_ptr<PlacementPolicy> b = MakeBaselinePolicy(name, seed)) {
    p = std::move(b);
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
    TaskShape t{s.kind, s.gpus, s.mig_profile, s.milli, s.gpu_memory_mib};
    if (s.kind == ShapeKind::kWholeGpus) t.mig_profile = 0, t.milli = 0, t.memory_mib = 0;
    std::vector<TaskType>& v = acc[s.flavor];
    auto it = std::find_if(v.begin(), v.end(), [&](const TaskType& x) {
      return x.shape == t && x.cpu_milli == s.cpu_milli;
    });
    if (it == v.end()) {
      v.push_back({t, j.spec.replicas, s.cpu_milli, s.memory_mib});
    } else {
      it->weight += j.spec.replicas;
    }
  };
  // The pending and active sets, not jobs(): that one grows with history.
  for (JobId id : state.pending()) add(*state.FindJob(id));
  for (JobId id : state.active()) add(*state.FindJob(id));
  WorkloadMix mix;
  for (auto& [f, v] : acc) {
    auto key = [](const TaskType& t) {
      const TaskShape& s = t.shape;
      return std::tuple(static_cast<int>(s.kind), s.gpus, s.mig_profile, s.milli, s.memory_mib, t.cpu_milli);
    };
    std::sort(v.begin(), v.end(), [&](const TaskType& a, const TaskType& b) {
      if (a.weight != b.weight) return a.weight > b.weight;
      return key(a) < key(b);
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
