// One scheduling cycle over synthetic clusters: nodes of 8 GPUs (10% MIG, 10% time-sliced),
// 50 tenants, mixed job shapes (bench/README in docs/benchmarks.md). Reports the cycle time and
// placements per second; it passes or fails on nothing.
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <tuple>

#include "model/builder.h"
#include "policy/placement/policies.h"
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

namespace gpupool {
namespace {

// One job a cycle, as the packing experiment schedules (sim/packing): `pods` jobs submitted one
// after another onto `nodes` idle 8-GPU nodes (96 CPUs, 1 TiB each; whole GPUs, pairs and
// fractions, all with CPU), each cycle's plan applied in full, every job kept. `kept`: through a
// KeptScheduler, whose session is carried from one cycle to the next; else Schedule(), which
// builds it over every node and active job each cycle. Time per iteration = all `pods` cycles.
void BM_OnePodCycles(benchmark::State& st, const char* policy, bool kept) {
  const int nodes = static_cast<int>(st.range(0)), pods = static_cast<int>(st.range(1));
  int placed = 0;
  for (auto _ : st) {
    st.PauseTiming();
    State s;
    AddDefaultPriorityClasses(s);
    for (int n = 0; n < nodes; ++n) {
      GP_CHECK(AddNode(s, "n" + std::to_string(n), {.flavor = "h100-80gb", .dynamic = true, .cpu_milli = 96000,
                                                    .memory_mib = 1 << 20}).ok());
    }
    GP_CHECK(AddTenant(s, "t", {{"h100-80gb", {nodes * 8}}}).ok());
    const ReplicaShape one = *WholeGpus(s, "h100-80gb", 1), two = *WholeGpus(s, "h100-80gb", 2);
    auto shape_of = [&](int i) {
      ReplicaShape shape = i % 3 == 0 ? one : i % 3 == 1 ? two : *FractionShape(s, "h100-80gb", 250 * (1 + (i / 3) % 3), 0);
      shape.cpu_milli = 4000 + 1000 * (i % 5);
      return shape;
    };
    SchedulerConfig cfg;
    cfg.placement = policy;
    cfg.preemption.enabled = false;
    cfg.backfill.enabled = false;
    cfg.mig_reconfigure = false;
    State sample = s;  // the mix of the shapes to come, as the experiment gives its pod list's
    for (int i = 0; i < 60; ++i) GP_CHECK(Submit(sample, {.tenant = "t", .shape = shape_of(i)}, Time()).ok());
    WorkloadMix mix = WorkloadMixOf(sample, cfg.max_workload_types);
    mix.fractions[*s.catalogue().Find("h100-80gb")] = {250, 500, 750};  // what gpupool pairs against
    cfg.workload = std::make_shared<const WorkloadMix>(std::move(mix));
    std::unique_ptr<KeptScheduler> keeper = kept ? std::make_unique<KeptScheduler>(cfg) : nullptr;
    st.ResumeTiming();
    placed = 0;
    for (int i = 0; i < pods; ++i) {
      const Time now = Time::FromSeconds(i + 1);
      GP_CHECK(Submit(s, {.tenant = "t", .shape = shape_of(i)}, now).ok());
      const Plan plan = keeper ? keeper->Cycle(s, now) : Schedule(s, cfg, now);
      placed += static_cast<int>(plan.placements.size());
      ApplyPlan(plan, now, s, [&](const Event& e) { return Apply(s, e); }, {.start_placed = true, .record_reasons = false});
    }
  }
  st.counters["placed"] = placed;
  st.counters["cycles_per_s"] = benchmark::Counter(pods, benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK_CAPTURE(BM_OnePodCycles, gpupool_rebuilt, "gpupool", false)->Args({1213, 4000})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_OnePodCycles, gpupool_kept, "gpupool", true)->Args({1213, 4000})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_OnePodCycles, fgd_rebuilt, "fgd", false)->Args({1213, 4000})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_OnePodCycles, fgd_kept, "fgd", true)->Args({1213, 4000})->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gpupool

BENCHMARK_MAIN();
