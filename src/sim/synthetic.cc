#include "sim/synthetic.h"

#include <random>

#include "model/builder.h"
#include "scheduler/schedule.h"

namespace gpupool {
namespace {

// `host`: the job also asks for CPU and memory per replica, 4 to 16 CPUs and 32 to 128 GiB per
// GPU (a quarter of that for a MIG instance or a fraction); drawn after the rest, so the other
// fields are those of a run without.
JobSpec RandomJob(const State& s, std::mt19937_64& rng, int tenants, bool host) {
  auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const bool h100 = uni(0, 9) < 6;
  const FlavorId f = *s.catalogue().Find(h100 ? "h100-80gb" : "a100-80gb");
  const GpuModel& m = s.catalogue().model(f);
  JobSpec spec;
  spec.tenant = TenantId(static_cast<uint32_t>(uni(0, tenants - 1)));
  spec.priority_class = PriorityClassId(static_cast<uint16_t>(uni(0, 9) < 2 ? 0 : uni(1, 2)));
  spec.shape.flavor = f;
  const int kind = uni(0, 99);
  if (kind < 40) {
    spec.shape.gpus = 1;
  } else if (kind < 50) {
    spec.shape.gpus = 2;
  } else if (kind < 60) {
    spec.shape.gpus = 4;
  } else if (kind < 70) {
    spec.shape.gpus = 8;
  } else if (kind < 72) {
    spec.shape.gpus = 8;
    spec.replicas = 2;
  } else if (kind < 87) {
    spec.shape.kind = ShapeKind::kMigProfile;
    static const char* kProfiles[] = {"1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb", "7g.80gb"};
    spec.shape.mig_profile = static_cast<uint8_t>(m.ProfileIndexByName(kProfiles[uni(0, 4)]));
  } else {
    spec.shape.kind = ShapeKind::kGpuFraction;
    static const int kMilli[] = {100, 250, 250, 500, 500, 750};
    spec.shape.milli = static_cast<uint16_t>(kMilli[uni(0, 5)]);
    spec.shape.gpu_memory_mib = static_cast<uint32_t>(spec.shape.milli) * 80;
  }
  spec.estimated_duration = Duration::Minutes(uni(5, 24 * 60));
  spec.name = "synthetic";
  if (host) {
    const int per_gpu = uni(1, 4);
    const int64_t gpus = spec.shape.kind == ShapeKind::kWholeGpus ? spec.shape.gpus : 0;
    spec.shape.cpu_milli = gpus > 0 ? gpus * per_gpu * 4000 : per_gpu * 1000;
    spec.shape.memory_mib = gpus > 0 ? gpus * per_gpu * 32768 : per_gpu * 8192;
  }
  return spec;
}

}  // namespace

State MakeSyntheticState(const SyntheticSpec& spec) {
  State s;
  AddDefaultPriorityClasses(s);
  std::mt19937_64 rng(spec.seed);
  auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int t = 0; t < spec.tenants; ++t) {
    Tenant ten;
    ten.name = "tenant-" + std::to_string(t);
    ten.weight_milli = uni(1, 3) * 1000;
    ten.allow_gpu_cotenancy = uni(0, 1) == 1;
    GP_CHECK(s.AddTenant(ten).ok());
  }
  int64_t gpus[2] = {0, 0};
  for (int n = 0; n < spec.nodes; ++n) {
    const bool h100 = uni(0, 9) < 6;
    NodeTemplate t;
    t.flavor = h100 ? "h100-80gb" : "a100-80gb";
    const double r = std::uniform_real_distribution<double>(0, 1)(rng);
    if (r < spec.mig_node_share) {
      t.mig_gpus = 8;
    } else if (r < spec.mig_node_share + spec.shared_node_share) {
      t.shared_gpus = 8;
    }
    t.dynamic = spec.dynamic && t.mig_gpus == 0;
    if (spec.host) {
      t.cpu_milli = 224000;              // two 56-core sockets, hyper-threaded
      t.memory_mib = int64_t{2} << 20;  // 2 TiB
    }
    t.block = "block-" + std::to_string(n / 32);
    GP_CHECK(AddNode(s, "node-" + std::to_string(n), t).ok());
    gpus[h100 ? 0 : 1] += 8;
  }
  // Guarantees: random shares of guarantee_share x capacity per flavor.
  std::vector<int> share(spec.tenants);
  int total = 0;
  for (int& x : share) total += (x = uni(1, 10));
  const char* flavors[2] = {"h100-80gb", "a100-80gb"};
  for (int t = 0; t < spec.tenants; ++t) {
    Tenant ten = s.tenant(TenantId(t));
    for (int f = 0; f < 2; ++f) {
      FlavorQuota q;
      q.guaranteed = GpuEq::Gpus(static_cast<int64_t>(gpus[f] * spec.guarantee_share) *
                                 share[t] / total);
      ten.quotas[*s.catalogue().Find(flavors[f])] = q;
    }
    GP_CHECK(s.UpdateTenant(ten).ok());
  }
  if (spec.preload > 0) {
    const int64_t target = static_cast<int64_t>((gpus[0] + gpus[1]) * spec.preload);
    int64_t submitted = 0;
    while (submitted < target) {
      JobSpec js = RandomJob(s, rng, spec.tenants, spec.host);
      submitted += js.shape.Eq(s.catalogue()).units() * js.replicas / GpuEq::kUnitsPerGpu;
      GP_CHECK(Apply(s, JobSubmitted{s.NextJobId(), js, Time()}).ok());
    }
    SchedulerConfig cfg;
    cfg.backfill.enabled = false;
    cfg.preemption.enabled = false;
    const Plan p = Schedule(s, cfg, Time());
    ApplyPlan(p, Time(), s, [&](const Event& e) { return Apply(s, e); },
              {.start_placed = true, .record_reasons = false});
    // What did not fit is withdrawn, so the pending queue is exactly the requested one.
    for (const PendingNote& n : p.pending) {
      GP_CHECK(Apply(s, JobFinished{n.job, JobState::kCancelled, Time()}).ok());
    }
  }
  for (int j = 0; j < spec.pending_jobs; ++j) {
    GP_CHECK(Apply(s, JobSubmitted{s.NextJobId(), RandomJob(s, rng, spec.tenants, spec.host),
                                   Time::FromSeconds(1)})
                 .ok());
  }
  return s;
}

}  // namespace gpupool
