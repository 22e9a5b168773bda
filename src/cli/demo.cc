// `gpupool demo`: a small cluster, three tenants and a generated day of work, scheduled with a
// virtual clock by the same Schedule() the daemon will run. Prints what happened.
#include <iostream>
#include <random>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/table.h"
#include "model/builder.h"
#include "model/demo_cluster.h"
#include "sim/loop.h"

namespace gpupool::cli {
namespace {

// Each tenant has its own habits: research runs large gangs, product serves models on MIG
// slices and single GPUs, interns use small slices and shared fractions.
std::vector<Arrival> DemoWorkload(const State& s, int hours, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::vector<Arrival> out;
  for (int minute = 0; minute < hours * 60; minute += uni(1, 6)) {
    const int who = uni(0, 9);
    JobRequest r;
    std::string tenant;
    if (who < 3) {
      tenant = "research";
      const int gpus = std::array{4, 8, 8}[uni(0, 2)];
      r.shape = *WholeGpus(s, "h100-80gb", gpus);
      r.replicas = static_cast<uint16_t>(gpus == 8 ? uni(1, 3) : 1);
      r.priority_class = uni(0, 3) == 0 ? "batch" : "training";
      r.topology = {TopologyLevel::kBlock, false};
    } else if (who < 7) {
      tenant = "product";
      if (uni(0, 1)) {
        r.shape = *MigShape(s, "h100-80gb", std::array{"3g.40gb", "2g.20gb", "1g.10gb"}[uni(0, 2)]);
      } else {
        r.shape = *WholeGpus(s, "h100-80gb", uni(1, 2));
      }
      r.priority_class = uni(0, 2) == 0 ? "inference" : "training";
    } else {
      tenant = "interns";
      if (uni(0, 1)) {
        r.shape = *FractionShape(s, "a100-80gb", std::array{250, 500}[uni(0, 1)], 16384);
      } else {
        r.shape = *MigShape(s, "h100-80gb", "1g.10gb");
      }
      r.priority_class = "batch";
    }
    const int est_min = uni(20, 240);
    JobSpec spec;
    spec.tenant = *s.FindTenant(tenant);
    spec.priority_class = *s.FindPriorityClass(r.priority_class);
    spec.shape = r.shape;
    spec.replicas = r.replicas;
    spec.topology = r.topology;
    spec.estimated_duration = Duration::Minutes(est_min);
    spec.name = tenant + "-" + std::to_string(out.size());
    // Real run times scatter around the estimate (70% to 110% of it).
    const Duration actual = Duration::Seconds(est_min * 60 * uni(70, 110) / 100);
    out.push_back({Time::FromSeconds(minute * 60), std::move(spec), actual});
  }
  return out;
}

std::string Clock(Time t) {
  const int64_t m = t.seconds() / 60;
  std::string mm = std::to_string(m % 60);
  std::string hh = std::to_string(m / 60);
  return (hh.size() < 2 ? "0" : "") + hh + ":" + (mm.size() < 2 ? "0" : "") + mm;
}

}  // namespace

int Demo(const std::vector<std::string>& argv) {
  Result<Args> args = Args::Parse(argv, {"hours", "policy", "seed", "every", "help"}, {"help"});
  if (!args.ok()) {
    std::cerr << "gpupool demo: " << args.error().message << "\n" << kDemoUsage;
    return 2;
  }
  if (args->Has("help")) {
    std::cout << kDemoUsage;
    return 0;
  }
  Result<int64_t> hours = args->Int("hours", 8, 1, 24 * 14);
  Result<int64_t> seed = args->Int("seed", 7, 0, INT64_MAX);
  Result<int64_t> every = args->Int("every", 60, 1, 24 * 60);
  for (const Result<int64_t>* r : {&hours, &seed, &every}) {
    if (!r->ok()) {
      std::cerr << "gpupool demo: " << r->error().message << "\n";
      return 2;
    }
  }
  SchedulerConfig cfg;
  cfg.placement = args->Str("policy", "gpupool");
  if (Status st = Validate(cfg); !st.ok()) {
    std::cerr << "gpupool demo: " << st.error().message << "\n";
    return 2;
  }
  State state = DemoCluster();
  const GpuEq capacity = Capacity(state);
  SimLoop loop(state, cfg);
  for (Arrival& a : DemoWorkload(state, static_cast<int>(*hours), static_cast<uint64_t>(*seed))) {
    loop.Add(std::move(a));
  }
  std::cout << "gpupool demo: 10 nodes, " << ToString(capacity)
            << " GPUs (48 h100 whole, 16 h100 in MIG, 16 a100 time-sliced), 3 tenants, policy "
            << cfg.placement << ", seed " << *seed << "\n\n";
  Table ticks({"time", "arrived", "placed", "preempted", "mig-reconf", "finished", "pending",
               "allocated", "util%"});
  TickReport sum;
  int64_t minute = 0;
  loop.Run(Time::FromSeconds(*hours * 3600), Duration::Minutes(1), [&](const TickReport& r) {
    sum.arrived += r.arrived;
    sum.placed += r.placed;
    sum.preempted += r.preempted;
    sum.reconfigured += r.reconfigured;
    sum.finished += r.finished;
    if (minute++ % *every == 0) {
      ticks.Row({Clock(r.now), std::to_string(sum.arrived), std::to_string(sum.placed),
                 std::to_string(sum.preempted), std::to_string(sum.reconfigured),
                 std::to_string(sum.finished), std::to_string(r.pending), ToString(r.allocated),
                 Fixed(100.0 * r.allocated.ToGpus() / capacity.ToGpus(), 0)});
      sum = TickReport();
    }
  });
  ticks.Print(std::cout);

  std::cout << "\nper tenant\n";
  Table tenants({"tenant", "weight", "h100 guaranteed", "started", "finished", "preempted",
                 "gpu-hours", "mean wait (min)"});
  const State& end = loop.state();
  for (const Tenant& t : end.tenants()) {
    auto it = loop.totals().find(t.id);
    const TenantTotals tot = it == loop.totals().end() ? TenantTotals() : it->second;
    const FlavorQuota* q = t.quota(*end.catalogue().Find("h100-80gb"));
    tenants.Row({t.name, Fixed(t.weight_milli / 1000.0, 1), q ? ToString(q->guaranteed) : "0",
                 std::to_string(tot.started), std::to_string(tot.finished),
                 std::to_string(tot.preempted), Fixed(tot.gpu_seconds / 3600.0, 1),
                 Fixed(tot.started ? tot.wait_seconds / 60.0 / tot.started : 0.0, 1)});
  }
  tenants.Print(std::cout);

  const Plan& last = loop.last_plan();
  std::cout << "\nwaiting at the end (" << last.pending.size() << " jobs), first reasons:\n";
  for (size_t i = 0; i < last.pending.size() && i < 6; ++i) {
    const Job& j = *end.FindJob(last.pending[i].job);
    std::cout << "  " << j.spec.name << " [" << end.priority_class(j.spec.priority_class).name
              << "]: " << last.ReasonOf(last.pending[i]).message << "\n";
  }
  return 0;
}

}  // namespace gpupool::cli
