#include "policy/burst/burst.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "model/builder.h"
#include "model/events.h"

namespace gpupool {
namespace {

constexpr int64_t kOne = 1'000'000;            // one currency unit in micros
const Time kDay10 = Time::FromSeconds(10 * 86'400);  // a window boundary for a 24 h period

Time At(Duration d) { return kDay10 + d; }
Duration Min(int64_t m) { return Duration::Minutes(m); }

// Tenants a and b; an h100 offer of 8-GPU nodes at 1.00 per GPU-hour, 5 minutes to provision,
// 4 nodes of capacity. a's policy: h100, 32 GPUs, 100.00 per day, 10 minutes wait and idle.
class BurstTest : public ::testing::Test {
 protected:
  void SetUp() override {
    AddDefaultPriorityClasses(s_);
    a_ = *AddTenant(s_, "a", {});
    b_ = *AddTenant(s_, "b", {});
    h100_ = *s_.catalogue().Find("h100-80gb");
    offers_[h100_] = {.flavor = h100_, .gpus_per_node = 8, .micros_per_gpu_hour = kOne,
                      .provisioning_delay = Min(5), .max_nodes = 4};
    policies_[a_] = {.flavors = {h100_}, .max_gpus = 32, .budget_micros = 100 * kOne,
                     .period = Duration::Hours(24), .max_wait = Min(10), .idle_timeout = Min(10)};
  }
  JobId Submit(TenantId t, int replicas, int gpus, Time at, Duration est = Duration::Hours(2),
               const std::string& pc = "training") {
    return *gpupool::Submit(s_, {.tenant = s_.tenant(t).name, .priority_class = pc,
                                 .shape = *WholeGpus(s_, "h100-80gb", gpus),
                                 .replicas = static_cast<uint16_t>(replicas), .estimated = est},
                            at);
  }
  // An on-demand node requested at `requested` that has not come up yet.
  BurstNode Coming(TenantId t, const std::string& id, Time requested, int gpus = 8) {
    return {.request_id = id, .tenant = t, .flavor = h100_, .gpus = gpus,
            .micros_per_gpu_hour = kOne, .requested = requested};
  }
  // An on-demand node that joined the state at `ready`.
  BurstNode Live(TenantId t, const std::string& name, Time ready) {
    const NodeId id = *s_.AddNode(MakeBurstNode(s_.catalogue(), offers_[h100_], t, name));
    BurstNode b = Coming(t, "req-" + name, ready + Min(-5));
    b.ready = ready;
    b.node = id;
    return b;
  }
  // Places `job` (one replica of `gpus` GPUs) on GPUs 0.. of `node`.
  void Place(JobId job, NodeId node, int gpus, Time at) {
    ReplicaPlacement p{.node = node};
    for (int g = 0; g < gpus; ++g) p.grants.push_back({.gpu = static_cast<uint16_t>(g)});
    ASSERT_TRUE(Apply(s_, JobAdmitted{job, {p}, AdmissionKind::kDedicated, at}).ok());
    ASSERT_TRUE(Apply(s_, JobStarted{job, at}).ok());
  }
  BurstDecision Plan(Time now) { return PlanBurst(s_, policies_, offers_, fleet_, now); }
  static bool Says(const BurstDecision& d, JobId job, const std::string& part) {
    return std::any_of(d.reasons.begin(), d.reasons.end(), [&](const auto& r) {
      return r.first == job && r.second.find(part) != std::string::npos;
    });
  }

  State s_;
  TenantId a_, b_;
  FlavorId h100_;
  std::map<FlavorId, OnDemandOffer> offers_;
  std::map<TenantId, BurstPolicy> policies_;
  std::vector<BurstNode> fleet_;
};

// --- cost ------------------------------------------------------------------------------------

TEST(BurstCost, ExactAndRoundedUp) {
  struct Row { int64_t gpus, price; Duration d; int64_t want; };
  const Row rows[] = {
      {1, kOne, Duration::Hours(1), kOne},              // one GPU-hour
      {8, 2 * kOne, Min(90), 24 * kOne},                // 8 x 2.00 x 1.5 h
      {3, kOne, Min(20), kOne},                         // 3 x 1/3 h: exact, no rounding
      {1, kOne, Duration::Millis(1), 1},                // 1e6 / 3.6e6 = 0.28 micro -> 1
      {1, 3'600'000, Duration::Millis(1), 1},           // exactly one micro
      {1, 3'600'001, Duration::Millis(1), 2},           // a hair over one -> 2
      {7, kOne, Duration::Seconds(1), 1945},            // 7e6 / 3600 = 1944.44 -> 1945
      {1, kOne, Duration(), 0},                         // nothing billed
      {0, kOne, Duration::Hours(1), 0},
      {16, kMaxBurstMicrosPerGpuHour, Duration::Hours(1'000'000'000), INT64_MAX},  // saturates
      {1, kOne, Duration::Infinite(), INT64_MAX},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(CostMicros(r.gpus, r.price, r.d), r.want) << r.gpus << " x " << r.price;
  }
}

TEST_F(BurstTest, NodeCostRunsFromReadyToReleaseOrNow) {
  BurstNode n = Coming(a_, "r1", At(Duration()));
  EXPECT_EQ(NodeCostMicros(n, At(Min(60))), 0);  // not ready: not billed
  n.ready = At(Min(5));
  EXPECT_EQ(NodeCostMicros(n, At(Min(65))), 8 * kOne);      // 8 GPUs x 1 h
  n.released = At(Min(35));
  EXPECT_EQ(NodeCostMicros(n, At(Min(600))), 4 * kOne);     // 8 GPUs x 30 min
  EXPECT_EQ(NodeCostMicros(n, At(Min(20))), 2 * kOne);      // a later release is cut at now
}

TEST(BurstWindow, AlignedToTheEpoch) {
  struct Row { int64_t now_s, period_s, want_s; };
  const Row rows[] = {
      {0, 86'400, 0},
      {86'399, 86'400, 0},
      {86'400, 86'400, 86'400},
      {10 * 86'400 + 5, 86'400, 10 * 86'400},
      {7'200 + 1, 3'600, 7'200},
      {-1, 3'600, -3'600},  // floor, not truncation, before the epoch
      {-3'600, 3'600, -3'600},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(BudgetWindowStart(Time::FromSeconds(r.now_s), Duration::Seconds(r.period_s)),
              Time::FromSeconds(r.want_s))
        << r.now_s << " / " << r.period_s;
  }
}

TEST_F(BurstTest, SpendCountsOnlyTheWindowAndTheTenant) {
  // Node 1 billed from 2 h before the window to 1 h into it: 1 h of 8 GPUs counts.
  BurstNode n1 = Coming(a_, "r1", At(Min(-180)));
  n1.ready = At(Min(-120));
  n1.released = At(Duration::Hours(1));
  // Node 2 live since 30 min into the window: 8 x 0.5 h at now = 1 h.
  BurstNode n2 = Coming(a_, "r2", At(Min(25)));
  n2.ready = At(Min(30));
  // Node 3: b's, not counted for a. Node 4: a's, never ready.
  BurstNode n3 = n2;
  n3.tenant = b_;
  n3.request_id = "r3";
  const std::vector<BurstNode> fleet = {n1, n2, n3, Coming(a_, "r4", At(Min(1)))};
  EXPECT_EQ(SpentMicros(fleet, a_, kDay10, At(Min(60))), 8 * kOne + 4 * kOne);
  EXPECT_EQ(SpentMicros(fleet, b_, kDay10, At(Min(60))), 4 * kOne);
}

// --- when to burst ---------------------------------------------------------------------------

TEST_F(BurstTest, WaitsLongerThanMaxWaitBeforeBursting) {
  struct Row { Duration waited; bool bursts; };
  const Row rows[] = {{Min(9), false}, {Min(10), false}, {Min(10) + Duration::Millis(1), true}};
  for (const Row& r : rows) {
    State saved = s_;
    const JobId j = Submit(a_, 1, 8, kDay10);
    const BurstDecision d = Plan(kDay10 + r.waited);
    EXPECT_EQ(d.provision.size(), r.bursts ? 1u : 0u) << ToString(r.waited);
    EXPECT_TRUE(d.reasons.empty());
    if (r.bursts) {
      EXPECT_EQ(d.provision[0], (ProvisionRequest{.tenant = a_, .flavor = h100_, .nodes = 1,
                                                  .gpus_per_node = 8, .for_job = j}));
    }
    s_ = saved;
  }
}

TEST_F(BurstTest, OnlyTenantsWithAPolicyAndItsFlavorsBurst) {
  Submit(b_, 1, 8, kDay10);  // b has no policy
  ASSERT_TRUE(gpupool::Submit(s_, {.tenant = "a", .shape = *WholeGpus(s_, "a100-40gb", 1)},
                              kDay10).ok());  // a may not burst on a100
  const BurstDecision d = Plan(At(Min(30)));
  EXPECT_TRUE(d.provision.empty());
  EXPECT_TRUE(d.reasons.empty());
}

TEST_F(BurstTest, WholeGangIsProvisioned) {
  // Nodes for all replicas: a replica needs its GPUs on one node.
  struct Row { int replicas, gpus, nodes; };
  const Row rows[] = {{1, 1, 1}, {1, 8, 1}, {3, 4, 2}, {4, 3, 2}, {5, 8, 5}};
  for (const Row& r : rows) {
    State saved = s_;
    offers_[h100_].max_nodes = 8;
    policies_[a_].max_gpus = 64;
    Submit(a_, r.replicas, r.gpus, kDay10, Duration::Hours(1));
    const BurstDecision d = Plan(At(Min(11)));
    ASSERT_EQ(d.provision.size(), 1u) << r.replicas << "x" << r.gpus;
    EXPECT_EQ(d.provision[0].nodes, r.nodes) << r.replicas << "x" << r.gpus;
    s_ = saved;
  }
}

TEST_F(BurstTest, HostResourcesLimitReplicasPerNode) {
  // 8 GPUs but 64 cores per node; each 1-GPU replica wants 24 cores: 2 replicas per node.
  offers_[h100_].cpu_milli = 64'000;
  ASSERT_TRUE(gpupool::Submit(s_, {.tenant = "a",
                                   .shape = [&] {
                                     ReplicaShape sh = *WholeGpus(s_, "h100-80gb", 1);
                                     sh.cpu_milli = 24'000;
                                     return sh;
                                   }(),
                                   .replicas = 3, .estimated = Duration::Hours(1)},
                              kDay10).ok());
  const BurstDecision d = Plan(At(Min(11)));
  ASSERT_EQ(d.provision.size(), 1u);
  EXPECT_EQ(d.provision[0].nodes, 2);
}

TEST_F(BurstTest, JobsThatNoOnDemandNodeCouldHoldAreExplained) {
  const JobId topo = *gpupool::Submit(
      s_, {.tenant = "a", .shape = *WholeGpus(s_, "h100-80gb", 4), .replicas = 3,
           .estimated = Duration::Hours(1), .topology = {.level = TopologyLevel::kNvlinkDomain}},
      kDay10);
  const JobId mig = *gpupool::Submit(
      s_, {.tenant = "a", .shape = *MigShape(s_, "h100-80gb", "1g.10gb"), .estimated = Min(60)},
      kDay10);
  const BurstDecision d = Plan(At(Min(11)));
  EXPECT_TRUE(d.provision.empty());
  EXPECT_TRUE(Says(d, topo, "needs 2 on-demand h100-80gb nodes but must run in one topology"));
  EXPECT_TRUE(Says(d, mig, "whole GPUs only"));
  offers_[h100_].gpus_per_node = 2;
  const JobId big = Submit(a_, 1, 4, kDay10);
  EXPECT_TRUE(Says(Plan(At(Min(11))), big, "does not fit an on-demand h100-80gb node (2 GPUs)"));
}

TEST_F(BurstTest, RequiredLabelsMustBeOffered) {
  Tenant t = s_.tenant(a_);
  t.required_labels = {"cuda=12.4"};
  ASSERT_TRUE(s_.UpdateTenant(t).ok());
  const JobId j = Submit(a_, 1, 8, kDay10);
  EXPECT_TRUE(Says(Plan(At(Min(11))), j, "lack the required label cuda=12.4"));
  offers_[h100_].labels = {"cuda=12.4"};
  EXPECT_EQ(Plan(At(Min(11))).provision.size(), 1u);
}

TEST_F(BurstTest, NoOfferIsExplained) {
  offers_.clear();
  const JobId j = Submit(a_, 1, 8, kDay10);
  EXPECT_TRUE(Says(Plan(At(Min(11))), j, "no on-demand offer for h100-80gb"));
}

// --- coverage --------------------------------------------------------------------------------

TEST_F(BurstTest, CapacityOnItsWayCoversWaitingJobs) {
  // Table: a's nodes in flight and idle GPUs on a live node (-1: no live node), the waiting
  // jobs (all alike), and how many new nodes that takes.
  struct Row { const char* name; int coming, live_idle_gpus, jobs, replicas, gpus, want_nodes; };
  const Row rows[] = {
      {"one node coming covers one 8-GPU job", 1, -1, 1, 1, 8, 0},
      {"one node coming, two 8-GPU jobs", 1, -1, 2, 1, 8, 1},
      {"two 4-GPU jobs share a coming node", 1, -1, 2, 1, 4, 0},
      {"idle GPUs on a live node cover", 0, 8, 1, 1, 8, 0},
      {"4 idle GPUs do not hold an 8-GPU replica", 0, 4, 1, 1, 8, 1},
      {"a busy live node covers nothing", 1, 0, 2, 1, 8, 1},
      {"a gang takes what is coming and asks for the rest", 1, -1, 1, 3, 8, 2},
      {"a gang takes idle GPUs and asks for the rest", 0, 4, 1, 3, 4, 1},
      {"nothing coming: leftover of a new node covers the next job", 0, -1, 2, 1, 4, 1},
  };
  for (const Row& r : rows) {
    State saved = s_;
    fleet_.clear();
    for (int i = 0; i < r.coming; ++i) {
      fleet_.push_back(Coming(a_, "c" + std::to_string(i), At(Min(1))));
    }
    if (r.live_idle_gpus >= 0) {
      fleet_.push_back(Live(a_, "od-0", At(Min(2))));
      if (r.live_idle_gpus < 8) {
        Place(Submit(a_, 1, 8 - r.live_idle_gpus, kDay10), fleet_.back().node,
              8 - r.live_idle_gpus, At(Min(3)));
      }
    }
    for (int i = 0; i < r.jobs; ++i) Submit(a_, r.replicas, r.gpus, kDay10);
    int nodes = 0;
    for (const ProvisionRequest& p : Plan(At(Min(11))).provision) nodes += p.nodes;
    EXPECT_EQ(nodes, r.want_nodes) << r.name;
    s_ = saved;
  }
}

TEST_F(BurstTest, AnotherTenantsNodesDoNotCover) {
  policies_[b_] = policies_[a_];
  fleet_.push_back(Coming(b_, "c0", At(Min(1))));
  Submit(a_, 1, 8, kDay10);
  EXPECT_EQ(Plan(At(Min(11))).provision.size(), 1u);
}

// --- limits ----------------------------------------------------------------------------------

TEST_F(BurstTest, MaxGpusCountsLiveAndInFlightNodes) {
  policies_[a_].max_gpus = 16;
  fleet_.push_back(Coming(a_, "c0", At(Min(1))));
  // 3 x 8 GPUs: one replica on the coming node, two on new ones: 16 more GPUs.
  const JobId j = Submit(a_, 3, 8, kDay10);
  const BurstDecision d = Plan(At(Min(11)));
  EXPECT_TRUE(d.provision.empty());
  EXPECT_TRUE(Says(d, j, "burst limit: 8 of 16 on-demand GPUs in use, this job needs 16 more"));
}

TEST_F(BurstTest, ProviderCapacityIsSharedByAllTenants) {
  policies_[b_] = policies_[a_];
  offers_[h100_].max_nodes = 2;
  fleet_.push_back(Coming(b_, "c0", At(Min(1))));
  const JobId j = Submit(a_, 2, 8, kDay10);
  EXPECT_TRUE(Says(Plan(At(Min(11))), j,
                   "burst capacity: 1 of 2 on-demand h100-80gb nodes in use, this job needs 2"));
}

TEST_F(BurstTest, BudgetRefusalSaysWhatIsSpentAndNeeded) {
  // Spent: a node of 8 GPUs at 1.00 for 1 h 33 m 45 s = 12.50. The job: 8 GPUs x 2 h, and the
  // node's 10 min idle tail after it: 17.33.
  policies_[a_].budget_micros = 20 * kOne;
  BurstNode old = Coming(a_, "r0", At(Min(1)));
  old.ready = At(Min(5));
  old.released = At(Min(5) + Duration::Seconds(5'625));
  fleet_.push_back(old);
  const JobId j = Submit(a_, 1, 8, At(Min(100)), Duration::Hours(2));
  const BurstDecision d = Plan(At(Min(120)));
  EXPECT_TRUE(d.provision.empty());
  EXPECT_TRUE(Says(d, j, "burst budget: 12.50 of 20.00 spent or committed, this job needs 17.33"))
      << (d.reasons.empty() ? "" : d.reasons[0].second);
}

TEST_F(BurstTest, BudgetCountsWhatLiveAndComingNodesWillCost) {
  // Budget 16.00; every node also costs its 10 min idle tail. A coming node for a 30-min job
  // commits 8 GPUs x (1 h, the minimum, + 10 min) = 9.33; a live node runs a job expected to end
  // in 30 min: 8 x 40 min = 5.33, already spent 8 x 10 min = 1.33. A new 8-GPU job for 1 h needs
  // 9.33: 1.33 + 9.33 + 5.33 + 9.33 > 16.
  policies_[a_].budget_micros = 16 * kOne;
  policies_[a_].max_gpus = 64;
  const JobId first = Submit(a_, 1, 8, kDay10, Min(30));
  BurstNode c = Coming(a_, "c0", At(Min(11)));
  c.for_job = first;
  fleet_.push_back(c);
  fleet_.push_back(Live(a_, "od-0", At(Min(10))));
  Place(Submit(a_, 1, 8, kDay10, Min(30)), fleet_.back().node, 8, At(Min(20)));  // ends at 50
  Submit(a_, 1, 8, kDay10, Min(60));  // the first is covered by c0; this one is not
  const BurstDecision d = Plan(At(Min(20)));
  EXPECT_TRUE(d.provision.empty());
  ASSERT_EQ(d.reasons.size(), 1u);
  EXPECT_EQ(d.reasons[0].second, "burst budget: 16.00 of 16.00 spent or committed, this job "
                                 "needs 9.33");
  policies_[a_].budget_micros = 26 * kOne;  // 1.33 + 9.33 + 5.33 + 9.33 = 25.33 fits
  EXPECT_EQ(Plan(At(Min(20))).provision.size(), 1u);
}

TEST_F(BurstTest, BudgetIsPerWindow) {
  // Yesterday's spend does not count today.
  policies_[a_].budget_micros = 10 * kOne;
  BurstNode old = Coming(a_, "r0", At(Min(-300)));
  old.ready = At(Min(-240));
  old.released = At(Min(-60));  // 8 x 3 h = 24.00, all yesterday
  fleet_.push_back(old);
  Submit(a_, 1, 8, kDay10, Min(60));
  EXPECT_EQ(Plan(At(Min(11))).provision.size(), 1u);
}

// --- releases --------------------------------------------------------------------------------

TEST_F(BurstTest, IdleTimeoutReleases) {
  // Idle since max(last_busy, ready); released once idle for idle_timeout (10 min).
  struct Row { Duration ready, last_busy, now; bool busy, released; };
  const Row rows[] = {
      {Min(0), Min(0), Min(9), false, false},
      {Min(0), Min(0), Min(10), false, true},
      {Min(0), Min(5), Min(14), false, false},  // a job left at 5
      {Min(0), Min(5), Min(15), false, true},
      {Min(0), Min(0), Min(60), true, false},   // never while a job runs
  };
  for (const Row& r : rows) {
    State saved = s_;
    fleet_ = {Live(a_, "od-0", At(r.ready))};
    fleet_[0].last_busy = At(r.last_busy);
    if (r.busy) Place(Submit(a_, 1, 1, kDay10, Min(600)), fleet_[0].node, 1, At(Min(1)));
    const BurstDecision d = Plan(At(r.now));
    EXPECT_EQ(d.release.size(), r.released ? 1u : 0u) << ToString(r.now);
    s_ = saved;
  }
}

TEST_F(BurstTest, TrackBurstUseMarksBusyNodes) {
  fleet_ = {Live(a_, "od-0", At(Min(0))), Live(a_, "od-1", At(Min(0)))};
  Place(Submit(a_, 1, 1, kDay10, Min(600)), fleet_[0].node, 1, At(Min(1)));
  TrackBurstUse(s_, fleet_, At(Min(7)));
  EXPECT_EQ(fleet_[0].last_busy, At(Min(7)));
  EXPECT_EQ(fleet_[1].last_busy, Time());
  // od-0 busy, od-1 idle since it was ready: at 10 min only od-1 goes.
  EXPECT_EQ(Plan(At(Min(10))).release, std::vector<NodeId>{fleet_[1].node});
}

TEST_F(BurstTest, SpentBudgetReleasesWhatItDoesNotPayFor) {
  // a: budget 12.00. od-0 runs a job expected to end at 601 min, od-3 one that was expected to
  // end at 21 min and still runs, od-4 one without an estimate; each has run 8 GPUs for 30 min
  // (4.00), so the budget is spent at 30 min. od-3 and od-4 go (their jobs are past what the
  // budget paid for, or it never could); od-0's release waits for its job, up to its expected
  // end. b's node stays, and so does a's free node (it spends nothing).
  policies_[a_].budget_micros = 12 * kOne;
  policies_[b_] = policies_[a_];
  policies_[b_].budget_micros = 100 * kOne;
  fleet_ = {Live(a_, "od-0", At(Min(0))), Live(b_, "od-1", At(Min(0))), Live(a_, "od-2", At(Min(0))),
            Live(a_, "od-3", At(Min(0))), Live(a_, "od-4", At(Min(0)))};
  fleet_[2].micros_per_gpu_hour = 0;
  Place(Submit(a_, 1, 8, kDay10, Min(600)), fleet_[0].node, 8, At(Min(1)));
  Place(Submit(b_, 1, 8, kDay10, Min(600)), fleet_[1].node, 8, At(Min(1)));
  Place(Submit(a_, 1, 8, kDay10, Min(600)), fleet_[2].node, 8, At(Min(1)));
  Place(Submit(a_, 1, 8, kDay10, Min(20)), fleet_[3].node, 8, At(Min(1)));
  Place(Submit(a_, 1, 8, kDay10, Duration::Infinite()), fleet_[4].node, 8, At(Min(1)));
  EXPECT_TRUE(Plan(At(Min(29))).release.empty());
  const BurstDecision d = Plan(At(Min(30)));
  EXPECT_EQ(d.release, (std::vector<NodeId>{fleet_[3].node, fleet_[4].node}));
  EXPECT_EQ(d.deadlines.at(fleet_[0].node), At(Min(601)));  // no new job past what is paid
  EXPECT_EQ(d.deadlines.at(fleet_[3].node), At(Min(30)));   // none at all
  EXPECT_EQ(d.deadlines.count(fleet_[2].node), 0u);         // free: no deadline
  EXPECT_EQ(Plan(At(Min(601))).release,
            (std::vector<NodeId>{fleet_[0].node, fleet_[3].node, fleet_[4].node}));
}

// Issue 14, item 9: every job on an on-demand node is paid for. A node is paid until its jobs'
// latest expected end (an idle one: not beyond now); a waiting job the rooms cover is charged
// what running there longer costs, and the node's deadline moves to its expected end; one the
// budget cannot pay for is refused, and the deadline stays.
TEST_F(BurstTest, DeadlinesSayWhatTheBudgetPaysFor) {
  policies_[a_].budget_micros = 30 * kOne;
  fleet_ = {Live(a_, "od-0", At(Min(0))), Live(a_, "od-1", At(Min(0)))};
  fleet_[1].last_busy = At(Min(15));                                          // a job left at 15
  Place(Submit(a_, 1, 4, kDay10, Min(180)), fleet_[0].node, 4, At(Min(0)));  // until 180 min
  // At 20 min: spent 2 x 8 x 20 min = 5.33; od-0 commits 8 x (160 + 10) min = 22.67, od-1 the
  // last 5 min of its idle tail, 0.67: 28.67 of 30.00 before any new job.
  BurstDecision d = Plan(At(Min(20)));
  EXPECT_EQ(d.deadlines.at(fleet_[0].node), At(Min(180)));
  EXPECT_EQ(d.deadlines.at(fleet_[1].node), At(Min(20)));
  EXPECT_EQ(OnDemandDeadlines(s_, policies_, offers_, fleet_, At(Min(20))), d.deadlines);
  // A 4-GPU job of 1 h fits od-0's free half inside what is paid: no extra cost, no new node.
  const JobId fits = Submit(a_, 1, 4, At(Min(5)), Min(60));
  d = Plan(At(Min(20)));
  EXPECT_TRUE(d.provision.empty());
  EXPECT_TRUE(d.reasons.empty());
  EXPECT_EQ(d.deadlines.at(fleet_[0].node), At(Min(180)));
  EXPECT_EQ(d.deadlines.at(fleet_[1].node), At(Min(20)));
  // An 8-GPU job of 1 h keeps od-1 from 15 min (idle since) to 80 min, and then its tail: 8 x
  // 65 min = 8.67 more, over the budget: refused, and od-1 stays closed. With a budget of 40.00
  // it is paid for: od-1 takes jobs that end by 80 min.
  const JobId more = Submit(a_, 1, 8, At(Min(6)), Min(60));
  d = Plan(At(Min(20)));
  EXPECT_TRUE(Says(d, more, "burst budget: 28.67 of 30.00 spent or committed, this job needs 8.67"))
      << (d.reasons.empty() ? "" : d.reasons[0].second);
  EXPECT_EQ(d.deadlines.at(fleet_[1].node), At(Min(20)));
  policies_[a_].budget_micros = 40 * kOne;
  d = Plan(At(Min(20)));
  EXPECT_TRUE(d.reasons.empty());
  EXPECT_TRUE(d.provision.empty());
  EXPECT_EQ(d.deadlines.at(fleet_[1].node), At(Min(80)));
  (void)fits;
}

TEST_F(BurstTest, AJobWithoutAnEstimateDoesNotBurst) {
  const JobId j = Submit(a_, 1, 8, kDay10, Duration::Infinite());
  BurstDecision d = Plan(At(Min(11)));
  EXPECT_TRUE(d.provision.empty());
  EXPECT_TRUE(Says(d, j, "no duration estimate"));
  offers_[h100_].micros_per_gpu_hour = 0;  // free capacity needs no budget
  EXPECT_EQ(Plan(At(Min(11))).provision.size(), 1u);
}

TEST_F(BurstTest, WithoutAPolicyIdleNodesGoAtOnce) {
  fleet_ = {Live(b_, "od-0", At(Min(0))), Live(b_, "od-1", At(Min(0)))};
  Place(Submit(b_, 1, 1, kDay10, Min(600)), fleet_[1].node, 1, At(Min(1)));
  EXPECT_EQ(Plan(At(Min(1))).release, std::vector<NodeId>{fleet_[0].node});
}

// --- order -----------------------------------------------------------------------------------

TEST_F(BurstTest, HigherPriorityThenLongerWaitGetsScarceCapacity) {
  policies_[b_] = policies_[a_];
  offers_[h100_].max_nodes = 2;
  const JobId old_batch = Submit(a_, 1, 8, kDay10, Min(60), "batch");
  const JobId newer_training = Submit(b_, 1, 8, At(Min(1)), Min(60));
  const JobId newest_training = Submit(a_, 1, 8, At(Min(2)), Min(60));
  const BurstDecision d = Plan(At(Min(20)));
  ASSERT_EQ(d.provision.size(), 2u);
  EXPECT_EQ(d.provision[0].for_job, newer_training);
  EXPECT_EQ(d.provision[1].for_job, newest_training);
  EXPECT_TRUE(Says(d, old_batch, "burst capacity: 2 of 2"));
}

TEST_F(BurstTest, DecisionDoesNotDependOnFleetOrder) {
  policies_[b_] = policies_[a_];
  policies_[a_].max_gpus = 64;
  offers_[h100_].max_nodes = 10;
  fleet_ = {Coming(a_, "c2", At(Min(3)), 4), Coming(a_, "c1", At(Min(3)), 8),
            Coming(b_, "c0", At(Min(1))), Live(a_, "od-0", At(Min(0))),
            Live(a_, "od-1", At(Min(0))), Live(b_, "od-2", At(Min(0)))};
  Place(Submit(a_, 1, 2, kDay10, Min(600)), fleet_[4].node, 2, At(Min(1)));
  for (int i = 0; i < 6; ++i) Submit(i % 2 ? a_ : b_, 1 + i % 3, 2 + 2 * (i % 3), At(Min(i)));
  const BurstDecision want = Plan(At(Min(30)));
  std::vector<BurstNode> fleet = fleet_;
  std::sort(fleet.begin(), fleet.end(),
            [](const BurstNode& x, const BurstNode& y) { return x.request_id > y.request_id; });
  for (int i = 0; i < 6; ++i) {
    const BurstDecision got = PlanBurst(s_, policies_, offers_, fleet, At(Min(30)));
    EXPECT_EQ(got.provision, want.provision);
    EXPECT_EQ(got.release, want.release);
    EXPECT_EQ(got.reasons, want.reasons);
    std::rotate(fleet.begin(), fleet.begin() + 1, fleet.end());
  }
  EXPECT_FALSE(want.provision.empty());
  EXPECT_FALSE(want.release.empty());
}

// --- validation and the node -----------------------------------------------------------------

TEST_F(BurstTest, ValidationNamesTheBadField) {
  EXPECT_TRUE(ValidateBurstPolicy(policies_[a_], s_.catalogue()).ok());
  EXPECT_TRUE(ValidateOffer(offers_[h100_], s_.catalogue()).ok());
  BurstPolicy p = policies_[a_];
  p.period = Duration();
  EXPECT_NE(ValidateBurstPolicy(p, s_.catalogue()).error().message.find("period"),
            std::string::npos);
  OnDemandOffer o = offers_[h100_];
  o.gpus_per_node = 17;
  EXPECT_NE(ValidateOffer(o, s_.catalogue()).error().message.find("gpus_per_node"),
            std::string::npos);
  o = offers_[h100_];
  o.micros_per_gpu_hour = kMaxBurstMicrosPerGpuHour + 1;
  EXPECT_FALSE(ValidateOffer(o, s_.catalogue()).ok());
}

TEST_F(BurstTest, MakeBurstNodeIsDedicatedWholeAndLabelled) {
  offers_[h100_].labels = {"cuda=12.4"};
  offers_[h100_].memory_mib = 1 << 20;
  const Node n = MakeBurstNode(s_.catalogue(), offers_[h100_], a_, "od-h100-80gb-0001");
  EXPECT_EQ(n.dedicated_to, a_);
  EXPECT_EQ(n.flavor, h100_);
  ASSERT_EQ(n.gpus.size(), 8u);
  EXPECT_TRUE(std::all_of(n.gpus.begin(), n.gpus.end(),
                          [](const Gpu& g) { return g.mode == GpuMode::kWhole; }));
  EXPECT_EQ(n.labels, (std::vector<std::string>{"cuda=12.4", "gpupool.io/on-demand=true"}));
  EXPECT_TRUE(n.on_demand());
  EXPECT_EQ(n.memory_mib, 1 << 20);
  EXPECT_TRUE(s_.AddNode(n).ok());
}

}  // namespace
}  // namespace gpupool
