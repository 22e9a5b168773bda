#include "sim/packing/through_schedule.h"

#include <algorithm>
#include <memory>
#include <numeric>

#include "model/builder.h"
#include "policy/placement/policies.h"
#include "scheduler/schedule.h"

namespace gpupool::packing {
namespace {

constexpr uint32_t kModelMemoryMib = 32768;  // openb gives none; fractions ask for none

// The list's typical pods (FGD's target workload) as the core's mix, per flavor.
WorkloadMix MixOf(const std::vector<OpenbPod>& originals, const std::vector<FlavorId>& flavor_of_model,
                  bool one_flavor) {
  WorkloadMix mix;
  for (const TypicalPod& t : TypicalPods(originals)) {
    TaskType type;
    type.weight = t.count;
    type.cpu_milli = t.cpu_milli;
    type.memory_mib = t.memory_mib;
    if (t.num_gpu == 0) {
      type.shape.gpus = 0;  // CPU-only: all free GPU is fragment for it
    } else if (t.gpu_milli >= kMilliPerGpu) {
      type.shape.kind = ShapeKind::kWholeGpus;
      type.shape.gpus = static_cast<uint8_t>(t.num_gpu);
    } else {
      type.shape.kind = ShapeKind::kGpuFraction;
      type.shape.milli = static_cast<uint16_t>(t.gpu_milli);
    }
    for (size_t m = 0; m < flavor_of_model.size(); ++m) {
      if (one_flavor ? m == 0 : (t.models == 0 || ((t.models >> m) & 1))) {
        mix.by_flavor[flavor_of_model[m]].push_back(type);
      }
    }
  }
  for (const OpenbPod& p : originals) {
    if (p.num_gpu != 1 || p.gpu_milli <= 0 || p.gpu_milli >= kMilliPerGpu) continue;
    for (size_t m = 0; m < flavor_of_model.size(); ++m) {
      if (one_flavor ? m == 0 : (p.models == 0 || ((p.models >> m) & 1))) {
        mix.fractions[flavor_of_model[m]].push_back(p.gpu_milli);
      }
    }
  }
  return mix;
}

}  // namespace

Result<SeedRun> RunSeedThroughSchedule(const OpenbTrace& trace, const std::string& placement, uint64_t seed,
                                       double tune_ratio) {
  if (!(tune_ratio > 0) || tune_ratio > 10) return InvalidArgument("tune ratio out of range");
  std::vector<int> priority;
  const std::vector<OpenbPod> order = PodOrder(trace, seed, tune_ratio, &priority);
  std::vector<OpenbPod> originals = trace.pods;
  std::sort(originals.begin(), originals.end(), [](const OpenbPod& a, const OpenbPod& b) { return a.name < b.name; });
  const bool one_flavor = std::all_of(trace.pods.begin(), trace.pods.end(), [](const OpenbPod& p) { return p.models == 0; });

  Catalogue catalogue = Catalogue::BuiltIn();
  std::vector<FlavorId> flavor_of_model;
  for (size_t m = 0; m < (one_flavor ? 1 : trace.models.size()); ++m) {
    Result<FlavorId> f = catalogue.Add({.name = "openb-" + (one_flavor ? std::string("any") : trace.models[m]),
                                        .memory_mib = kModelMemoryMib});
    if (!f.ok()) return f.error();
    flavor_of_model.push_back(*f);
  }
  State state(std::move(catalogue));
  AddDefaultPriorityClasses(state);
  // Nodes in name order (EmptyNodes' order, which `priority` indexes), added by priority.
  std::vector<const OpenbNode*> by_name;
  for (const OpenbNode& n : trace.nodes) by_name.push_back(&n);
  std::sort(by_name.begin(), by_name.end(), [](const OpenbNode* a, const OpenbNode* b) { return a->name < b->name; });
  std::vector<size_t> by_priority(by_name.size());
  std::iota(by_priority.begin(), by_priority.end(), 0);
  std::sort(by_priority.begin(), by_priority.end(), [&](size_t a, size_t b) { return priority[a] < priority[b]; });
  std::map<FlavorId, int64_t> gpus;
  for (size_t i : by_priority) {
    const OpenbNode& on = *by_name[i];
    Node n;
    n.name = on.name;
    n.flavor = flavor_of_model[one_flavor ? 0 : static_cast<size_t>(on.model)];
    n.cpu_milli = on.cpu_milli;
    n.memory_mib = on.memory_mib;
    n.gpus.resize(static_cast<size_t>(on.gpus));
    for (Gpu& g : n.gpus) g.dynamic = true;
    Result<NodeId> id = state.AddNode(std::move(n));
    if (!id.ok()) return id.error();
    gpus[state.node(*id).flavor] += on.gpus;
  }
  std::map<std::string, QuotaGpus> quotas;
  for (const auto& [f, g] : gpus) quotas[state.catalogue().model(f).name] = {g};
  Result<TenantId> tenant = AddTenant(state, "t", quotas);
  if (!tenant.ok()) return tenant.error();

  SchedulerConfig cfg;
  cfg.placement = placement;
  cfg.preemption.enabled = false;
  cfg.backfill.enabled = false;
  cfg.mig_reconfigure = false;
  cfg.flavor_choice = FlavorChoice::kBest;  // a pod of several models: the best node over them
  cfg.workload = std::make_shared<const WorkloadMix>(MixOf(originals, flavor_of_model, one_flavor));
  GP_RETURN_IF_ERROR(Validate(cfg));

  SeedRun run;
  run.seed = seed;
  run.capacity_milli = trace.TotalGpuMilli();
  run.pods = static_cast<int>(order.size());
  int64_t arrived = 0, used = 0;
  Time now;
  for (const OpenbPod& p : order) {
    now = now + Duration::Seconds(1);
    arrived += p.GpuMilliTotal();
    JobSubmitted e;
    e.id = state.NextJobId();
    e.at = now;
    e.spec.tenant = *tenant;
    e.spec.priority_class = *state.FindPriorityClass("training");
    e.spec.name = p.name;
    ReplicaShape& s = e.spec.shape;
    if (p.num_gpu > 0 && p.gpu_milli < kMilliPerGpu) {
      s.kind = ShapeKind::kGpuFraction;
      s.milli = static_cast<uint16_t>(p.gpu_milli);
    } else {
      s.gpus = static_cast<uint8_t>(p.num_gpu);
    }
    s.cpu_milli = p.cpu_milli;
    s.memory_mib = p.memory_mib;
    if (p.num_gpu == 0 && s.cpu_milli == 0 && s.memory_mib == 0) s.memory_mib = 1;
    for (size_t m = 0; m < flavor_of_model.size(); ++m) {
      if (one_flavor || p.models == 0 || ((p.models >> m) & 1)) e.spec.flavors.push_back(flavor_of_model[m]);
    }
    s.flavor = e.spec.flavors.front();
    GP_RETURN_IF_ERROR(Apply(state, e));
    const Plan plan = Schedule(state, cfg, now);
    ApplyPlan(plan, now, state, [&](const Event& ev) { return Apply(state, ev); },
              {.start_placed = true, .record_reasons = false});
    if (state.FindJob(e.id)->state == JobState::kPending) {
      ++run.failed;
      GP_RETURN_IF_ERROR(Apply(state, JobFinished{e.id, JobState::kCancelled, now}));
    } else {
      used += p.GpuMilliTotal();
    }
    run.rows.push_back({arrived, used, 0.0, static_cast<double>(run.capacity_milli - used)});
  }
  return run;
}

}  // namespace gpupool::packing
