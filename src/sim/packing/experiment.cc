#include "sim/packing/experiment.h"

#include "sim/packing/through_schedule.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <unordered_map>

namespace gpupool::packing {
namespace {


bool ByName(const OpenbPod& a, const OpenbPod& b) { return a.name < b.name; }

// What a node's score can depend on (the pod count only matters to Fits).
struct NodeKey {
  int64_t cpu, mem;
  int model, gpus;
  std::array<int32_t, kMaxGpusPerNode> idle;
  std::array<int32_t, kMaxGpusPerNode + 1> tags;
  friend bool operator==(const NodeKey&, const NodeKey&) = default;
};
struct NodeKeyHash {
  size_t operator()(const NodeKey& k) const {
    uint64_t h = 1469598103934665603ull;
    auto mix = [&h](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    mix(static_cast<uint64_t>(k.cpu));
    mix(static_cast<uint64_t>(k.mem));
    mix((static_cast<uint64_t>(k.model) << 8) | static_cast<uint64_t>(k.gpus));
    for (int g = 0; g < k.gpus; ++g) mix(static_cast<uint64_t>(k.idle[g]));
    for (int32_t t : k.tags) mix(static_cast<uint64_t>(t));
    return static_cast<size_t>(h);
  }
};

NodeKey KeyOf(const NodeState& n) { return {n.cpu_left, n.mem_left, n.model, n.gpus, n.idle, n.tags}; }

}  // namespace

std::vector<OpenbPod> PodOrder(const OpenbTrace& trace, uint64_t seed, double tune_ratio,
                               std::vector<int>* node_priority) {
  std::vector<OpenbPod> sorted = trace.pods;
  std::sort(sorted.begin(), sorted.end(), ByName);  // byte order, as Go sorts strings
  std::mt19937_64 rng(seed);
  rng();  // the simulator draws one number right after seeding (kept for the same structure)
  std::vector<OpenbPod> order = sorted;
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[Below(rng, i)]);
  // Tune: re-sample the name-sorted originals until the next sample's per-GPU milli would pass
  // the target; that sample is dropped (§1.5).
  const int64_t target = static_cast<int64_t>(std::llround(tune_ratio * static_cast<double>(trace.TotalGpuMilli())));
  int64_t total = 0;
  for (const OpenbPod& p : sorted) total += p.GpuMilliTotal();
  for (int i = 0; total < target && !sorted.empty(); ++i) {
    OpenbPod copy = sorted[Below(rng, sorted.size())];
    if (total + copy.gpu_milli > target) break;
    total += copy.GpuMilliTotal();
    copy.name += "-tuned-" + std::to_string(i);
    order.push_back(std::move(copy));
  }
  if (node_priority != nullptr) {
    // A random permutation of the nodes (in name order): ties go to the smallest priority.
    std::vector<int> perm(trace.nodes.size());
    std::iota(perm.begin(), perm.end(), 0);
    for (size_t i = perm.size(); i > 1; --i) std::swap(perm[i - 1], perm[Below(rng, i)]);
    *node_priority = std::move(perm);
  }
  return order;
}

Result<SeedRun> RunSeed(const OpenbTrace& trace, const std::string& policy_name, uint64_t seed,
                        double tune_ratio) {
  if (policy_name.rfind("schedule:", 0) == 0) {  // the daemon's scheduler (through_schedule.h)
    return RunSeedThroughSchedule(trace, policy_name.substr(9), seed, tune_ratio);
  }
  if (!(tune_ratio > 0) || tune_ratio > 10) return InvalidArgument("tune ratio out of range");
  std::vector<NodeState> nodes = EmptyNodes(trace);
  std::vector<int> priority;
  const std::vector<OpenbPod> order = PodOrder(trace, seed, tune_ratio, &priority);
  std::vector<OpenbPod> originals = trace.pods;
  std::sort(originals.begin(), originals.end(), ByName);
  const std::vector<TypicalPod> types = TypicalPods(originals);
  PolicyContext ctx{&nodes, &types, &originals, seed};
  Result<std::unique_ptr<PackPolicy>> policy = MakePackPolicy(policy_name, ctx);
  if (!policy.ok()) return policy.error();

  SeedRun run;
  run.seed = seed;
  run.capacity_milli = trace.TotalGpuMilli();
  run.pods = static_cast<int>(order.size());
  run.rows.reserve(order.size());
  std::vector<double> frag(nodes.size());
  double frag_total = 0;
  int64_t idle_total = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    frag[i] = NodeFrag(nodes[i], types);
    frag_total += frag[i];
    idle_total += nodes[i].IdleTotal();
  }
  int64_t arrived = 0, used = 0;
  std::vector<int> feasible;
  std::unordered_map<NodeKey, std::pair<int64_t, GpuPick>, NodeKeyHash> memo;
  for (const OpenbPod& p : order) {
    arrived += p.GpuMilliTotal();
    feasible.clear();
    for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
      if (Fits(nodes[i], p)) feasible.push_back(i);
    }
    int chosen = -1;
    GpuPick pick;
    if (!feasible.empty()) {
      (*policy)->BeginPod(p);
      chosen = (*policy)->ChooseNode(feasible);
      if (chosen >= 0) {
        (*policy)->Score(chosen, nodes[chosen], p, pick);
      } else {
        // Scores are functions of the node's state: nodes in the same state are scored once.
        memo.clear();
        int64_t best = 0;
        for (int i : feasible) {
          GpuPick candidate;
          int64_t s;
          auto [it, fresh] = memo.try_emplace(KeyOf(nodes[i]), 0, GpuPick{});
          if (fresh) {
            s = (*policy)->Score(i, nodes[i], p, candidate);
            it->second = {s, candidate};
          } else {
            s = it->second.first;
            candidate = it->second.second;
          }
          if (chosen < 0 || s > best || (s == best && priority[i] < priority[chosen])) {
            chosen = i;
            best = s;
            pick = candidate;
          }
        }
      }
    }
    if (chosen < 0) {
      ++run.failed;
    } else {
      NodeState& n = nodes[chosen];
      idle_total -= n.IdleTotal();
      Place(n, p, pick);
      idle_total += n.IdleTotal();
      used += p.GpuMilliTotal();
      (*policy)->Placed(chosen, n);
      frag_total -= frag[chosen];
      frag[chosen] = NodeFrag(n, types);
      frag_total += frag[chosen];
    }
    run.rows.push_back({arrived, used, frag_total, static_cast<double>(idle_total)});
  }
  return run;
}

