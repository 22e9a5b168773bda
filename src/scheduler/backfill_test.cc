// Backfill holds on random clusters of whole, MIG, shared and dynamic GPUs: what a hold keeps of each
// GPU is enough for the held job when the hold starts, however many jobs that end later took
// what the held GPUs still offered.
#include "scheduler/backfill.h"

#include <gtest/gtest.h>

#include <iostream>
#include <memory>
#include <random>

#include "model/builder.h"
#include "scheduler/schedule.h"

namespace gpupool {
namespace {

class HoldWorld {
 public:
  explicit HoldWorld(uint64_t seed) : rng_(seed) {}

  int Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  // Whole GPUs (now and then none), a MIG profile or a fraction, asking for CPU half of the time.
  ReplicaShape RandomShape() {
    static const char* kProfiles[] = {"1g.10gb", "2g.20gb", "3g.40gb"};
    ReplicaShape shape;
    switch (Uniform(0, 2)) {
      case 0: shape = *WholeGpus(state, "h100-80gb", Uniform(1, 2)); break;
      case 1: shape = *MigShape(state, "h100-80gb", kProfiles[Uniform(0, 2)]); break;
      default:
        shape = *FractionShape(state, "h100-80gb", Uniform(1, 7) * 100, static_cast<uint32_t>(Uniform(1, 8) * 5000));
    }
    if (Uniform(0, 1)) shape.cpu_milli = Uniform(1, 8) * 1000;
    if (shape.kind == ShapeKind::kWholeGpus && Uniform(0, 9) == 0) {  // no GPU: CPU only
      shape.gpus = 0;
      shape.cpu_milli = Uniform(1, 8) * 1000;
    }
    return shape;
  }

  // A cluster of 1-3 nodes of 1-4 GPUs in mixed modes (a quarter of the nodes dynamic: their
  // GPUs not in MIG mode switch between whole and shared), filled by one cycle at t=0 with jobs
  // that run for 10 minutes to 2 hours.
  void Build() {
    AddDefaultPriorityClasses(state);
    int gpus = 0;
    for (int n = Uniform(1, 3); n-- > 0;) {
      const int g = Uniform(1, 4);
      const int mig = Uniform(0, g), shared = Uniform(0, g - mig);
      const int64_t cpu = Uniform(0, 1) ? Uniform(4, 24) * 1000 : 0;  // 0: not counted
      ASSERT_TRUE(AddNode(state, "n" + std::to_string(n),
                          {.flavor = "h100-80gb", .gpus = g, .mig_gpus = mig, .shared_gpus = shared,
                           .dynamic = Uniform(0, 3) == 0, .cpu_milli = cpu})
                      .ok());
      gpus += g;
    }
    ASSERT_TRUE(AddTenant(state, "a", {{"h100-80gb", {gpus}}}).ok());
    for (int j = Uniform(2, 12); j-- > 0;) {
      ASSERT_TRUE(Submit(state, {.tenant = "a", .priority_class = "inference", .shape = RandomShape(),
                                 .estimated = Duration::Seconds(Uniform(600, 7200))},
                         Time())
                      .ok());
    }
    ApplyPlan(Schedule(state, SchedulerConfig{}, Time()), Time(), state,
              [&](const Event& e) { return Apply(state, e); }, {.start_placed = true});
  }

  State state;

