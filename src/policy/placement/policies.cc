#include "policy/placement/policies.h"

#include <algorithm>
#include <string>
#include <tuple>

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

namespace {

class FgdPolicy final : public PlacementPolicy {
 public:
  FgdPolicy(WorkloadMix mix, bool reconfig) : mix_(std::move(mix)), reconfig_(reconfig) {}
  std::string_view name() const override { return "fgd"; }
  int64_t Value(const NodeClassView& c) const override {
    auto it = mix_.by_flavor.find(c.flavor);
    if (it == mix_.by_flavor.end()) return 0;
    int64_t frag = 0;
    for (const TaskType& t : it->second) {
      frag += t.weight * Fragmentation(c, t.shape, reconfig_).units();
    }
    return frag;
  }
  int64_t Score(int64_t before, int64_t after) const override { return after - before; }

 private:
  WorkloadMix mix_;
  bool reconfig_;
};

GpuEq TotalFree(const NodeClassView& c) {
  GpuEq free;
  for (int i = 0; i < c.n; ++i) free += FreeEq(*c.model, c.keys[i]);
  return free;
}

class BestFitPolicy final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "bestfit"; }
  int64_t Value(const NodeClassView& c) const override { return TotalFree(c).units(); }
  int64_t Score(int64_t, int64_t after) const override { return after; }
};

class SpreadPolicy final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "spread"; }
  int64_t Value(const NodeClassView& c) const override { return TotalFree(c).units(); }
  int64_t Score(int64_t, int64_t after) const override { return -after; }
};

class FirstFitPolicy final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "firstfit"; }
  int64_t Value(const NodeClassView&) const override { return 0; }
  int64_t Score(int64_t, int64_t) const override { return 0; }
};

}  // namespace

const std::vector<std::string_view>& PlacementPolicyNames() {
  static const std::vector<std::string_view> names = {"fgd", "bestfit", "spread", "firstfit"};
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
    auto it = std::find_if(v.begin(), v.end(), [&](const TaskType& x) { return x.shape == t; });
    if (it == v.end()) {
      v.push_back({t, j.spec.replicas});
    } else {
      it->weight += j.spec.replicas;
    }
  };
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

}  // namespace gpupool
