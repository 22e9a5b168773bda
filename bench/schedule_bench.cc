// One scheduling cycle over synthetic clusters: nodes of 8 GPUs (10% MIG, 10% time-sliced),
// 50 tenants, mixed job shapes (bench/README in docs/benchmarks.md). Reports the cycle time and
// placements per second; it passes or fails on nothing.
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <tuple>

#include "scheduler/schedule.h"
#include "sim/synthetic.h"

namespace gpupool {
namespace {

const State& CachedState(int nodes, int jobs, int preload_pct, bool dynamic, bool host) {
  static std::map<std::tuple<int, int, int, bool, bool>, std::unique_ptr<State>> cache;
  auto& slot = cache[{nodes, jobs, preload_pct, dynamic, host}];
  if (!slot) {
    SyntheticSpec spec;
    spec.dynamic = dynamic;
    spec.host = host;
    spec.nodes = nodes;
    spec.pending_jobs = jobs;
    spec.preload = preload_pct / 100.0;
    slot = std::make_unique<State>(MakeSyntheticState(spec));
  }
  return *slot;
}

// `dynamic`: the nodes not in MIG mode switch their GPUs between whole and shared use.
// `host`: nodes track CPU and memory and every job asks for some (SyntheticSpec::host), so FGD
// has host levels and searches node classes, not GPU keys.
void BM_Cycle(benchmark::State& st, const char* policy, bool dynamic = false, bool host = false) {
  const State& s = CachedState(static_cast<int>(st.range(0)), static_cast<int>(st.range(1)),
                               static_cast<int>(st.range(2)), dynamic, host);
  SchedulerConfig cfg;
  cfg.placement = policy;
  size_t placed = 0, classes = 0, holds = 0, preemptions = 0;
  double placed_gpus = 0;  // GPU-equivalents the plan admits
  for (auto _ : st) {
    Plan p = Schedule(s, cfg, Time::FromSeconds(3600));
    placed = p.placements.size();
    placed_gpus = 0;
    for (const PlaceDecision& d : p.placements) {
      placed_gpus += static_cast<double>(s.FindJob(d.job)->Eq(s.catalogue()).units()) / GpuEq::kUnitsPerGpu;
    }
    classes = p.stats.node_classes;
    holds = p.stats.holds;
    preemptions = p.preemptions.size();
    benchmark::DoNotOptimize(p);
  }
  st.counters["placed"] = static_cast<double>(placed);
  st.counters["placed_gpus"] = placed_gpus;
  st.counters["placements_per_s"] =
      benchmark::Counter(static_cast<double>(placed), benchmark::Counter::kIsIterationInvariantRate);
  st.counters["node_classes"] = static_cast<double>(classes);
  st.counters["holds"] = static_cast<double>(holds);
  st.counters["preemptions"] = static_cast<double>(preemptions);
}

void Matrix(benchmark::internal::Benchmark* b) {
  // nodes, pending jobs, % of capacity already running
  for (int nodes : {1000, 10000}) {
    for (int jobs : {10000, 100000}) {
      for (int preload : {0, 50}) b->Args({nodes, jobs, preload});
    }
  }
  b->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(0.5);
}

BENCHMARK_CAPTURE(BM_Cycle, fgd, "fgd")->Apply(Matrix);
BENCHMARK_CAPTURE(BM_Cycle, bestfit, "bestfit")->Apply(Matrix);
BENCHMARK_CAPTURE(BM_Cycle, gpupool, "gpupool")->Apply(Matrix);
BENCHMARK_CAPTURE(BM_Cycle, fgd_dynamic, "fgd", true)->Apply(Matrix);
BENCHMARK_CAPTURE(BM_Cycle, fgd_host, "fgd", false, true)->Apply(Matrix);
BENCHMARK_CAPTURE(BM_Cycle, gpupool_host, "gpupool", false, true)->Apply(Matrix);

}  // namespace
}  // namespace gpupool

BENCHMARK_MAIN();