Curve Windowed(const SeedRun& run) {
  Curve c;
  const double cap = static_cast<double>(run.capacity_milli);
  std::map<int, std::vector<const PodRecord*>> by_level;
  for (const PodRecord& r : run.rows) {
    // arrived% rounded half to even, in integers: exact where floating point is not.
    const int64_t num = r.arrived_milli * 100, q = num / run.capacity_milli,
                  twice_rem = 2 * (num % run.capacity_milli);
    const int64_t level =
        twice_rem > run.capacity_milli || (twice_rem == run.capacity_milli && q % 2 == 1) ? q + 1 : q;
    by_level[static_cast<int>(level)].push_back(&r);
  }
  for (int a = 0; a <= 130; ++a) {
    std::vector<const PodRecord*> rows;
    if (by_level.count(a)) {
      rows = by_level[a];
    } else {
      for (int b = a - 1; b <= a + 1; ++b) {
        if (by_level.count(b)) rows.insert(rows.end(), by_level[b].begin(), by_level[b].end());
      }
    }
    if (rows.empty()) continue;
    double alloc = 0, frag = 0, ratio = 0;
    for (const PodRecord* r : rows) {
      alloc += static_cast<double>(r->used_milli) / cap * 100.0;
      frag += r->frag_milli / cap * 100.0;
      ratio += r->idle_milli > 0 ? 100.0 * r->frag_milli / r->idle_milli : 0.0;
    }
    const double n = static_cast<double>(rows.size());
    c.unallocated_pct[a] = 100.0 - alloc / n;
    c.frag_pct[a] = frag / n;
    c.frag_ratio_pct[a] = ratio / n;
  }
  return c;
}

}  // namespace gpupool::packing
