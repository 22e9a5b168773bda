#include "sim/packing/experiment.h"

#include <algorithm>
#include <memory>
#include <numeric>

#include "model/builder.h"
#include "policy/placement/policies.h"
#include "scheduler/schedule.h"

namespace gpupool::packing {
namespace {

bool ByName(const OpenbPod& a, const OpenbPod& b) { return a.name < b.name; }

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
    for (size_t m = 0; m < (one_flavor ? 1 : flavor_of_model.size()); ++m) {
      if (one_flavor || t.models == 0 || ((t.models >> m) & 1)) {
        mix.by_flavor[flavor_of_model[m]].push_back(type);
      } else {
        // The paper weighs every type on every node: one that cannot use this model sees all
        // of the node's free GPU as fragment, as a type of no GPU does.
        TaskType refuses = type;
        refuses.shape = TaskShape{.kind = ShapeKind::kWholeGpus, .gpus = 0};
        mix.by_flavor[flavor_of_model[m]].push_back(refuses);
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

Result<SeedRun> RunSeed(const OpenbTrace& trace, const std::string& placement, uint64_t seed,
                        double tune_ratio, int check_every) {
  if (!(tune_ratio > 0) || tune_ratio > 10) return InvalidArgument("tune ratio out of range");
  std::vector<int> priority;
  const std::vector<OpenbPod> order = PodOrder(trace, seed, tune_ratio, &priority);
  return RunOrder(trace, order, priority, placement, seed, nullptr, check_every);
}

Result<SeedRun> RunOrder(const OpenbTrace& trace, const std::vector<OpenbPod>& order,
                         const std::vector<int>& priority, const std::string& placement,
                         uint64_t seed, std::vector<PodPlacement>* placed, int check_every) {
  if (priority.size() != trace.nodes.size()) return InvalidArgument("node priority of the wrong size");
  std::vector<OpenbPod> originals = trace.pods;
  std::sort(originals.begin(), originals.end(), ByName);
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
  // Nodes in name order (which `priority` indexes), added by priority.
  std::vector<const OpenbNode*> by_name;
  for (const OpenbNode& n : trace.nodes) by_name.push_back(&n);
  std::sort(by_name.begin(), by_name.end(), [](const OpenbNode* a, const OpenbNode* b) { return a->name < b->name; });
  std::vector<size_t> by_priority(by_name.size());
  std::iota(by_priority.begin(), by_priority.end(), 0);
  std::sort(by_priority.begin(), by_priority.end(), [&](size_t a, size_t b) { return priority[a] < priority[b]; });
  std::vector<int> name_index;  // by node id
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
    if (name_index.size() <= id->value()) name_index.resize(id->value() + 1, -1);
    name_index[id->value()] = static_cast<int>(i);
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
  cfg.placement_seed = seed;
  cfg.flavor_choice = FlavorChoice::kBest;  // a pod of several models: the best node over them
  cfg.workload = std::make_shared<const WorkloadMix>(MixOf(originals, flavor_of_model, one_flavor));
  GP_RETURN_IF_ERROR(Validate(cfg));
  // One pod a cycle, each plan applied in full: the session is kept between cycles.
  KeptScheduler scheduler(cfg, check_every);

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
    const Plan plan = scheduler.Cycle(state, now);
    ApplyPlan(plan, now, state, [&](const Event& ev) { return Apply(state, ev); },
              {.start_placed = true, .record_reasons = false});
    const Job& job = *state.FindJob(e.id);
    if (job.state == JobState::kPending) {
      ++run.failed;
      GP_RETURN_IF_ERROR(Apply(state, JobFinished{e.id, JobState::kCancelled, now}));
      if (placed != nullptr) placed->push_back({});
    } else {
      used += p.GpuMilliTotal();
      if (placed != nullptr) {
        PodPlacement pp;
        pp.node = name_index[job.placement.front().node.value()];
        for (const GpuGrant& g : job.placement.front().grants) pp.gpu[pp.gpus++] = static_cast<int8_t>(g.gpu);
        placed->push_back(pp);
      }
    }
    run.rows.push_back({arrived, used});
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
    double alloc = 0;
    for (const PodRecord* r : rows) alloc += static_cast<double>(r->used_milli) / cap * 100.0;
    c.unallocated_pct[a] = 100.0 - alloc / static_cast<double>(rows.size());
  }
  return c;
}

uint64_t Below(std::mt19937_64& rng, uint64_t n) {
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do {
    x = rng();
  } while (x >= limit);
  return x % n;
}

}  // namespace gpupool::packing