 private:
  std::mt19937_64 rng_;
};

// How many replicas of `t` (`cpu` each) the node takes, one after another (no re-partitioning).
int ReplicasThatFit(const Placer& placer, const TaskShape& t, int64_t cpu, const Session::NodeSlot& node) {
  Session::Keys keys = node.keys;
  int fit = 0;
  for (std::vector<int> g; node.cpu_free - fit * cpu >= cpu; ++fit) {
    if (node.pool == Session::kNone) break;
    if (Placer::HostOnly(t)) continue;  // CPU alone (an untracked CPU fits any number: capped below)
    if ((g = placer.GpusFor(t, keys, node.n)).empty()) break;
    for (int i : g) {  // by the task's kind: a flex GPU serves whole and shared tasks
      switch (t.kind) {
        case ShapeKind::kWholeGpus: keys[i] = GpuKey::Whole(true); break;
        case ShapeKind::kMigProfile: keys[i] = MigAfterTake(keys[i], FreeInstanceOf(keys[i], t.mig_profile)); break;
        case ShapeKind::kGpuFraction: keys[i] = SharedAfter(keys[i], t); break;
      }
    }
    if (fit > 64) break;
  }
  return fit;
}

TEST(BackfillHold, TheHeldJobStillFitsWhenItsHoldStarts) {
  int holds = 0, later_on_held = 0;
  for (uint64_t seed = 1; seed <= 1000; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    HoldWorld w(seed);
    w.Build();
    if (::testing::Test::HasFatalFailure()) return;
    State& st = w.state;
    const Time now = Time::FromSeconds(1);
    const JobId held_id = *Submit(st, {.tenant = "a", .shape = w.RandomShape(),
                                       .replicas = static_cast<uint16_t>(w.Uniform(1, 2)),
                                       .estimated = Duration::Seconds(3600)},
                                  now);
    std::vector<JobId> later;
    for (int k = w.Uniform(3, 12); k-- > 0;) {  // half of them small fractions, to crowd a held room
      const ReplicaShape shape = w.Uniform(0, 1) ? w.RandomShape()
                                                 : *FractionShape(st, "h100-80gb", w.Uniform(1, 3) * 100, 2000);
      later.push_back(*Submit(st, {.tenant = "a", .shape = shape, .estimated = Duration::Hours(24 * 30)}, now));
    }
    auto policy = MakePlacementPolicy("fgd", WorkloadMix{}, false);
    ASSERT_TRUE(policy.ok());
    Session s(st, **policy, now);
    Placer placer(s, /*mig_reconfigure=*/false);
    Backfill backfill(s, placer);
    const Job& held = *st.FindJob(held_id);
    const std::vector<uint32_t>& pools = s.EligiblePools(held);
    const size_t mark = s.Mark();
    if (placer.PlaceGang(held, pools, now + Duration::Seconds(3600)).ok) continue;  // not blocked
    s.RollbackTo(mark);
    const Time start = backfill.HoldFor(held, pools);
    if (start == Time::Never()) continue;
    ++holds;
    const std::vector<uint32_t> held_nodes = s.held_nodes();
    for (JobId id : later) {
      const Job& j = *st.FindJob(id);
      const size_t m = s.Mark();
      Placer::Outcome o = placer.PlaceGang(j, s.EligiblePools(j), now + Duration::Hours(24 * 30));
      if (!o.ok) {
        s.RollbackTo(m);
        continue;
      }
      for (const ReplicaPlacement& rp : o.placement) {
        later_on_held += std::count(held_nodes.begin(), held_nodes.end(), rp.node.value()) > 0;
      }
    }
    // At the hold's start: the running jobs due by then have ended.
    for (JobId id : st.active()) {
      const Job& r = *st.FindJob(id);
      if (r.state == JobState::kRunning && std::max(r.ExpectedEnd(), now) <= start) s.Release(r, r.placement);
    }
    const TaskShape t = Placer::TaskOf(st, held);
    int fit = 0;
    for (uint32_t n = 0; n < s.num_nodes(); ++n) {
      fit += ReplicasThatFit(placer, t, held.spec.shape.cpu_milli, s.slot(n));
    }
    EXPECT_GE(fit, held.spec.replicas) << "hold from " << start.millis() << " ms";
  }
  std::cout << "holds " << holds << ", later replicas on held nodes " << later_on_held << "\n";
  // Not vacuous: holds were taken, and later jobs used what held GPUs still offered.
  EXPECT_GT(holds, 100);
  EXPECT_GT(later_on_held, 50);
}

}  // namespace
}  // namespace gpupool
