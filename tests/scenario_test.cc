// Scheduler scenario tables: admission, borrowing and reclaim, priority preemption, gangs, MIG,
// sharing, topology and backfill. Each row narrates the numbers it expects.
#include <gtest/gtest.h>

#include "support/scenario.h"

namespace gpupool::testing {
namespace {

NodeTemplate H100x8(std::string domain = "", std::string block = "") {
  return {.flavor = "h100-80gb", .gpus = 8, .nvlink_domain = std::move(domain),
          .block = std::move(block)};
}

std::vector<std::pair<std::string, NodeTemplate>> TwoH100Nodes() {
  return {{"n0", H100x8()}, {"n1", H100x8()}};
}

// --- admission and borrowing ----------------------------------------------------------------

TEST(Admission, WithinGuaranteeIsPlaced) {
  RunScenario({
      .nodes = TwoH100Nodes(),
      .tenants = {{"a", {{"h100-80gb", {8}}}}, {"b", {{"h100-80gb", {8}}}}},
      .pending = {{"j", "a", "8xh100-80gb"}},
      .placed = {"j"},
  });
}

TEST(Borrowing, IdleGuaranteeOfOthersIsBorrowed) {
  // a: guaranteed 8 of 16; b idle. a's 12 GPUs: 8 guaranteed + 4 borrowed from b.
  const Plan p = RunScenario({
      .nodes = TwoH100Nodes(),
      .tenants = {{"a", {{"h100-80gb", {8}}}}, {"b", {{"h100-80gb", {8}}}}},
      .pending = {{"j1", "a", "8xh100-80gb"}, {"j2", "a", "4xh100-80gb"}},
      .placed = {"j1", "j2"},
  });
  ASSERT_EQ(p.placements.size(), 2u);
  EXPECT_EQ(p.placements[0].kind, AdmissionKind::kGuaranteed);
  EXPECT_EQ(p.placements[1].kind, AdmissionKind::kBorrowed);
}

TEST(Borrowing, BorrowLimitStopsTheTenant) {
  // a: guaranteed 4, borrow limit 2 -> at most 6. Jobs of 4 + 2 fit; the next 2 does not.
  RunScenario({
      .nodes = TwoH100Nodes(),
      .tenants = {{"a", {{"h100-80gb", {4, 2}}}}, {"b", {{"h100-80gb", {12}}}}},
      .pending = {{"j1", "a", "4xh100-80gb"}, {"j2", "a", "2xh100-80gb"},
                  {"j3", "a", "2xh100-80gb"}},
      .placed = {"j1", "j2"},
      .waiting = {{"j3", ReasonCode::kBorrowLimit}},
  });
}

TEST(Borrowing, LendLimitKeepsPartOfAnIdleGuarantee) {
  // b: guaranteed 12, lends at most 2. a: guaranteed 4. a can hold 4 + 2 = 6; the other 10
  // stay idle for b.
  RunScenario({
      .nodes = TwoH100Nodes(),
      .tenants = {{"a", {{"h100-80gb", {4}}}},
                  {"b", {{"h100-80gb", {12, std::nullopt, 2}}}}},
      .pending = {{"j1", "a", "4xh100-80gb"}, {"j2", "a", "2xh100-80gb"},
                  {"j3", "a", "1xh100-80gb"}},
      .placed = {"j1", "j2"},
      .waiting = {{"j3", ReasonCode::kNoLendableCapacity}},
  });
}

TEST(Borrowing, InferenceClassStaysWithinGuarantee) {
  RunScenario({
      .nodes = TwoH100Nodes(),
      .tenants = {{"a", {{"h100-80gb", {4}}}}, {"b", {{"h100-80gb", {12}}}}},
      .pending = {{"j1", "a", "4xh100-80gb", "inference"}, {"j2", "a", "1xh100-80gb", "inference"}},
      .placed = {"j1"},
      .waiting = {{"j2", ReasonCode::kMayNotBorrow}},
  });
}

TEST(FairShare, EqualWeightsSplitIdleCapacityEvenly) {
  // Neither tenant has a guarantee; 16 GPUs; each submits eight 1-GPU jobs and four more:
  // turns alternate, so each ends with 8.
  std::vector<JobLine> pending;
  for (int i = 0; i < 12; ++i) {
    pending.push_back({"a" + std::to_string(i), "a", "1xh100-80gb"});
    pending.push_back({"b" + std::to_string(i), "b", "1xh100-80gb"});
  }
  std::vector<std::string> placed;
  for (int i = 0; i < 8; ++i) {
    placed.push_back("a" + std::to_string(i));
    placed.push_back("b" + std::to_string(i));
  }
  RunScenario({
      .nodes = TwoH100Nodes(),
      .tenants = {{"a", {{"h100-80gb", {0}}}}, {"b", {{"h100-80gb", {0}}}}},
      .pending = pending,
      .placed = placed,
      .waiting = {{"a8", ReasonCode::kNoLendableCapacity}},
  });
}

TEST(FairShare, WeightTwoGetsTwiceTheIdleCapacity) {
  // Weights 2:1 on 12 idle GPUs -> 8 and 4.
  std::vector<JobLine> pending;
  for (int i = 0; i < 12; ++i) {
    pending.push_back({"h" + std::to_string(i), "heavy", "1xh100-80gb"});
    pending.push_back({"l" + std::to_string(i), "light", "1xh100-80gb"});
  }
  std::vector<std::string> placed;
  for (int i = 0; i < 8; ++i) placed.push_back("h" + std::to_string(i));
  for (int i = 0; i < 4; ++i) placed.push_back("l" + std::to_string(i));
  RunScenario({
      .nodes = {{"n0", H100x8()}, {"n1", {.flavor = "h100-80gb", .gpus = 4}}},
      .tenants = {{"heavy", {{"h100-80gb", {0}}}, 2000}, {"light", {{"h100-80gb", {0}}}, 1000}},
      .pending = pending,
      .placed = placed,
  });
}

// --- reclaim and priority preemption --------------------------------------------------------

TEST(Reclaim, OwnerTakesBackBorrowedCapacityFromTheNewestBorrower) {
  // a (guaranteed 8) borrowed b's 8: sixteen 1-GPU batch jobs started at t=0..15 min. b asks
  // for its 8: the 8 most recently started of a's jobs are preempted, a keeps its guarantee.
  const std::vector<JobLine> running = RunningBatchJobs("a", 16, 60);
  RunScenario({
      .nodes = TwoH100Nodes(),
      .tenants = {{"a", {{"h100-80gb", {8}}}}, {"b", {{"h100-80gb", {8}}}}},
      .running = running,
      .pending = {{"b0", "b", "8xh100-80gb"}},
      .placed = {"b0"},
      .preempted = {"a8", "a9", "a10", "a11", "a12", "a13", "a14", "a15"},
  });
}

TEST(Reclaim, NeverPreemptsATenantWithinItsGuarantee) {
  // a runs 8 = its guarantee; b (guaranteed 8) runs 8 and wants 1 more. b would be borrowing,
  // so it may not reclaim, and a is within its guarantee anyway: nothing is preempted.
  RunScenario({
      .nodes = TwoH100Nodes(),
      .tenants = {{"a", {{"h100-80gb", {8}}}}, {"b", {{"h100-80gb", {8}}}}},
      .running = {{"a0", "a", "8xh100-80gb", "batch"}, {"b0", "b", "8xh100-80gb"}},
      .pending = {{"b1", "b", "1xh100-80gb"}},
      .placed = {},
      .preempted = {},
      .waiting = {{"b1", ReasonCode::kNoLendableCapacity}},
  });
}

TEST(Reclaim, VictimsMustHaveRunTheMinimumTime) {
  // a's borrowed jobs started 1 minute before the cycle; the minimum runtime is 5 minutes.
  RunScenario({
      .nodes = TwoH100Nodes(),
      .tenants = {{"a", {{"h100-80gb", {8}}}}, {"b", {{"h100-80gb", {8}}}}},
      .running = {{"a0", "a", "8xh100-80gb", "batch", 1, 0, TopologyLevel::kNone, true, 3540},
                  {"a1", "a", "8xh100-80gb", "batch", 1, 0, TopologyLevel::kNone, true, 3540}},
      .pending = {{"b0", "b", "8xh100-80gb"}},
      .placed = {},
      .preempted = {},
      .waiting = {{"b0", ReasonCode::kInsufficientCapacity}},
  });
}

TEST(Reclaim, InferenceJobsAreNeverVictims) {
  RunScenario({
      .nodes = TwoH100Nodes(),
      .tenants = {{"a", {{"h100-80gb", {8}}}}, {"b", {{"h100-80gb", {8}}}}},
      .running = {{"a0", "a", "8xh100-80gb", "inference"}, {"a1", "a", "8xh100-80gb", "training"}},
      .pending = {{"b0", "b", "8xh100-80gb"}},
      .placed = {"b0"},
      .preempted = {"a1"},
  });
}

TEST(Priority, HigherPriorityPreemptsTheTenantsOwnLowerWork) {
  // a holds all 16 (guaranteed 16) with batch jobs; its inference job of 4 GPUs preempts the
  // four most recently started batch jobs, and nothing more.
  const std::vector<JobLine> running = RunningBatchJobs("a", 16, 1);
  RunScenario({
      .nodes = TwoH100Nodes(),
      .tenants = {{"a", {{"h100-80gb", {16}}}}},
      .running = running,
      .pending = {{"inf", "a", "4xh100-80gb", "inference"}},
      .placed = {"inf"},
      .preempted = {"a12", "a13", "a14", "a15"},
  });
}

TEST(Priority, EqualPriorityNeverPreempts) {
  RunScenario({
      .nodes = TwoH100Nodes(),
      .tenants = {{"a", {{"h100-80gb", {16}}}}},
      .running = {{"a0", "a", "8xh100-80gb"}, {"a1", "a", "8xh100-80gb"}},
      .pending = {{"a2", "a", "8xh100-80gb"}},
      .placed = {},
      .preempted = {},
      .waiting = {{"a2", ReasonCode::kNoLendableCapacity}},
  });
}

TEST(Priority, PreemptionPicksTheSmallestSetThatMakesRoom) {
  // n0 holds a 1-GPU and a 7-GPU batch job; n1 holds eight 1-GPU batch jobs, the newest
  // started. An 8-GPU inference job needs one whole node: freeing n0 takes 2 victims, n1 takes
  // 8. Greedy by newest-first would start on n1; minimisation must end with n0's two.
  RunScenario({
      .nodes = TwoH100Nodes(),
      .tenants = {{"a", {{"h100-80gb", {16}}}}},
      .running = {{"big", "a", "7xh100-80gb", "batch", 1, 0, TopologyLevel::kNone, true, 0},
                  {"s0", "a", "1xh100-80gb", "batch", 1, 0, TopologyLevel::kNone, true, 1},
                  {"t0", "a", "1xh100-80gb", "batch", 1, 0, TopologyLevel::kNone, true, 100},
                  {"t1", "a", "1xh100-80gb", "batch", 1, 0, TopologyLevel::kNone, true, 101},
                  {"t2", "a", "1xh100-80gb", "batch", 1, 0, TopologyLevel::kNone, true, 102},
                  {"t3", "a", "1xh100-80gb", "batch", 1, 0, TopologyLevel::kNone, true, 103},
                  {"t4", "a", "1xh100-80gb", "batch", 1, 0, TopologyLevel::kNone, true, 104},
                  {"t5", "a", "1xh100-80gb", "batch", 1, 0, TopologyLevel::kNone, true, 105},
                  {"t6", "a", "1xh100-80gb", "batch", 1, 0, TopologyLevel::kNone, true, 106},
                  {"t7", "a", "1xh100-80gb", "batch", 1, 0, TopologyLevel::kNone, true, 107}},
      .pending = {{"inf", "a", "8xh100-80gb", "inference"}},
      .placed = {"inf"},
      .preempted = {"big", "s0"},
  });
}

// --- gangs --------------------------------------------------------------------------------

TEST(Gang, AllOrNothing) {
  // Three 8-GPU replicas fit next to b's job; four 7-GPU replicas do not fit next to a's own
  // 2-GPU job (only 3 nodes have 7 free): nothing is placed, not even 3 replicas.
  RunScenario({
      .nodes = {{"n0", H100x8()}, {"n1", H100x8()}, {"n2", H100x8()}, {"n3", H100x8()}},
      .tenants = {{"a", {{"h100-80gb", {24}}}}, {"b", {{"h100-80gb", {8}}}}},
      .running = {{"b0", "b", "8xh100-80gb", "inference"}},
      .pending = {{"g", "a", "8xh100-80gb", "training", 3}, {"h", "a", "1xh100-80gb"}},
      .placed = {"g"},
  });
  RunScenario({
      .nodes = {{"n0", H100x8()}, {"n1", H100x8()}, {"n2", H100x8()}, {"n3", H100x8()}},
      .tenants = {{"a", {{"h100-80gb", {32}}}}},
      .running = {{"a0", "a", "2xh100-80gb", "inference"}},
      .pending = {{"g", "a", "7xh100-80gb", "training", 4}},
      .placed = {},
      .waiting = {{"g", ReasonCode::kInsufficientCapacity}},
  });
}

TEST(Gang, WholeNodeReplicasSpreadOverNodes) {
  RunScenario({
      .nodes = {{"n0", H100x8()}, {"n1", H100x8()}, {"n2", H100x8()}},
      .tenants = {{"a", {{"h100-80gb", {24}}}}},
      .pending = {{"big", "a", "8xh100-80gb", "training", 3}, {"small", "a", "1xh100-80gb"}},
      .placed = {"big"},
      .placed_on = {{"big", {"n0", "n1", "n2"}}},
      .waiting = {{"small", ReasonCode::kNoLendableCapacity}},
  });
}

TEST(Gang, SmallReplicasShareANode) {
  // 4 replicas of 2 GPUs: FGD packs them onto one node rather than breaking two.
  RunScenario({
      .nodes = {{"n0", H100x8()}, {"n1", H100x8()}},
      .tenants = {{"a", {{"h100-80gb", {16}}}}},
      .pending = {{"g", "a", "2xh100-80gb", "training", 4}, {"whole", "a", "8xh100-80gb"}},
      .placed = {"g", "whole"},
      .placed_on = {{"g", {"n0", "n0", "n0", "n0"}}, {"whole", {"n1"}}},
  });
}

// --- MIG ------------------------------------------------------------------------------------

NodeTemplate MigNode(int mig_gpus, std::string layout = "") {
  return {.flavor = "h100-80gb", .gpus = mig_gpus, .mig_gpus = mig_gpus,
          .mig_layout = std::move(layout)};
}

TEST(Mig, ProfilesGoToExistingInstancesFirst) {
  // Two all-balanced GPUs: 3g.40gb instances at @4 on each; no reconfiguration needed.
  RunScenario({
      .nodes = {{"m0", MigNode(2)}},
      .tenants = {{"a", {{"h100-80gb", {2}}}}},
      .pending = {{"x", "a", "h100-80gb/3g.40gb"}, {"y", "a", "h100-80gb/3g.40gb"}},
      .placed = {"x", "y"},
      .reconfigurations = 0,
  });
}

TEST(Mig, IdleGpuIsRepartitionedWhenAProfileFitsNowhere) {
  // A 7g needs a whole GPU's slices: the idle all-balanced GPU becomes [7g@0].
  const Plan p = RunScenario({
      .nodes = {{"m0", MigNode(1)}},
      .tenants = {{"a", {{"h100-80gb", {1}}}}},
      .pending = {{"x", "a", "h100-80gb/7g.80gb"}},
      .placed = {"x"},
      .reconfigurations = 1,
  });
  ASSERT_EQ(p.reconfigurations.size(), 1u);
  EXPECT_EQ(p.reconfigurations[0].to.size(), 1);
}

TEST(Mig, BusyGpuIsNeverRepartitioned) {
  // Both GPUs hold a running instance; a 7g cannot be made on either.
  RunScenario({
      .nodes = {{"m0", MigNode(2)}},
      .tenants = {{"a", {{"h100-80gb", {2}}}}},
      .running = {{"s0", "a", "h100-80gb/3g.40gb", "inference"},
                  {"s1", "a", "h100-80gb/3g.40gb", "inference"}},
      .pending = {{"x", "a", "h100-80gb/7g.80gb"}},
      .placed = {},
      .waiting = {{"x", ReasonCode::kInsufficientCapacity}},
      .reconfigurations = 0,
  });
}

TEST(Mig, OneRepartitionServesTheSameProfileAgain) {
  // One idle GPU laid out as [7g]; three 2g requests: the GPU is re-partitioned once, into
  // 2g@0, 2g@2, 2g@4, and all three land on it.
  RunScenario({
      .nodes = {{"m0", MigNode(1, "7g.80gb@0")}},
      .tenants = {{"a", {{"h100-80gb", {1}}}}},
      .pending = {{"x", "a", "h100-80gb/2g.20gb"}, {"y", "a", "h100-80gb/2g.20gb"},
                  {"z", "a", "h100-80gb/2g.20gb"}},
      .placed = {"x", "y", "z"},
      .reconfigurations = 1,
  });
}

// --- sharing --------------------------------------------------------------------------------

TEST(Sharing, FractionsPackOnASharedGpu) {
  // Four quarter-GPU jobs fit one shared GPU (1000 milli, 80 GiB); a fifth waits.
  RunScenario({
      .nodes = {{"s0", {.flavor = "h100-80gb", .gpus = 1, .shared_gpus = 1}}},
      .tenants = {{"a", {{"h100-80gb", {1}}}}},
      .pending = {{"q0", "a", "h100-80gb/250m/20000"}, {"q1", "a", "h100-80gb/250m/20000"},
                  {"q2", "a", "h100-80gb/250m/20000"}, {"q3", "a", "h100-80gb/250m/20000"},
                  {"q4", "a", "h100-80gb/250m/20000"}},
      .placed = {"q0", "q1", "q2", "q3"},
      .waiting = {{"q4", ReasonCode::kNoLendableCapacity}},
  });
}

TEST(Sharing, TenantsWithoutConsentNeverShareAGpu) {
  // a and b each get their own shared GPU even though one GPU has room for both.
  const Plan p = RunScenario({
      .nodes = {{"s0", {.flavor = "h100-80gb", .gpus = 2, .shared_gpus = 2}}},
      .tenants = {{"a", {{"h100-80gb", {1}}}}, {"b", {{"h100-80gb", {1}}}}},
      .pending = {{"x", "a", "h100-80gb/250m/1000"}, {"y", "b", "h100-80gb/250m/1000"},
                  {"z", "b", "h100-80gb/250m/1000"}},
      .placed = {"x", "y", "z"},
  });
  ASSERT_EQ(p.placements.size(), 3u);
  EXPECT_NE(p.placements[0].placement[0].grants[0].gpu, p.placements[1].placement[0].grants[0].gpu);
}

TEST(Sharing, MemoryBoundLimitsPacking) {
  // 60 GiB + 30 GiB do not fit one 80 GiB GPU even though 0.2 + 0.2 < 1.
  RunScenario({
      .nodes = {{"s0", {.flavor = "h100-80gb", .gpus = 1, .shared_gpus = 1}}},
      .tenants = {{"a", {{"h100-80gb", {1}}}}},
      .pending = {{"x", "a", "h100-80gb/200m/61440"}, {"y", "a", "h100-80gb/200m/30720"}},
      .placed = {"x"},
      .waiting = {{"y", ReasonCode::kInsufficientCapacity}},
  });
}

// --- topology -------------------------------------------------------------------------------

TEST(Topology, GangLandsInOneNvlinkDomain) {
  // Domains d1 = {n0, n1}, d2 = {n2, n3}; n1 is busy, so 2 x 8 GPUs go to d2.
  RunScenario({
      .nodes = {{"n0", H100x8("d1")}, {"n1", H100x8("d1")}, {"n2", H100x8("d2")},
                {"n3", H100x8("d2")}},
      .tenants = {{"a", {{"h100-80gb", {32}}}}},
      .running = {{"busy", "a", "8xh100-80gb"}},
      .pending = {{"g", "a", "8xh100-80gb", "training", 2, 0, TopologyLevel::kNvlinkDomain}},
      .placed = {"g"},
      .placed_on = {{"g", {"n2", "n3"}}},
  });
}

TEST(Topology, RequiredDomainThatDoesNotExistWaitsWithAReason) {
  // Three free nodes in three blocks: 2 replicas required in one block cannot be placed.
  RunScenario({
      .nodes = {{"n0", H100x8("", "b0")}, {"n1", H100x8("", "b1")}, {"n2", H100x8("", "b2")}},
      .tenants = {{"a", {{"h100-80gb", {24}}}}},
      .pending = {{"g", "a", "8xh100-80gb", "training", 2, 0, TopologyLevel::kBlock}},
      .placed = {},
      .waiting = {{"g", ReasonCode::kTopology}},
  });
}

TEST(Topology, PreferredFallsBackToAnywhere) {
  RunScenario({
      .nodes = {{"n0", H100x8("", "b0")}, {"n1", H100x8("", "b1")}},
      .tenants = {{"a", {{"h100-80gb", {16}}}}},
      .pending = {{"g", "a", "8xh100-80gb", "training", 2, 0, TopologyLevel::kBlock, false}},
      .placed = {"g"},
  });
}

// --- backfill -------------------------------------------------------------------------------

// n0: a's 4-GPU inference job r runs until t=4200. n1: b's 8-GPU job started a minute ago
// (too young to preempt). a's 8-GPU gang is within a's guarantee (4 + 8 = 12) but fits nowhere.
Scenario BackfillScene() {
  return {
      .nodes = TwoH100Nodes(),
      .tenants = {{"a", {{"h100-80gb", {12}}}}, {"b", {{"h100-80gb", {4}}}}},
      .running = {{"r", "a", "4xh100-80gb", "inference", 1, 4200},
                  {"b0", "b", "8xh100-80gb", "training", 1, 0, TopologyLevel::kNone, true, 3540}},
      .pending = {{"gang", "a", "8xh100-80gb", "training", 1, 7200},
                  {"short", "a", "1xh100-80gb", "training", 1, 300},
                  {"long", "a", "1xh100-80gb", "training", 1, 10800}},
  };
}

// "short" backfills onto n0, "long" waits, and the gang (waiting for `gang_reason`) holds once.
void ExpectGangHolds(Scenario sc, ReasonCode gang_reason) {
  sc.placed = {"short"};
  sc.placed_on = {{"short", {"n0"}}};
  sc.waiting = {{"gang", gang_reason}, {"long", ReasonCode::kHeldForBackfill}};
  const Plan p = RunScenario(sc);
  EXPECT_EQ(p.stats.holds, 1);
}

TEST(Backfill, LargeGangHoldsCapacityAgainstLongSmallJobs) {
  // The gang holds n0's 4 free GPUs until r ends at 4200. "short" ends at 3900: it may use
  // one. "long" would end at 14400 and delay the gang: it waits.
  ExpectGangHolds(BackfillScene(), ReasonCode::kInsufficientCapacity);
}

TEST(Backfill, WithoutBackfillSmallJobsStarveTheGang) {
  Scenario sc = BackfillScene();
  sc.config.backfill.enabled = false;
  sc.placed = {"short", "long"};
  RunScenario(sc);
}

// The gang is two replicas of 4 GPUs. n1 never frees (b0 has no estimate), so both must go on
// n0 once r ends at 4200: the node takes two replicas, and its 4 free GPUs are held for them.
TEST(Backfill, AGangOfSeveralReplicasOnOneNodeHolds) {
  Scenario sc = BackfillScene();
  sc.pending[0] = {"gang", "a", "4xh100-80gb", "training", 2, 7200};
  ExpectGangHolds(sc, ReasonCode::kInsufficientCapacity);
}

// The same gang held to one node (topology: node) holds there too.
TEST(Backfill, AGangThatMustShareANodeHolds) {
  Scenario sc = BackfillScene();
  sc.pending[0] = {"gang", "a", "4xh100-80gb", "training", 2, 7200, TopologyLevel::kNode};
  ExpectGangHolds(sc, ReasonCode::kTopology);
}

// A MIG replica's hold keeps only its instance. r runs on 2g@0 until 4200 and the gang's 2g
// replica waits for it; "long" (ends at 14400) still gets a 1g instance beside it, which a
// whole-GPU hold would have kept from it.
TEST(Backfill, AMigHoldKeepsOnlyTheInstanceItWaitsFor) {
  RunScenario({
      .nodes = {{"m0", MigNode(1, "2g.20gb@0,1g.10gb@2,1g.10gb@3,3g.40gb@4")}},
      .tenants = {{"a", {{"h100-80gb", {1}}}}},
      .running = {{"r", "a", "h100-80gb/2g.20gb", "inference", 1, 4200}},
      .pending = {{"gang", "a", "h100-80gb/2g.20gb", "training", 1, 7200},
                  {"long", "a", "h100-80gb/1g.10gb", "training", 1, 10800}},
      .placed = {"long"},
      .waiting = {{"gang", ReasonCode::kInsufficientCapacity}},
      .reconfigurations = 0,
  });
}

// A fraction's hold keeps its room on the shared GPU. x (600m) ends at 4200; "big" (700m)
// needs that room then, so of the 400m free now only 300m may go to jobs that end later: l1
// (250m) runs, l2 (100m) would leave "big" 50m short and waits.
TEST(Backfill, AFractionHoldKeepsOnlyTheRoomItWaitsFor) {
  RunScenario({
      .nodes = {{"s0", {.flavor = "h100-80gb", .gpus = 2, .shared_gpus = 1}}},
      .tenants = {{"a", {{"h100-80gb", {2}}}}},
      .running = {{"x", "a", "h100-80gb/600m/40000", "inference", 1, 4200}},
      .pending = {{"big", "a", "h100-80gb/700m/40000", "training", 1, 7200},
                  {"l1", "a", "h100-80gb/250m/10000", "training", 1, 10800},
                  {"l2", "a", "h100-80gb/100m/10000", "training", 1, 10800},
                  {"short", "a", "h100-80gb/100m/10000", "training", 1, 300}},
      .placed = {"l1", "short"},
      .waiting = {{"big", ReasonCode::kInsufficientCapacity},
                  {"l2", ReasonCode::kHeldForBackfill}},
  });
}

// A hold keeps the CPU its job will need. x (1 GPU, 8 CPUs) ends at 4200; "big" needs GPU 1 and
// 12 of the node's 16 CPUs then, so jobs that end later may take only 4 of the 8 CPUs free now:
// l1 (3 CPUs) runs on the shared GPU, l2 (6 CPUs) would leave "big" short and waits.
TEST(Backfill, AHoldKeepsTheCpuItsJobWillNeed) {
  RunScenario({
      .nodes = {{"s0", {.flavor = "h100-80gb", .gpus = 2, .shared_gpus = 1, .cpu_milli = 16000}}},
      .tenants = {{"a", {{"h100-80gb", {2}}}}},
      .running = {{"x", "a", "1xh100-80gb+8cpu", "inference", 1, 4200}},
      .pending = {{"big", "a", "1xh100-80gb+12cpu", "training", 1, 7200},
                  {"l2", "a", "h100-80gb/250m/10000+6cpu", "training", 1, 10800},
                  {"l1", "a", "h100-80gb/250m/10000+3cpu", "training", 1, 10800}},
      .placed = {"l1"},
      .waiting = {{"big", ReasonCode::kInsufficientCapacity},
                  {"l2", ReasonCode::kHeldForBackfill}},
  });
}

// --- pools, labels, conditions --------------------------------------------------------------

TEST(Pools, DedicatedNodesServeOnlyTheirTenantAndOutsideQuota) {
  // n0 is dedicated to a; b may not use it even when idle. a's job goes there without
  // touching its (zero) shared quota.
  NodeTemplate dedicated = H100x8();
  dedicated.dedicated_to = "a";
  const Plan p = RunScenario({
      .nodes = {{"n0", dedicated}, {"n1", H100x8()}},
      .tenants = {{"a", {{"h100-80gb", {0, 0}}}}, {"b", {{"h100-80gb", {8}}}}},
      .pending = {{"x", "a", "8xh100-80gb"}, {"y", "b", "8xh100-80gb"},
                  {"z", "b", "1xh100-80gb"}},
      .placed = {"x", "y"},
      .placed_on = {{"x", {"n0"}}, {"y", {"n1"}}},
      .waiting = {{"z", ReasonCode::kNoLendableCapacity}},
  });
  for (const PlaceDecision& d : p.placements) {
    EXPECT_EQ(d.kind, d.placement[0].node == NodeId(0) ? AdmissionKind::kDedicated
                                                       : AdmissionKind::kGuaranteed);
  }
}

TEST(Pools, TenantLabelsSelectNodes) {
  NodeTemplate cuda12 = H100x8();
  cuda12.labels = {"cuda=12.4"};
  RunScenario({
      .nodes = {{"old", H100x8()}, {"new", cuda12}},
      .tenants = {{"a", {{"h100-80gb", {16}}}, 1000, false, {"cuda=12.4"}}},
      .pending = {{"x", "a", "8xh100-80gb"}, {"y", "a", "8xh100-80gb"}},
      .placed = {"x"},
      .placed_on = {{"x", {"new"}}},
      .waiting = {{"y", ReasonCode::kInsufficientCapacity}},
  });
}

TEST(Pools, AJobLargerThanAnyNodeIsToldSo) {
  RunScenario({
      .nodes = {{"n0", H100x8()}, {"m0", MigNode(2)}},
      .tenants = {{"a", {{"h100-80gb", {32}}}}},
      .pending = {{"x", "a", "16xh100-80gb"}, {"y", "a", "h100-80gb/100m/100"},
                  {"z", "a", "4xh100-80gb", "training", 4, 0, TopologyLevel::kNode}},
      .placed = {},
      .waiting = {{"x", ReasonCode::kNeverFits}, {"y", ReasonCode::kNeverFits},
                  {"z", ReasonCode::kNeverFits}},
  });
}

TEST(Pools, NoEligibleNodesSaysSo) {
  RunScenario({
      .nodes = {{"n0", H100x8()}},
      .tenants = {{"a", {{"a100-80gb", {8}}}}},
      .pending = {{"x", "a", "1xa100-80gb"}},
      .placed = {},
      .waiting = {{"x", ReasonCode::kNoEligibleNodes}},
  });
}

}  // namespace
}  // namespace gpupool::testing
